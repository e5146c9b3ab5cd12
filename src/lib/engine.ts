import type {Limits} from './config/settings.js'
import {isModError, ModError} from './errors.js'
import {decodeImage} from './image/decode.js'
import {prepareFrames} from './image/prepare.js'
import {lazy} from './lazy.js'
import {openClip, type ClipModel} from './model/clip.js'
import {loadManifest} from './model/manifest.js'
import type {Manifest, Precision} from './model/manifest-types.js'
import {classifyViews, type NsfwRunner} from './model/nsfw-runner.js'
import {loadPresetManifest} from './model/presets.js'
import {embedPrompts} from './model/prompt-cache.js'
import {createBatcher, type BatchObserver} from './pipeline/batcher.js'
import {orderedMap} from './pipeline/ordered.js'
import {DIRECT, type Scheduler} from './pipeline/scheduler.js'
import type {ModelSignal, Policy, PresetName, SignalName} from './policy/types.js'
import {combineSignals, feedingSignals, notEvaluated, type FrameSignals} from './scoring/combine.js'
import {applyHead, checkHeadFits, checkHeadParents, loadHead, type Head} from './scoring/head.js'
import {nsfwCategoryScores} from './scoring/nsfw-rule.js'
import type {Detection} from './signals/nudenet/decode.js'
import type {NudenetDetector} from './signals/nudenet/detector.js'
import type {NudenetInput} from './signals/nudenet/preprocess.js'
import {combineNudenet, SUGGESTIVE_PARTS} from './signals/nudenet/rule.js'
import {buildResult, mergeFrameLabels, type ScoredLabel} from './scoring/result.js'
import {policyPrompts, zeroShotScores} from './scoring/score.js'
import {ITEM_ERROR_CODES, SIGNAL_STATES} from './schemas.js'
import {DEFAULT_DECODE_LIMITS} from './video/frames.js'
import {resolveFfmpeg} from './video/ffmpeg.js'
import {moderateVideo} from './video/moderate.js'
import type {CategoriesResult, ErrorEntry, ItemErrorCode, ModerationResult, Region, RgbImage, Segment, VideoResult} from './types.js'

export interface EngineOptions {
  preset: PresetName
  modelDir: string
  cacheDir: string
  policy: Policy
  headPath?: string
  threads?: number
  /** fp32 unless the model's int8 or fp16 encoders are asked for. */
  precision?: Precision
  limits: Limits
  /** Frames per inference run. */
  batchSize?: number
  /** MOD_FFMPEG: an explicit ffmpeg binary. */
  ffmpeg?: string
  /**
   * The CLIP model must be there (the user named its folder). Otherwise a preset that is not installed only
   * leaves the categories that need it not evaluated, as long as another signal can score something.
   */
  requireClip?: boolean
  /** Opens the embedded NSFW specialist; absent where none is installed. */
  openNsfw?: () => Promise<NsfwRunner>
  /**
   * Opens the NudeNet detector (`mod models pull nudenet`), or gives undefined where it is not installed. It
   * runs only beside the specialist, as a second opinion on its scores (signals/nudenet/rule.ts).
   */
  openNudenet?: () => Promise<NudenetDetector | undefined>
  /** One signal alone (`--only nsfw`): the policy narrows to the categories it feeds, and no other model loads. */
  only?: ModelSignal
  /** Told what the engine does, for metrics; the engine keeps no counters itself. */
  observer?: EngineObserver
}

export interface EngineObserver {
  /** After every inference run: the frames it held and its duration. */
  batch?: BatchObserver
  /** Once the models are loaded: how long loading took. */
  loaded?: (seconds: number) => void
}

export interface VideoOptions {
  source: string
  fps: number
  minFrames: number
  stopOnViolation: boolean
  /** Called for each segment as its run of frames closes (the CLI's --ndjson). */
  onSegment?: (label: string, segment: Segment) => void
  onProgress?: (framesDone: number, seconds: number) => void
  signal?: AbortSignal
}

/** One image to moderate; `read` is called when the engine is ready for it, so a folder is never held in memory. */
export interface ImageInput {
  source: string
  read: () => Promise<Buffer>
}

export type ItemResult = ModerationResult | ErrorEntry

export type {NsfwRunner} from './model/nsfw-runner.js'

export interface RunOptions {
  /** Where the preparing and inferring stages run (the server's queue); default: directly. */
  scheduler?: Scheduler
}

/** Per signal: in memory, not installed (the categories it feeds are not evaluated), switched off, or not loaded yet. */
export type SignalState = (typeof SIGNAL_STATES)[number]

export interface Engine {
  readonly preset: PresetName
  /** The policy in force (narrowed by `only`). */
  readonly policy: Policy
  isLoaded(): boolean
  /** What each signal is doing; `not_loaded` until load() has run. The NudeNet add-on is listed once it is loaded. */
  signals(): Record<SignalName, SignalState> & {nudenet?: 'loaded'}
  /** Loads the models, the head and the prompt embeddings (from the disk cache when warm); idempotent. */
  load(): Promise<void>
  /** The categories of the policy that no loaded signal can score (loads first); [] when all can be. */
  notEvaluated(): Promise<string[]>
  /** One image; a problem with it (unreadable, too large) is thrown. */
  moderateImage(data: Buffer, source: string, options?: RunOptions): Promise<ModerationResult>
  /**
   * Images in input order, each as soon as it and those before it are done; an input that cannot be read is an
   * error entry. Later inputs are read and decoded while earlier ones are inferred, and inference runs on
   * batches of whatever is ready.
   */
  moderateMany(inputs: Iterable<ImageInput> | AsyncIterable<ImageInput>, options?: RunOptions): AsyncGenerator<ItemResult>
  /** Samples frames of the video file at `fps` with ffmpeg and returns timestamped segments per violated label. */
  moderateVideo(path: string, options: VideoOptions): Promise<VideoResult>
  categories(): Promise<CategoriesResult>
  /** Releases the models; a load under way is released when it ends. Every call after it is refused. */
  close(): Promise<void>
}

/** Errors that belong to one input: a batch reports them as an entry and goes on. */
const ITEM_ERRORS: ReadonlySet<string> = new Set(ITEM_ERROR_CODES)

function isItemError(e: unknown): e is ModError & {code: ItemErrorCode} {
  return isModError(e) && ITEM_ERRORS.has(e.code)
}

interface ClipSignal {
  model: ClipModel
  manifest: Manifest
  prompts: Map<string, Float32Array>
}

interface Models {
  clip?: ClipSignal
  head?: Head
  nsfw?: NsfwRunner
  nudenet?: NudenetDetector
  /** Categories that no loaded signal feeds. */
  notEvaluated: string[]
}

/** What the preparing stage makes of one frame: the input tensor of each loaded model. */
interface PreparedFrame {
  clip?: Float32Array
  /** The frame's views for the specialist (see NsfwRunner.views). */
  nsfw?: Float32Array
  nudenet?: NudenetInput
  /** Where the trimmed frame starts in the decoded one. */
  offset: {left: number; top: number}
}

interface FrameOutput {
  embedding?: Float32Array
  /** Class probabilities of the views the specialist looked at, five per view (see classifyViews). */
  nsfw?: Float32Array
  /** The detector's detections, boxes in the decoded frame's pixels (the trim undone). */
  detections?: Detection[]
}

interface ScoredFrame {
  labels: ScoredLabel[]
  detections?: Detection[]
}

function closedError(): ModError {
  return new ModError('model_unavailable', 'the engine is closed')
}

async function release(m: Partial<Models>): Promise<void> {
  await Promise.allSettled([m.clip?.model.close(), m.nsfw?.close(), m.nudenet?.close()])
}

/** `policy` narrowed to the categories `only` feeds. */
function narrowed(policy: Policy, only: ModelSignal | undefined): Policy {
  if (only === undefined) return policy
  if (only === 'nsfw' && !policy.specialists.nsfw) {
    throw new ModError('invalid_config', 'only the NSFW specialist was asked for, but the policy switches it off (specialists: {nsfw: false})')
  }
  return {...policy, categories: policy.categories.filter((c) => feedingSignals(c).includes(only))}
}

/** The detector's evidence as the result reports it: intimate parts (covered or not) and bare bellies, best first. */
function regionsOf(frames: ScoredFrame[]): Region[] {
  return frames
    .flatMap((f) => f.detections ?? [])
    .filter((d) => SUGGESTIVE_PARTS.has(d.label))
    .sort((a, b) => b.score - a.score)
    .map((d) => ({label: d.label, score: d.score, box: d.box}))
}

export function createEngine(opts: EngineOptions): Engine {
  const policy = narrowed(opts.policy, opts.only)
  const limits = opts.limits
  const batchSize = opts.batchSize ?? 8
  const precision = opts.precision ?? 'fp32'
  const wantClip = opts.only === undefined || opts.only === 'clip'
  const wantNsfw = opts.only !== 'clip' && policy.specialists.nsfw && opts.openNsfw !== undefined
  let closed = false

  const manifest = lazy(() => loadManifest(opts.modelDir, opts.preset, precision))
  const head = lazy(() => (opts.headPath && wantClip ? loadHead(opts.headPath) : Promise.resolve(undefined)))
  const ffmpeg = lazy(() => resolveFfmpeg(opts.ffmpeg))

  /** The CLIP model, or undefined when the preset is not installed and another signal may carry on. */
  async function openClipSignal(m: Partial<Models>): Promise<void> {
    let man: Manifest
    try {
      man = await manifest.get()
    } catch (e) {
      if (isModError(e) && e.code === 'model_missing' && !opts.requireClip && !opts.headPath && wantNsfw) return
      throw e
    }
    const h = await head.get()
    if (h) {
      checkHeadFits(h, man.id, man.embedding_size)
      checkHeadParents(h, policy)
    }
    const model = await openClip(opts.modelDir, man, {threads: opts.threads, cacheDir: opts.cacheDir})
    m.clip = {model, manifest: man, prompts: new Map()}
    m.head = h
    m.clip.prompts = await embedPrompts(policyPrompts(policy), {
      cacheDir: opts.cacheDir,
      // Reduced-precision text encoders give slightly different embeddings: they get their own cache.
      modelId: precision === 'fp32' ? man.id : `${man.id}-${precision}`,
      embed: (texts) => model.embedTexts(texts),
    })
    // The text encoder is only needed for prompts; once they are embedded its memory goes back.
    await model.releaseText()
  }

  async function open(): Promise<Models> {
    const m: Partial<Models> = {}
    const started = performance.now()
    try {
      if (wantClip) await openClipSignal(m)
      if (wantNsfw) m.nsfw = await (opts.openNsfw as () => Promise<NsfwRunner>)()
      if (wantNsfw && opts.openNudenet) m.nudenet = await opts.openNudenet()
      if (closed) throw closedError()
      const available = new Set<ModelSignal>([...(m.clip ? ['clip' as const] : []), ...(m.nsfw ? ['nsfw' as const] : [])])
      opts.observer?.loaded?.((performance.now() - started) / 1000)
      return {...m, notEvaluated: notEvaluated(policy, available)}
    } catch (e) {
      await release(m)
      throw e
    }
  }

  const models = lazy(open)

  function loaded(): Promise<Models> {
    return closed ? Promise.reject(closedError()) : models.get()
  }

  /** Trimmed once, then each loaded model's input: CLIP's tensor, the specialist's views and the detector's input of the same pixels. */
  async function prepareDecoded(m: Models, decoded: RgbImage[]): Promise<PreparedFrame[]> {
    const {frames, tensors, offsets} = await prepareFrames(decoded, {preprocess: m.clip?.manifest.preprocess, trimBorders: policy.trim_borders})
    return frames.map((f, i) => ({clip: tensors[i], nsfw: m.nsfw?.views(f), nudenet: m.nudenet?.prepare(f), offset: offsets[i]}))
  }

  async function runFrames(frames: PreparedFrame[]): Promise<FrameOutput[]> {
    const m = await loaded()
    const out: FrameOutput[] = frames.map(() => ({}))
    if (m.clip) {
      const size = (frames[0].clip as Float32Array).length
      const batch = new Float32Array(size * frames.length)
      frames.forEach((f, i) => batch.set(f.clip as Float32Array, i * size))
      const embeddings = await m.clip.model.embedImages(batch, frames.length)
      embeddings.forEach((e, i) => (out[i].embedding = e))
    }
    if (m.nsfw) {
      const probabilities = await classifyViews(m.nsfw, frames.map((f) => f.nsfw as Float32Array))
      probabilities.forEach((p, i) => (out[i].nsfw = p))
    }
    if (m.nudenet) {
      const found = await m.nudenet.detect(frames.map((f) => f.nudenet as NudenetInput))
      found.forEach((d, i) => {
        const {left, top} = frames[i].offset
        out[i].detections = d.map((x) => ({...x, box: [x.box[0] + left, x.box[1] + top, x.box[2], x.box[3]]}))
      })
    }
    return out
  }

  const batcher = createBatcher(runFrames, batchSize, opts.observer?.batch)

  function frameLabels(m: Models, out: FrameOutput): ScoredLabel[] {
    const signals: FrameSignals = {}
    if (m.clip && out.embedding) signals.clip = zeroShotScores(out.embedding, policy, m.clip.prompts)
    if (out.nsfw) {
      const scores = nsfwCategoryScores(out.nsfw)
      signals.nsfw = new Map(Object.entries(out.detections ? combineNudenet(scores, out.detections) : scores))
    }
    const labels = combineSignals(policy, signals)
    return m.head && out.embedding ? applyHead(m.head, out.embedding, labels) : labels
  }

  async function scoreFrames(m: Models, frames: PreparedFrame[]): Promise<ScoredFrame[]> {
    const outputs = await Promise.all(frames.map((f) => batcher.submit(f)))
    return outputs.map((o) => ({labels: frameLabels(m, o), detections: o.detections}))
  }

  /** The one image path: read and decode in the preparing stage, infer (batched with others), score. */
  async function moderateOne(input: ImageInput, scheduler: Scheduler): Promise<ModerationResult> {
    const m = await loaded()
    const frames = await scheduler.prepare(async () => {
      return prepareDecoded(m, await decodeImage(await input.read(), {maxBytes: limits.maxBytes, maxPixels: limits.maxPixels}))
    })
    const scored = await scheduler.infer(() => scoreFrames(m, frames))
    const result = buildResult(input.source, mergeFrameLabels(scored.map((s) => s.labels)), m.notEvaluated)
    return m.nudenet ? {...result, regions: regionsOf(scored)} : result
  }

  function signalState(m: Models | undefined, signal: SignalName): SignalState {
    const wanted = signal === 'clip' ? wantClip : signal === 'nsfw' ? wantNsfw : wantClip && opts.headPath !== undefined
    if (!wanted) return 'off'
    if (m === undefined) return 'not_loaded'
    return m[signal] ? 'loaded' : 'not_installed'
  }

  const engine: Engine = {
    preset: opts.preset,
    policy,
    isLoaded: () => !closed && models.peek() !== undefined,
    signals: () => {
      const m = closed ? undefined : models.peek()
      const states = {clip: signalState(m, 'clip'), nsfw: signalState(m, 'nsfw'), head: signalState(m, 'head')}
      return m?.nudenet ? {...states, nudenet: 'loaded' as const} : states
    },
    load: async () => {
      await loaded()
    },
    notEvaluated: async () => [...(await loaded()).notEvaluated],
    moderateImage: (data, source, o = {}) => moderateOne({source, read: async () => data}, o.scheduler ?? DIRECT),

    async *moderateMany(inputs, o = {}) {
      await loaded()
      const scheduler = o.scheduler ?? DIRECT
      // Two batches in flight: one being inferred while the next is read, decoded and preprocessed.
      yield* orderedMap(inputs, batchSize * 2, (input) =>
        moderateOne(input, scheduler).catch((e: unknown): ItemResult => {
          if (isItemError(e)) return {source: input.source, error: {code: e.code, message: e.message}}
          throw e
        }),
      )
    },

    async moderateVideo(path, o) {
      const [binary, m] = await Promise.all([ffmpeg.get(), loaded()])
      const result = await moderateVideo(path, {
        ...o,
        batchSize,
        decode: {ffmpeg: binary, ...DEFAULT_DECODE_LIMITS, maxSeconds: limits.maxVideoSeconds, maxPixels: limits.maxPixels},
        scoreFrames: async (frames) => (await scoreFrames(m, await prepareDecoded(m, frames))).map((s) => s.labels),
      })
      return {...result, not_evaluated: m.notEvaluated}
    },

    async categories() {
      if (closed) throw closedError()
      const id = await manifest.get().then(
        (m) => m.id,
        async (e: unknown) => {
          if (isModError(e) && e.code === 'model_missing') return (await loadPresetManifest(opts.preset)).id
          throw e
        },
      )
      const h = await head.get()
      const headNames = new Set(h?.labels.map((l) => l.name))
      const enabled = (s: ModelSignal) => (s === 'clip' ? wantClip : s === 'nsfw' ? policy.specialists.nsfw && opts.only !== 'clip' : false)
      const listed = policy.categories.map((c) => ({
        name: c.name,
        parent: c.parent,
        threshold: c.threshold,
        origin: c.origin,
        signals: [...feedingSignals(c).filter(enabled), ...(headNames.has(c.name) ? ['head' as const] : [])],
        prompts: c.prompts,
        negatives: c.negatives,
      }))
      const names = new Set(listed.map((c) => c.name))
      const headOnly = (h?.labels ?? [])
        .filter((l) => !names.has(l.name))
        .map((l) => ({name: l.name, parent: l.parent, threshold: l.threshold, origin: 'head' as const, signals: ['head' as const]}))
      return {preset: opts.preset, model: id, categories: [...listed, ...headOnly]}
    },

    async close() {
      closed = true
      const pending = await models.current()?.catch(() => undefined)
      models.reset()
      if (pending) await release(pending)
    },
  }
  return engine
}
