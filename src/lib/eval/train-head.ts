/**
 * `mod head train`: one logistic regression per label (one-vs-rest) on the L2-normalised image embeddings,
 * written in the head file format (docs/head-format.md).
 *
 * Each label is trained with class-balanced weights (its images and the rest weigh the same in total), an
 * L2 penalty on the weights, and full-batch Adam. Training stops when the held-out loss has not improved for
 * `patience` epochs (or after maxEpochs), and the weights with the lowest held-out loss are kept. The
 * figures reported are measured on the held-out images at the label's threshold (0.5).
 */
import {ModError} from '../errors.js'
import {roundScore, sigmoid} from '../scoring/calibrate.js'
import {l2Normalised, linearLogit} from '../scoring/vector.js'
import {balancedWeights, isHeldOut} from './fit.js'
import {labelMetrics, type LabelMetrics} from './metrics.js'

export interface EmbeddingSample {
  sha256: string
  truth: readonly string[]
  embedding: Float32Array
}

export interface TrainOptions {
  holdout: number
  seed: number
  /** L2 penalty on the weights (times the mean weight per image). */
  l2: number
  maxEpochs: number
  patience: number
  learningRate: number
}

export const DEFAULT_TRAIN_OPTIONS: TrainOptions = {holdout: 0.2, seed: 1, l2: 1e-4, maxEpochs: 2000, patience: 50, learningRate: 0.05}
export const HEAD_THRESHOLD = 0.5

export interface TrainedLabel {
  name: string
  weights: Float64Array
  bias: number
  epochs: number
  train: {positives: number; negatives: number}
  heldout: LabelMetrics
}

export interface TrainedHead {
  train_images: number
  heldout_images: number
  labels: TrainedLabel[]
}

/** Class-balanced mean log loss (without the penalty). */
function loss(xs: Float64Array[], y: boolean[], w: Float64Array, b: number): number {
  const cw = balancedWeights(y)
  let total = 0
  xs.forEach((x, i) => {
    const z = linearLogit(w, b, x)
    // log(1 + exp(-z)) for a positive, log(1 + exp(z)) for a negative, without overflow.
    const m = y[i] ? -z : z
    total += (y[i] ? cw.pos : cw.neg) * (Math.max(m, 0) + Math.log1p(Math.exp(-Math.abs(m))))
  })
  return total / xs.length
}

function trainOne(
  train: {x: Float64Array[]; y: boolean[]},
  test: {x: Float64Array[]; y: boolean[]},
  o: TrainOptions,
): {w: Float64Array; b: number; epochs: number} {
  const d = train.x[0].length
  const n = train.x.length
  const cw = balancedWeights(train.y)
  const canStopEarly = test.y.includes(true) && test.y.includes(false)
  const w = new Float64Array(d)
  let b = 0
  const m = new Float64Array(d + 1)
  const v = new Float64Array(d + 1)
  const g = new Float64Array(d + 1)
  const beta1 = 0.9
  const beta2 = 0.999
  let best = {w: Float64Array.from(w), b, loss: Infinity, epoch: 0}
  let epoch = 0
  for (epoch = 1; epoch <= o.maxEpochs; epoch++) {
    g.fill(0)
    for (let i = 0; i < n; i++) {
      const x = train.x[i]
      const r = (train.y[i] ? cw.pos : cw.neg) * (sigmoid(linearLogit(w, b, x)) - (train.y[i] ? 1 : 0))
      for (let k = 0; k < d; k++) g[k] += r * x[k]
      g[d] += r
    }
    for (let k = 0; k < d; k++) g[k] = g[k] / n + o.l2 * w[k]
    g[d] /= n
    const c1 = 1 - beta1 ** epoch
    const c2 = 1 - beta2 ** epoch
    for (let k = 0; k <= d; k++) {
      m[k] = beta1 * m[k] + (1 - beta1) * g[k]
      v[k] = beta2 * v[k] + (1 - beta2) * g[k] * g[k]
      const step = (o.learningRate * (m[k] / c1)) / (Math.sqrt(v[k] / c2) + 1e-8)
      if (k < d) w[k] -= step
      else b -= step
    }
    if (!canStopEarly) continue
    const l = loss(test.x, test.y, w, b)
    if (l < best.loss - 1e-7) best = {w: Float64Array.from(w), b, loss: l, epoch}
    else if (epoch - best.epoch >= o.patience) break
  }
  return canStopEarly ? {w: best.w, b: best.b, epochs: best.epoch} : {w, b, epochs: Math.min(epoch, o.maxEpochs)}
}

export function trainHead(samples: readonly EmbeddingSample[], labels: readonly string[], o: TrainOptions): TrainedHead {
  const heldOut = samples.map((s) => isHeldOut(s.sha256, o.seed, o.holdout))
  const xs = samples.map((s) => l2Normalised(s.embedding))
  const trainIdx = samples.map((_, i) => i).filter((i) => !heldOut[i])
  const testIdx = samples.map((_, i) => i).filter((i) => heldOut[i])
  if (trainIdx.length === 0 || testIdx.length === 0) {
    throw new ModError('invalid_config', `the split left ${trainIdx.length} training and ${testIdx.length} held-out images: use more images or another --holdout`)
  }
  const trained = labels.map((name) => {
    const y = samples.map((s) => s.truth.includes(name))
    const part = (idx: number[]) => ({x: idx.map((i) => xs[i]), y: idx.map((i) => y[i])})
    const train = part(trainIdx)
    const positives = train.y.filter(Boolean).length
    if (positives === 0 || positives === train.y.length) {
      throw new ModError('invalid_config', `label ${name}: the training part has ${positives === 0 ? 'none' : 'only'} of its images; add images or change --seed/--holdout`)
    }
    const {w, b, epochs} = trainOne(train, part(testIdx), o)
    const heldout = labelMetrics(
      testIdx.map((i) => ({truth: samples[i].truth, scores: [roundScore(sigmoid(linearLogit(w, b, xs[i])))]})),
      {name, threshold: HEAD_THRESHOLD},
      0,
    )
    return {name, weights: w, bias: b, epochs, train: {positives, negatives: train.y.length - positives}, heldout}
  })
  return {train_images: trainIdx.length, heldout_images: testIdx.length, labels: trained}
}

const round6 = (x: number) => Number(x.toPrecision(6))

/** The head file's JSON (docs/head-format.md), each weight list on one line. */
export function headFileJson(head: TrainedHead, model: {id: string; embeddingSize: number}, description: string): string {
  const text = JSON.stringify(
    {
      format: 'mod-head',
      version: 1,
      model_id: model.id,
      embedding_size: model.embeddingSize,
      activation: 'sigmoid',
      description,
      labels: head.labels.map((l) => ({
        name: l.name,
        parent: null,
        threshold: HEAD_THRESHOLD,
        weights: Array.from(l.weights, round6),
        bias: round6(l.bias),
      })),
    },
    null,
    2,
  )
  return `${text.replace(/\[\s+([-\d.e+,\s]*?)\s+\]/g, (_, numbers: string) => `[${numbers.replace(/\s+/g, ' ')}]`)}\n`
}
