/**
 * `mod calibrate`: per policy category, Platt scaling of its raw margin and a threshold for a target, both
 * fitted on the training part of the dataset; the figures reported are measured on the held-out part.
 * The result is written into the policy YAML (comments and other settings kept) with the figures as comments.
 */
import {isAlias, isMap, isScalar, parseDocument, visit, type Document, type Node, type Scalar, type YAMLMap} from 'yaml'

import {ModError} from '../errors.js'
import type {Calibration} from '../policy/types.js'
import {calibrate, roundScore} from '../scoring/calibrate.js'
import type {LabelInfo} from './features.js'
import {fitPlatt, isHeldOut, thresholdForMaxFpr, thresholdForMinRecall} from './fit.js'
import {computeMetrics, labelMetrics, type LabelMetrics, type ScoredSample} from './metrics.js'
import {plural} from '../plural.js'

export type CalibrationTarget = {maxFpr: number} | {minRecall: number}

export interface RawSample {
  sha256: string
  truth: readonly string[]
  /** Raw margins, one per category in the order given to calibrateCategories. */
  raw: ArrayLike<number>
  /**
   * Per category, how its score is made from the calibrated margin: rest + share x it (the weighted mean with the
   * other signals that feed it, such as the NSFW specialist for nudity); absent: share 1, rest 0.
   */
  share?: ArrayLike<number>
  rest?: ArrayLike<number>
}

/** A category's score as scan gives it, its margin calibrated with `calibration`. */
function scoreOf(s: RawSample, i: number, calibration: Calibration): number {
  return roundScore((s.rest?.[i] ?? 0) + (s.share?.[i] ?? 1) * calibrate(s.raw[i], calibration))
}

export interface CategoryCalibration {
  name: string
  /** False when the category keeps its calibration and threshold (see note). */
  fitted: boolean
  note?: string
  calibration: Calibration
  threshold: number
  train: {positives: number; safe: number}
  /** Held-out figures with the previous calibration and threshold, and with the fitted ones. */
  before: LabelMetrics
  after: LabelMetrics
}

export interface CalibrationReport {
  target: CalibrationTarget
  holdout: number
  seed: number
  train_images: number
  heldout_images: number
  categories: CategoryCalibration[]
  /** Held-out headline figures over all categories, before and after. */
  before: {average_recall: number | null; safe_flagged: number | null}
  after: {average_recall: number | null; safe_flagged: number | null}
}

export interface CalibrateOptions {
  target: CalibrationTarget
  holdout: number
  seed: number
}

const round6 = (x: number) => Number(x.toPrecision(6))

export function calibrateCategories(samples: readonly RawSample[], categories: readonly LabelInfo[], o: CalibrateOptions): CalibrationReport {
  const heldOut = samples.map((s) => isHeldOut(s.sha256, o.seed, o.holdout))
  const train = samples.filter((_, i) => !heldOut[i])
  const test = samples.filter((_, i) => heldOut[i])
  if (train.length === 0 || test.length === 0) {
    throw new ModError('invalid_config', `the split left ${train.length} training and ${test.length} held-out images: use more images or another --holdout`)
  }
  const scoredWith = (set: readonly RawSample[], cals: Calibration[]): ScoredSample[] =>
    set.map((s) => ({truth: s.truth, scores: cals.map((c, i) => scoreOf(s, i, c))}))

  const results: CategoryCalibration[] = categories.map((cat, i) => {
    const current = cat.calibration as Calibration
    const has = (s: RawSample) => s.truth.includes(cat.name)
    const positives = train.filter(has)
    const safe = train.filter((s) => s.truth.length === 0)
    const measure = (cal: Calibration, threshold: number) =>
      labelMetrics(test.map((s) => ({truth: s.truth, scores: [scoreOf(s, i, cal)]})), {name: cat.name, threshold}, 0)
    const keep = (note: string): CategoryCalibration => {
      const m = measure(current, cat.threshold)
      return {name: cat.name, fitted: false, note, calibration: current, threshold: cat.threshold, train: {positives: positives.length, safe: safe.length}, before: m, after: m}
    }
    if (positives.length === 0) return keep('no training images with this label: unchanged')
    if (safe.length === 0) return keep('no safe training images: unchanged')
    const fitted = fitPlatt(train.map((s) => s.raw[i]), train.map(has))
    if (fitted === undefined) return keep('its raw score does not rank its images above the others (check its prompts): unchanged')
    const calibration = {scale: round6(fitted.scale), bias: round6(fitted.bias)}
    const score = (s: RawSample) => scoreOf(s, i, calibration)
    const threshold =
      'maxFpr' in o.target
        ? thresholdForMaxFpr(positives.map(score), safe.map(score), o.target.maxFpr)
        : thresholdForMinRecall(positives.map(score), train.filter((s) => !has(s)).map(score), o.target.minRecall)
    return {
      name: cat.name,
      fitted: true,
      calibration,
      threshold,
      train: {positives: positives.length, safe: safe.length},
      before: measure(current, cat.threshold),
      after: measure(calibration, threshold),
    }
  })

  const headline = (cals: Calibration[], thresholds: number[]) => {
    const m = computeMetrics(
      scoredWith(test, cals),
      categories.map((c, i) => ({name: c.name, threshold: thresholds[i]})),
    )
    return {average_recall: m.average_recall, safe_flagged: m.safe_flagged}
  }
  return {
    target: o.target,
    holdout: o.holdout,
    seed: o.seed,
    train_images: train.length,
    heldout_images: test.length,
    categories: results,
    before: headline(categories.map((c) => c.calibration as Calibration), categories.map((c) => c.threshold)),
    after: headline(results.map((r) => r.calibration), results.map((r) => r.threshold)),
  }
}

const pct = (x: number | null) => (x === null ? 'n/a' : `${(x * 100).toFixed(1)}%`)

/** The comment lines above the policy: what was fitted, on what, and the held-out figures. */
export function calibrationComments(r: CalibrationReport, dataset: string): string[] {
  const target = 'maxFpr' in r.target ? `at most ${pct(r.target.maxFpr)} of safe images flagged per category` : `recall at least ${pct(r.target.minRecall)} per category`
  return [
    ` Calibrated by mod calibrate on ${dataset}: ${target}.`,
    ` Fitted on ${plural(r.train_images, 'image')}; the figures below are measured on ${r.heldout_images} held-out ${r.heldout_images === 1 ? 'image' : 'images'}`,
    ` (holdout ${r.holdout}, seed ${r.seed}).`,
    ` Held-out average recall: ${pct(r.before.average_recall)} before, ${pct(r.after.average_recall)} after;`,
    ` safe images flagged: ${pct(r.before.safe_flagged)} before, ${pct(r.after.safe_flagged)} after.`,
  ]
}

function categoryComment(c: CategoryCalibration): string {
  const m = c.after
  const figures = `held-out recall ${pct(m.recall)}, precision ${pct(m.precision)}, safe flagged ${pct(m.safe_fpr)} (${plural(m.positives, 'image')} with the label)`
  return c.fitted ? ` ${figures}` : ` ${c.note}; ${figures}`
}

/**
 * Each category written as an alias of another node (`reddish: *r`) becomes a copy of it, so that setting one
 * category's values neither changes another that shares its node nor leaves an alias that loses its prompts.
 */
function copyAliasedCategories(doc: Document, categories: YAMLMap): void {
  for (const pair of categories.items) {
    if (!isAlias(pair.value)) continue
    const copy = pair.value.resolve(doc)?.clone() as Scalar | YAMLMap | undefined
    if (copy) copy.anchor = undefined
    pair.value = copy ?? null
  }
}

/** A copy of `node` with no anchor in it, to stand where an alias of it was. */
function unanchoredCopy(node: Node): Node {
  const copy = node.clone() as Node
  visit(copy, {
    Node(_, n) {
      n.anchor = undefined
    },
  })
  return copy
}

/**
 * The aliases of anchors inside the values about to be set (`threshold: &strict 0.3` that another category reads
 * as `threshold: *strict`, a shared `calibration:` mapping) become copies of those values as they are: a scalar is
 * set in place, so the other category would silently get the fitted value, and a replaced mapping would take its
 * anchor away from the alias.
 */
function copyAliasesOf(doc: Document, replaced: unknown[]): void {
  const anchored = new Map<string, Node>()
  for (const node of replaced) {
    if (node === undefined || node === null) continue
    visit(node as Node, {
      Node(_, n) {
        if (n.anchor) anchored.set(n.anchor, n)
      },
    })
  }
  if (anchored.size === 0) return
  visit(doc, {
    Alias(_, alias) {
      const source = anchored.get(alias.source)
      return source ? unanchoredCopy(source) : undefined
    },
  })
}

/**
 * The policy text with each fitted category's calibration and threshold set. `original` is the policy file's
 * text (its comments and other settings are kept), or undefined to start from an empty policy; JSON stays JSON.
 */
export function writeCalibratedPolicy(original: string | undefined, r: CalibrationReport, header: string[]): string {
  const doc = parseDocument(original ?? '')
  if (!isMap(doc.contents)) doc.contents = doc.createNode({}) as unknown as typeof doc.contents
  if (!isMap(doc.get('categories', true))) doc.set('categories', doc.createNode({}))
  const categories = doc.get('categories', true) as unknown as YAMLMap
  copyAliasedCategories(doc, categories)
  for (const c of r.categories) {
    if (c.fitted) {
      if (!isMap(categories.get(c.name, true))) categories.set(c.name, doc.createNode({}))
      const entry = categories.get(c.name, true) as unknown as YAMLMap
      copyAliasesOf(doc, [entry.get('threshold', true), entry.get('calibration', true)])
      entry.set('threshold', c.threshold)
      entry.set('calibration', doc.createNode({scale: c.calibration.scale, bias: c.calibration.bias}, {flow: true}))
    }
    // Categories the dataset has no images of get no comment: there is nothing to say about them.
    const pair = categories.items.find((p) => isScalar(p.key) && p.key.value === c.name)
    if (pair && c.train.positives + c.after.positives > 0) (pair.key as Scalar).commentBefore = categoryComment(c)
  }
  // A JSON policy (`config.json`) stays JSON, which has no comments: the figures are on stderr.
  if (original !== undefined && isJson(original)) return `${JSON.stringify(doc.toJS(), null, 2)}\n`
  doc.commentBefore = header.join('\n')
  return doc.toString({lineWidth: 0})
}

function isJson(text: string): boolean {
  try {
    JSON.parse(text)
    return true
  } catch {
    return false
  }
}
