/**
 * Where eval, calibrate and head train get their numbers: image features (FeatureSource) and per-label raw
 * scores and final scores (LabelScorer). This adapter is built from the engine's own steps (decode, trim,
 * preprocess, the CLIP runner, the prompt cache, the zero-shot signal, the NSFW specialist with its second
 * look, the weighted combination, applyHead) so that a score here is the score `mod scan` gives.
 *
 * Animated images: only the first frame is used (scan keeps each label's maximum over up to 8 frames, so
 * for an animation whose later frames differ, the two can disagree).
 */
import type {Limits} from '../config/settings.js'
import {ModError} from '../errors.js'
import {prepareImage} from '../image/prepare.js'
import {lazy} from '../lazy.js'
import {openClip, type ClipModel} from '../model/clip.js'
import {loadManifest} from '../model/manifest.js'
import {classifyViews, type NsfwRunner} from '../model/nsfw-runner.js'
import type {Manifest, Precision} from '../model/manifest-types.js'
import {embedPrompts} from '../model/prompt-cache.js'
import {createBatcher} from '../pipeline/batcher.js'
import type {Calibration, Policy} from '../policy/types.js'
import {calibrate, roundScore} from '../scoring/calibrate.js'
import {applyHead, checkHeadFits, checkHeadParents, type Head} from '../scoring/head.js'
import {combineSignals} from '../scoring/combine.js'
import {nsfwCategoryScores} from '../scoring/nsfw-rule.js'
import {finishLabel} from '../scoring/result.js'
import {cosine, policyPrompts, rawScore, zeroShotScores} from '../scoring/score.js'
import type {Origin} from '../types.js'

/** What is known of one image: its CLIP embedding (L2-normalised) and the specialist's class probabilities per view (`nsfw`). */
export interface Features {
  embedding: Float32Array
  signals: Record<string, Float32Array>
}

export interface FeatureSource {
  /** Names the model and every setting that changes the features: the feature cache is kept per key. */
  readonly key: string
  readonly modelId: string
  readonly embeddingSize: number
  /** Decodes and embeds one image; throws unreadable_image / unsupported_media / payload_too_large for a bad file. */
  extract(data: Buffer): Promise<Features>
  close(): Promise<void>
}

export interface LabelInfo {
  name: string
  threshold: number
  parent: string | null
  origin: Origin
  /** Policy categories only: how the raw margin becomes the score. */
  calibration?: Calibration
}

export interface LabelScorer {
  readonly labels: LabelInfo[]
  /** Per label, in `labels` order: a category's logit margin, or a head-only label's logit. */
  raw(features: Features): Float64Array
  /** Per label, in `labels` order: the score scan reports (calibrated, blended with the head, rounded). */
  score(features: Features): Float64Array
}

export interface ModelOptions {
  modelDir: string
  preset?: string
  precision: Precision
  threads?: number
  cacheDir: string
  limits: Pick<Limits, 'maxBytes' | 'maxPixels'>
  trimBorders: boolean
  /** Opens the embedded NSFW specialist when the policy has it on; its probabilities join the features as `nsfw`. */
  openNsfw?: () => Promise<NsfwRunner>
}

/** A FeatureSource plus what the label scorer needs from the same model (its text encoder). */
export interface ClipFeatureSource extends FeatureSource {
  readonly manifest: Manifest
  /** Images embedded by the image encoder so far (0 when every image came from the cache). */
  readonly imagesEmbedded: () => number
  promptEmbeddings(texts: string[]): Promise<Map<string, Float32Array>>
}

/** Images per image-encoder run, as the engine batches them. */
const BATCH = 8

/**
 * Opens a model folder's manifest; the CLIP sessions open only when an image or a prompt must be embedded,
 * so a run whose features and prompts are all cached never loads the encoders.
 */
export async function openClipFeatures(o: ModelOptions): Promise<ClipFeatureSource> {
  const manifest = await loadManifest(o.modelDir, o.preset, o.precision)
  const modelKey = o.precision === 'fp32' ? manifest.id : `${manifest.id}-${o.precision}`
  const clipModel = lazy(() => openClip(o.modelDir, manifest, {threads: o.threads, cacheDir: o.cacheDir}))
  const clip = (): Promise<ClipModel> => clipModel.get()
  const nsfw = o.openNsfw ? lazy(o.openNsfw) : undefined
  let runs = 0
  // Concurrent extract() calls share encoder runs, as the engine's images do.
  const embedder = createBatcher(async (tensors: Float32Array[]) => {
    const model = await clip()
    const size = tensors[0].length
    const batch = new Float32Array(size * tensors.length)
    tensors.forEach((t, j) => batch.set(t, j * size))
    const out = await model.embedImages(batch, tensors.length)
    runs += tensors.length
    return out
  }, BATCH)
  const embed = (tensor: Float32Array) => embedder.submit(tensor)
  return {
    manifest,
    // '+nsfw-views': five probabilities per view looked at (features cached as one mirror-averaged five read wrong).
    key: `${modelKey}${o.trimBorders ? '' : '-untrimmed'}${nsfw ? '+nsfw-views' : ''}`,
    modelId: manifest.id,
    embeddingSize: manifest.embedding_size,
    imagesEmbedded: () => runs,
    async extract(data): Promise<Features> {
      const {frames, tensors} = await prepareImage(data, {limits: o.limits, preprocess: manifest.preprocess, trimBorders: o.trimBorders})
      const embedding = await embed(tensors[0])
      if (!nsfw) return {embedding, signals: {}}
      const runner = await nsfw.get()
      const [probabilities] = await classifyViews(runner, [runner.views(frames[0])])
      return {embedding, signals: {nsfw: probabilities}}
    },
    promptEmbeddings: (texts) =>
      embedPrompts(texts, {
        cacheDir: o.cacheDir,
        // The same cache as the engine's: reduced-precision text encoders get their own.
        modelId: modelKey,
        embed: async (missing) => (await clip()).embedTexts(missing),
      }),
    async close() {
      const p = clipModel.current()
      clipModel.reset()
      if (p) await (await p.catch(() => undefined))?.close()
      await (await nsfw?.current()?.catch(() => undefined))?.close()
    },
  }
}

/** Scores labels as the engine does: the policy's categories, then the head (blended or added). */
export async function createLabelScorer(source: ClipFeatureSource, policy: Policy, head?: Head): Promise<LabelScorer> {
  if (head) {
    checkHeadFits(head, source.modelId, source.embeddingSize)
    checkHeadParents(head, policy)
  }
  const prompts = await source.promptEmbeddings(policyPrompts(policy))
  const names = new Set(policy.categories.map((c) => c.name))
  const headOnly = (head?.labels ?? []).filter((l) => !names.has(l.name))
  const labels: LabelInfo[] = [
    ...policy.categories.map((c) => ({name: c.name, threshold: c.threshold, parent: c.parent, origin: c.origin, calibration: c.calibration})),
    ...headOnly.map((l) => ({name: l.name, threshold: l.threshold, parent: l.parent, origin: 'head' as const})),
  ]
  const index = new Map(labels.map((l, i) => [l.name, i]))
  const embedding = (text: string): Float32Array => {
    const e = prompts.get(text)
    if (e === undefined) throw new ModError('internal', `no embedding for the prompt "${text}"`)
    return e
  }
  return {
    labels,
    raw(f) {
      const out = new Float64Array(labels.length)
      const sim = (text: string) => cosine(f.embedding, embedding(text))
      policy.categories.forEach((c, i) => {
        const references = new Set([...c.negatives, ...policy.neutral])
        out[i] = rawScore(c.prompts.map(sim), [...references].map(sim))
      })
      const x = normalised(f.embedding)
      headOnly.forEach((l, j) => {
        let z = l.bias
        for (let k = 0; k < x.length; k++) z += l.weights[k] * x[k]
        out[policy.categories.length + j] = z
      })
      return out
    },
    score(f) {
      const nsfwProbabilities = f.signals.nsfw
      const categories = combineSignals(policy, {
        clip: zeroShotScores(f.embedding, policy, prompts),
        ...(nsfwProbabilities ? {nsfw: new Map(Object.entries(nsfwCategoryScores(nsfwProbabilities)))} : {}),
      })
      const all = head ? applyHead(head, f.embedding, categories) : categories
      const out = new Float64Array(labels.length)
      for (const label of all) out[index.get(label.name) as number] = finishLabel(label).score
      return out
    },
  }
}

function normalised(v: Float32Array): Float64Array {
  let sum = 0
  for (const x of v) sum += x * x
  const n = Math.sqrt(sum)
  return Float64Array.from(v, (x) => (n === 0 ? 0 : x / n))
}

/** A category's score from its raw margin under another calibration, rounded as results are. */
export function calibratedScore(raw: number, calibration: Calibration): number {
  return roundScore(calibrate(raw, calibration))
}
