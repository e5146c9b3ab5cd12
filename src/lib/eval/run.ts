/**
 * The three dataset runs (eval, calibrate, head train) from a dataset folder and the model settings: open
 * the dataset (its layout is checked before any model loads), stream its features through the cache, and
 * hand the numbers to metrics, calibration or training.
 */
import type {Policy} from '../policy/types.js'
import type {Head} from '../signals/head/head.js'
import {loadHead} from '../signals/head/head.js'
import {calibrateCategories, type CalibrateOptions, type CalibrationReport, type RawSample} from './calibrate-policy.js'
import {collectFeatures, isSampleError, type SampleError} from './collect.js'
import {invalidDataset, LABELS_FILE, openDataset, SAFE_FOLDER, type Dataset, type DatasetOptions} from './dataset.js'
import {openFeatureCache, type FeatureCache} from './feature-cache.js'
import {openDatasetScoring, type DatasetScoring, type LabelInfo, type ModelOptions, type ScoringOptions} from './features.js'
import {computeMetrics, histogram, prCurve, type CurvePoint, type EvalMetrics, type Histogram, type ScoredSample} from './metrics.js'
import {trainHead, type EmbeddingSample, type TrainedHead, type TrainOptions} from './train-head.js'

export interface RunOptions {
  dataset: string
  model: ModelOptions
  /** The policy in force: its signals run, its trim setting applies. */
  policy: Policy
  /** Called after each image with the number done and the total. */
  onProgress?: (done: number, total: number) => void
  /** Stops the run between images once aborted (Ctrl-C, SIGTERM). */
  signal?: AbortSignal
}

export interface DatasetRun {
  dataset: Dataset
  source: DatasetScoring
  cache: FeatureCache
}

async function openRun(o: RunOptions, scoring: Omit<ScoringOptions, 'policy'>, known?: DatasetOptions, opened?: Dataset): Promise<DatasetRun> {
  const dataset = opened ?? (await openDataset(o.dataset, known))
  const source = await openDatasetScoring(o.model, {...scoring, policy: o.policy})
  return {dataset, source, cache: openFeatureCache(o.model.cacheDir, source.key)}
}

const labelText = (labels: readonly string[]) => (labels.length === 0 ? SAFE_FOLDER : [...labels].sort().join(', '))

/**
 * The dataset's samples. The same image (the same bytes: a copy, or a link to one file) given other labels in another
 * place stops the run once every image is read, each such place listed: its features would count as an example of
 * labels it both has and lacks, and calibrate keeps copies of one image on the same side of its split.
 */
async function* samplesOf(run: DatasetRun, o: RunOptions, errors: SampleError[]) {
  const first = new Map<string, {source: string; labels: string}>()
  const clashes: string[] = []
  for await (const s of collectFeatures(run.dataset, run.source, run.cache, {maxBytes: o.model.limits.maxBytes, onProgress: o.onProgress, signal: o.signal})) {
    if (isSampleError(s)) {
      errors.push(s)
      continue
    }
    const labels = labelText(s.labels)
    const seen = first.get(s.sha256)
    if (!seen) first.set(s.sha256, {source: s.source, labels})
    else if (seen.labels !== labels) {
      clashes.push(`${s.source} (${labels}) is the same image as ${seen.source} (${seen.labels}): keep one, and give it every label it has in ${LABELS_FILE}`)
    }
    yield s
  }
  if (clashes.length > 0) throw invalidDataset(run.dataset.root, clashes)
}

export interface EvalReport {
  dataset: string
  model: string
  images: number
  errors: SampleError[]
  /** Images right in the dataset folder that labels.csv does not list: not used. */
  unlisted: string[]
  labels: LabelInfo[]
  metrics: EvalMetrics
  curves: Record<string, {pr: CurvePoint[]; histogram: Histogram}>
  /** Images run through the image encoder (0 when every image's features were cached). */
  images_embedded: number
  /** Categories of the policy that no installed signal scores (e.g. no CLIP model, only the NSFW specialist). */
  not_evaluated: string[]
  /**
   * Animations showing more pictures than are scored (MAX_ANIMATION_FRAMES), as scan's `animation_truncated`: their
   * scores, and so the figures, do not cover the pictures left out.
   */
  animations_truncated: string[]
}

/** The labels a dataset may use: the policy's categories, and a head's labels when one is applied. */
const knownLabels = (policy: Policy, head?: Head): DatasetOptions => ({
  known: new Set([...policy.categories.map((c) => c.name), ...(head?.labels ?? []).map((l) => l.name)]),
  knownFrom: head ? 'a category of the active policy or a label of the head' : 'a category of the active policy',
})

/** Scores every image as scan would and measures the result against the folders' labels. */
export async function evaluateDataset(o: RunOptions & {headPath?: string}): Promise<EvalReport> {
  const head = o.headPath ? await loadHead(o.headPath) : undefined
  const run = await openRun(o, {headPath: o.headPath}, knownLabels(o.policy, head))
  try {
    const scorer = run.source
    const errors: SampleError[] = []
    const scored: ScoredSample[] = []
    const truncated: string[] = []
    for await (const s of samplesOf(run, o, errors)) {
      scored.push({truth: s.labels, scores: scorer.score(s.features)})
      if (s.features.picturesLeftOut) truncated.push(s.source)
    }
    const thresholds = scorer.labels.map((l) => ({name: l.name, threshold: l.threshold}))
    return {
      dataset: o.dataset,
      model: run.source.modelId,
      images: run.dataset.images,
      errors,
      unlisted: run.dataset.unlisted,
      labels: [...scorer.labels],
      metrics: computeMetrics(scored, thresholds),
      curves: Object.fromEntries(scorer.labels.map((l, i) => [l.name, {pr: prCurve(scored, l.name, i), histogram: histogram(scored, l.name, i)}])),
      images_embedded: run.source.imagesEmbedded(),
      not_evaluated: [...run.source.notEvaluated],
      animations_truncated: truncated,
    }
  } finally {
    await run.source.dispose()
  }
}

/** Fits each policy category's calibration and threshold (a head, if any, is not applied). */
export async function calibrateDataset(
  o: RunOptions & CalibrateOptions,
): Promise<{report: CalibrationReport; errors: SampleError[]; unlisted: string[]; images_embedded: number}> {
  const dataset = await openDataset(o.dataset, knownLabels(o.policy))
  // With no label, no category has images to fit: the policy would come back as it was, which looks like success.
  if (dataset.labels.length === 0) throw invalidDataset(o.dataset, ['no image has a label: calibration fits each category on its images (give some lines a label)'])
  const run = await openRun(o, {requireClip: true}, undefined, dataset)
  try {
    const scorer = run.source
    const errors: SampleError[] = []
    const samples: RawSample[] = []
    for await (const s of samplesOf(run, o, errors)) samples.push({sha256: s.sha256, truth: s.labels, raw: scorer.raw(s.features), ...scorer.mix(s.features)})
    const report = calibrateCategories(samples, scorer.labels, o)
    return {report, errors, unlisted: run.dataset.unlisted, images_embedded: run.source.imagesEmbedded()}
  } finally {
    await run.source.dispose()
  }
}

/** Trains a head on every label of the dataset (any name: policy categories are blended with, others added). */
export async function trainHeadOnDataset(
  o: RunOptions & {train: TrainOptions},
): Promise<{head: TrainedHead; errors: SampleError[]; model: {id: string; embeddingSize: number}; dataset: Dataset}> {
  const dataset = await openDataset(o.dataset)
  // A labels file of safe lines alone is a dataset eval measures, but a head of no label is a file every command
  // refuses: say so before any image is embedded, rather than write it.
  if (dataset.labels.length === 0) throw invalidDataset(o.dataset, ['no image has a label: a head learns the labels its images have (give some lines a label)'])
  const run = await openRun(o, {requireClip: true}, undefined, dataset)
  try {
    const errors: SampleError[] = []
    const samples: EmbeddingSample[] = []
    for await (const s of samplesOf(run, o, errors)) samples.push({sha256: s.sha256, truth: s.labels, embedding: s.features.embedding})
    return {
      head: trainHead(samples, run.dataset.labels, o.train),
      errors,
      model: {id: run.source.modelId, embeddingSize: run.source.embeddingSize},
      dataset: run.dataset,
    }
  } finally {
    await run.source.dispose()
  }
}
