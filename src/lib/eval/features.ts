/**
 * Where eval, calibrate and head train get their numbers: the inference core scan uses (signals/core.ts),
 * opened with the same signals from the same setup, so a score here is the score `mod scan` gives. Per image the
 * core's outputs are kept as features (cached per model and file content, feature-cache.ts); labels are scored
 * from them. The signals whose output depends on the policy's rules (text, hash lists) keep no features: they run
 * on every image of every run.
 *
 * Animated images: every frame scan scores is kept, and eval scores the image as scan does (each label's maximum
 * over its frames); calibrate fits the first frame's margins and head train the first frame's embedding.
 */
import type {Limits} from '../config/settings.js'
import {decodeImage} from '../image/decode.js'
import type {Int8Weights, Precision} from '../model/manifest-types.js'
import type {Policy, PresetName} from '../policy/types.js'
import {finishLabel, mergeFrameLabels} from '../scoring/result.js'
import {activeSignals, openCore, type Features, type LabelInfo} from '../signals/core.js'
import {SIGNALS} from '../signals/registry.js'
import type {Signal, SignalSetup} from '../signals/signal.js'

export type {Features, FrameFeatures, LabelInfo} from '../signals/core.js'

export interface FeatureSource {
  /** Names the models and every setting that changes the features: the feature cache is kept per key. */
  readonly key: string
  /** Size of the image embedding in the features (0 without a CLIP model). */
  readonly embeddingSize: number
  /** Whether some open signal keeps no features, so that a cached image must still go through extract. */
  readonly hasLive: boolean
  /**
   * Decodes and runs one image; throws unreadable_image / unsupported_media / payload_too_large for a bad file.
   * Given its cached features, runs only the signals that keep none and adds their outputs.
   */
  extract(data: Buffer, cached?: Features): Promise<Features>
}

export interface ModelOptions {
  modelDir: string
  preset?: PresetName
  precision: Precision
  int8Weights?: Int8Weights
  threads?: number
  cacheDir: string
  limits: Pick<Limits, 'maxBytes' | 'maxPixels'>
}

export interface ScoringOptions {
  policy: Policy
  headPath?: string
  /** The CLIP model must be there (calibrate fits its margins, head train reads its embeddings). */
  requireClip?: boolean
  /** The signals to choose from; default: the registry's. */
  signals?: readonly Signal[]
}

/** Features per image, and the labels scored from them as scan scores them. */
export interface DatasetScoring extends FeatureSource {
  /** The CLIP model the features come from, or `no CLIP model (…)` naming the models that score (for reports). */
  readonly modelId: string
  /** Every label scored: the policy's categories that can be evaluated, then a head's own labels. */
  readonly labels: readonly LabelInfo[]
  /** Categories of the policy that no installed signal scores. */
  readonly notEvaluated: readonly string[]
  /** Images run through the models so far (0 when every image came from the cache). */
  imagesEmbedded(): number
  /** Per label, in `labels` order: a category's logit margin, or a head-only label's logit. */
  raw(features: Features): Float64Array
  /** Per label, in `labels` order: how the score is made from the calibrated margin (SignalCore.mix), on the first frame. */
  mix(features: Features): {share: Float64Array; rest: Float64Array}
  /** Per label, in `labels` order: the score scan reports (calibrated, blended with a head, rounded). */
  score(features: Features): Float64Array
  /** Releases the models. */
  dispose(): Promise<void>
  [Symbol.asyncDispose](): Promise<void>
}

/**
 * Opens the signals the policy runs; their models load only when an image must be run (or a prompt embedded),
 * so a run whose features and prompts are all cached never loads the encoders.
 */
export async function openDatasetScoring(model: ModelOptions, o: ScoringOptions): Promise<DatasetScoring> {
  const registry = o.signals ?? SIGNALS
  const setup: SignalSetup = {
    preset: model.preset,
    modelDir: model.modelDir,
    cacheDir: model.cacheDir,
    precision: model.precision,
    int8Weights: model.int8Weights,
    threads: model.threads,
    policy: o.policy,
    headPath: o.headPath,
    requireClip: o.requireClip,
  }
  const choice = activeSignals(registry, setup)
  // Concurrent extract() calls share model runs, as the engine's images do.
  const core = await openCore(registry, setup, choice, {batchSize: 8})
  // The CLIP model's id when it scores; without it, what does (a preset's id would name a model that is not installed).
  const clip = registry.find((s) => s.modelId)
  const modelId =
    clip !== undefined && core.open.has(clip.name)
      ? ((await clip.modelId?.(setup).catch(() => undefined)) ?? core.key)
      : `no CLIP model (${registry.filter((s) => s.kind === 'model' && core.open.has(s.name)).map((s) => s.title).join(', ')})`
  const index = new Map(core.labels.map((l, i) => [l.name, i]))
  let embedded = 0
  return {
    key: core.key,
    modelId,
    embeddingSize: core.embeddingSize,
    labels: core.labels,
    notEvaluated: core.notEvaluated,
    imagesEmbedded: () => embedded,
    hasLive: core.live.size > 0,
    async extract(data, cached) {
      const frames = await decodeImage(data, model.limits, undefined, core.frameSide)
      const whole = cached === undefined || 1 + (cached.later?.length ?? 0) !== frames.length
      const outputs = await core.infer(await core.prepare(frames, 'image', undefined, whole ? undefined : core.live))
      if (!whole) return {...(cached as Features), live: core.toFeatures(outputs).live}
      embedded++
      const leftOut = frames.some((frame) => frame.picturesLeftOut) ? {picturesLeftOut: true as const} : {}
      return {...core.toFeatures(outputs), ...leftOut}
    },
    raw: (features) => core.raw(core.fromFeatures(features)[0]),
    mix: (features) => core.mix(core.fromFeatures(features)[0]),
    score(features) {
      const out = new Float64Array(core.labels.length)
      const labels = mergeFrameLabels(core.fromFeatures(features).map((o) => core.score(o)))
      for (const label of labels) {
        const i = index.get(label.name)
        if (i !== undefined) out[i] = finishLabel(label).score
      }
      return out
    },
    dispose: core.dispose,
    [Symbol.asyncDispose]: core.dispose,
  }
}
