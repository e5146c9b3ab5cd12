import type {Limits} from './config/settings.js'
import {disposer} from './dispose.js'
import {ModError} from './errors.js'
import {decodeImage} from './image/decode.js'
import {isItemError, itemErrorEntry} from './item-errors.js'
import {lazy} from './lazy.js'
import type {Int8Weights, Precision} from './model/manifest-types.js'
import type {BatchObserver} from './pipeline/batcher.js'
import {orderedMap} from './pipeline/ordered.js'
import {DIRECT, type Scheduler} from './pipeline/scheduler.js'
import {addStep, addSteps, inferenceTime, timeStep, timeStepAsync, type StepTimes} from './pipeline/steps.js'
import type {Policy, PresetName} from './policy/types.js'
import type {SIGNAL_STATES} from './schemas.js'
import {buildResult, mergeFrameLabels} from './scoring/result.js'
import {activeSignals, openCore, type InferenceCore, type SignalChoice} from './signals/core.js'
import {imageEvidence} from './signals/evidence.js'
import {availability, categoryStates, listCategories} from './signals/listing.js'
import {SIGNALS} from './signals/registry.js'
import type {FrameOutputs, Signal, SignalSetup} from './signals/signal.js'
import {DEFAULT_DECODE_LIMITS} from './video/frames.js'
import {resolveFfmpeg} from './video/ffmpeg.js'
import {moderateVideo, type ScoredFrame} from './video/moderate.js'
import type {FoundSegment} from './video/segments.js'
import type {CategoriesResult, CategoryState, ErrorEntry, ModerationResult, RgbImage, Segment, VideoResult} from './types.js'

export interface EngineOptions {
  preset: PresetName
  modelDir: string
  cacheDir: string
  policy: Policy
  headPath?: string
  threads?: number
  /** fp32 unless the model's int8 or fp16 encoders are asked for. */
  precision?: Precision
  /** How int8 encoders' weights run; default auto (model/int8-weights.ts). */
  int8Weights?: Int8Weights
  /** Recogniser columns the text signal may read per image, over the policy's `text.budget`. */
  textBudget?: number
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
  /** One signal alone (`--only nsfw`): the policy narrows to the categories it feeds, and no other model loads. */
  only?: string
  /** Open every model at load, also those only some frames need (SignalSetup.eager): a server's choice. */
  eager?: boolean
  /** The signals to choose from; default: the registry's (a test swaps one for a stand-in). */
  signals?: readonly Signal[]
  /** Told what the engine does, for metrics; the engine keeps no counters itself. */
  observer?: EngineObserver
  /**
   * Decode every pixel of a large JPEG or WebP even where the signals need fewer (decode.ts planDecode): the
   * reference path that reduced decoding is measured against (bench/shrink.ts, the parity tests).
   */
  everyPixel?: boolean
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
  /** After each batch: frames analysed, seconds covered, and the runs still open as segments so far (moderate.ts). */
  onProgress?: (framesDone: number, seconds: number, open: FoundSegment[]) => void
  /** When set, called once with the duration the container states (a progress estimate), if it states one. */
  onDuration?: (seconds: number) => void
  signal?: AbortSignal
}

/** One image to moderate; `read` is called when the engine is ready for it, so a folder is never held in memory. */
export interface ImageInput {
  source: string
  read: () => Promise<Buffer>
}

export type ItemResult = ModerationResult | ErrorEntry

export interface RunOptions {
  /** Where the preparing and inferring stages run (the server's queue); default: directly. */
  scheduler?: Scheduler
  /** Filled with the time spent in each step (pipeline/steps.ts), summed over the images of the call. */
  steps?: StepTimes
}

/** Per signal: in memory, not installed (the categories it feeds are not evaluated), switched off, or not loaded yet. */
export type SignalState = (typeof SIGNAL_STATES)[number]

export interface Engine {
  readonly preset: PresetName
  /** The policy in force (narrowed by `only`). */
  readonly policy: Policy
  isLoaded(): boolean
  /** What each signal is doing; `not_loaded` until load() has run. */
  signals(): Record<string, SignalState>
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
  /** The categories with their state: evaluated (by which signals) or not (and why); loads no model. */
  categories(): Promise<CategoriesResult>
  /**
   * Each category of the policy: evaluated by which signals, or why not. After a load, what the loaded models
   * score; before it, what they will score (reads no weights).
   */
  categoryStates(): Promise<CategoryState[]>
  /** Releases the models; a load under way is released when it ends. Every call after it is refused. */
  close(): Promise<void>
  /** The same as close(), for `await using`. */
  [Symbol.asyncDispose](): Promise<void>
}

function closedError(): ModError {
  return new ModError('model_unavailable', 'the engine is closed')
}

/** The signal setup of an engine's options. */
function setupOf(opts: EngineOptions): SignalSetup {
  return {
    preset: opts.preset,
    modelDir: opts.modelDir,
    cacheDir: opts.cacheDir,
    precision: opts.precision ?? 'fp32',
    int8Weights: opts.int8Weights,
    threads: opts.threads,
    textBudget: opts.textBudget,
    policy: opts.policy,
    headPath: opts.headPath,
    requireClip: opts.requireClip,
    eager: opts.eager,
  }
}

/** What an engine's steps share: its options, signal choice and the load of its models. */
interface EngineParts {
  opts: EngineOptions
  registry: readonly Signal[]
  setup: SignalSetup
  choice: SignalChoice
  batchSize: number
  /** The inference core once loaded; refused after close. */
  loaded(): Promise<InferenceCore>
}

/**
 * The engine: the inference core (signals/core.ts) with its image, batch and video adapters on top, and the
 * category listing. Models load on first use.
 */
export function createEngine(opts: EngineOptions): Engine {
  const registry = opts.signals ?? SIGNALS
  const setup = setupOf(opts)
  const choice = activeSignals(registry, setup, opts.only)
  const batchSize = opts.batchSize ?? 8
  let closed = false
  const ffmpeg = lazy(() => resolveFfmpeg(opts.ffmpeg))
  const models = lazy(() => openModels(registry, setup, choice, {batchSize, observer: opts.observer}, () => closed))
  const parts: EngineParts = {opts, registry, setup, choice, batchSize, loaded: () => (closed ? Promise.reject(closedError()) : models.get())}
  const peek = () => (closed ? undefined : models.peek())
  /** The signals loaded when the models are, else what is installed. */
  async function available() {
    if (closed) throw closedError()
    return availability(setup, choice, models.peek()?.open)
  }
  const {dispose: close} = disposer(async () => {
    closed = true
    const pending = await models.current()?.catch(() => undefined)
    models.reset()
    if (pending) await pending.dispose()
  })
  return {
    preset: opts.preset,
    policy: choice.policy,
    isLoaded: () => peek() !== undefined,
    signals: () => Object.fromEntries(registry.map((s) => [s.name, signalState(choice, peek(), s)])),
    load: async () => {
      await parts.loaded()
    },
    notEvaluated: async () => [...(await parts.loaded()).notEvaluated],
    moderateImage: (data, source, o = {}) => moderateOne(parts, {source, read: async () => data}, o.scheduler ?? DIRECT, o.steps),
    moderateMany: (inputs, o = {}) => moderateMany(parts, inputs, o),
    async moderateVideo(path, o) {
      const [binary, core] = await Promise.all([ffmpeg.get(), parts.loaded()])
      const result = await moderateVideo(path, {
        ...o,
        batchSize,
        decode: {ffmpeg: binary, ...DEFAULT_DECODE_LIMITS, maxSeconds: opts.limits.maxVideoSeconds, maxPixels: opts.limits.maxPixels},
        scoreFrames: (frames) => scoreVideoFrames(core, frames),
        evidence: core.evidenceKinds,
      })
      return {...result, not_evaluated: [...core.notEvaluated]}
    },
    categories: async () => listCategories(registry, {...setup, preset: opts.preset, policy: choice.policy}, choice, await available()),
    categoryStates: async () => categoryStates(registry, choice.policy, await available()),
    close,
    [Symbol.asyncDispose]: close,
  }
}

/** Opens the inference core and loads every model; released again when the engine closed meanwhile. */
async function openModels(
  registry: readonly Signal[],
  setup: SignalSetup,
  choice: SignalChoice,
  o: {batchSize: number; observer?: EngineObserver},
  closed: () => boolean,
): Promise<InferenceCore> {
  const started = performance.now()
  const core = await openCore(registry, setup, choice, {batchSize: o.batchSize, observe: o.observer?.batch})
  try {
    await core.warm()
    if (closed()) throw closedError()
  } catch (e) {
    await core.dispose()
    throw e
  }
  o.observer?.loaded?.((performance.now() - started) / 1000)
  return core
}

function signalState(choice: SignalChoice, core: InferenceCore | undefined, signal: Signal): SignalState {
  if (!choice.active.includes(signal)) return 'off'
  if (core === undefined) return 'not_loaded'
  return core.open.has(signal.name) ? 'loaded' : 'not_installed'
}

/** Each frame's labels and what the signals found in it. */
async function scoreVideoFrames(core: InferenceCore, frames: readonly RgbImage[]): Promise<ScoredFrame[]> {
  const outputs = await core.infer(await core.prepare(frames, 'video'))
  return outputs.map((o) => ({labels: core.score(o), evidence: core.evidence(o)}))
}

/** The one image path: read, decode and prepare in the preparing stage, infer (batched with others), score. */
async function moderateOne({opts, loaded}: EngineParts, input: ImageInput, scheduler: Scheduler, steps?: StepTimes): Promise<ModerationResult> {
  const core = await loaded()
  const asked = performance.now()
  const {maxBytes, maxPixels} = opts.limits
  // Once the image holds its place in the preparing stage, a run about to start waits for it (Batcher.expect).
  let coming: (() => void) | undefined
  let truncated = false
  try {
    const frames = await scheduler.prepare(
      async () => {
        // Waiting for the preparing stage's turn (the server's queue) counts as waiting too.
        addStep(steps, 'wait', performance.now() - asked)
        const data = await input.read()
        const frameSide = opts.everyPixel ? undefined : core.frameSide
        const decoded = await timeStepAsync(steps, 'decode', () => decodeImage(data, {maxBytes, maxPixels}, undefined, frameSide))
        truncated = decoded.some((frame) => frame.picturesLeftOut)
        return core.prepare(decoded, 'image', steps)
      },
      () => (coming = core.expect()),
    )
    // What is not inference between here and the outputs is waiting: for the queue's turn and the batcher's run.
    const inferredBefore = steps ? inferenceTime(steps) : 0
    const started = performance.now()
    const outputs = await scheduler.infer(() => {
      const inferred = core.infer(frames, steps)
      coming?.()
      return inferred
    })
    if (steps) addStep(steps, 'wait', Math.max(0, performance.now() - started - (inferenceTime(steps) - inferredBefore)))
    return timeStep(steps, 'score', () => resultOf(core, input.source, outputs, truncated))
  } finally {
    coming?.()
  }
}

/**
 * One image's result from its frames' outputs: the labels merged over its frames, whether an animation's pictures were
 * left out (`truncated`), then each open signal's evidence.
 */
function resultOf(core: InferenceCore, source: string, outputs: FrameOutputs[], truncated: boolean): ModerationResult {
  const result = buildResult(source, mergeFrameLabels(outputs.map((o) => core.score(o))), core.notEvaluated)
  const noted = truncated ? {animation_truncated: true as const} : {}
  return {...result, ...noted, ...imageEvidence(core.evidenceKinds, outputs.map((o) => core.evidence(o)))} as ModerationResult
}

/** moderateOne with a record of its own, added to `steps` when it ends: the images of one call overlap. */
async function timedOne(parts: EngineParts, input: ImageInput, scheduler: Scheduler, steps?: StepTimes): Promise<ModerationResult> {
  if (!steps) return moderateOne(parts, input, scheduler)
  const own: StepTimes = {}
  try {
    return await moderateOne(parts, input, scheduler, own)
  } finally {
    addSteps(steps, own)
  }
}

async function* moderateMany(parts: EngineParts, inputs: Iterable<ImageInput> | AsyncIterable<ImageInput>, o: RunOptions): AsyncGenerator<ItemResult> {
  await parts.loaded()
  const scheduler = o.scheduler ?? DIRECT
  // Two batches in flight: one being inferred while the next is read, decoded and preprocessed.
  yield* orderedMap(inputs, parts.batchSize * 2, (input) =>
    timedOne(parts, input, scheduler, o.steps).catch((e: unknown): ItemResult => {
      if (isItemError(e)) return itemErrorEntry(input.source, e)
      throw e
    }),
  )
}
