/**
 * The inference core: one path from frames to labels for scan, serve, video and eval alike. It decides which
 * signals run (activeSignals), opens them, prepares each frame for every one of them (trimmed and its aspect
 * ratio bounded once: frameToScore), runs
 * their models on batches of frames from any number of callers, and combines their outputs into labels.
 * Eval keeps the outputs as features (toFeatures / fromFeatures) and scores them exactly as a scan does.
 */
import {disposer} from '../dispose.js'
import {isModError, ModError} from '../errors.js'
import {longestShown} from '../image/animation-frames.js'
import {scoredBox} from '../image/prepare.js'
import {crop} from '../image/trim.js'
import {createBatcher, type BatchObserver} from '../pipeline/batcher.js'
import {addStep, timeStep, type StepTimes} from '../pipeline/steps.js'
import type {Category, Policy} from '../policy/types.js'
import {combineSignals, notEvaluated, shareOf, type FrameSignals} from '../scoring/combine.js'
import type {ScoredLabel} from '../scoring/result.js'
import type {RgbImage} from '../image/rgb.js'
import {checkOpened, runOrder} from './combination.js'
import {openEvidence, type OpenEvidence} from './evidence.js'
import type {ExtraLabel, FrameOrigin, FrameOutputs, FramePlace, MediaKind, OpenSignal, Signal, SignalSetup} from './signal.js'

/** Which signals a setup runs, and why each other one does not. The one place the on/off rules meet. */
export interface SignalChoice {
  /** The policy in force: under `only`, narrowed to the categories that signal feeds. */
  policy: Policy
  active: Signal[]
  off: Map<string, string>
}

/** Why a signal does not run under this setup: the policy's switch, then its own rule. */
function offReason(s: Signal, setup: SignalSetup): string | undefined {
  if (s.policySwitch !== undefined && !(setup.policy.specialists[s.name] ?? s.policySwitch === 'on')) {
    return `the policy switches it off (specialists: {${s.name}: false})`
  }
  return s.off?.(setup)
}

/**
 * The policy's switches and each signal's own rule, and `only`: one model signal alone (and the signals built
 * on it), the policy narrowed to the categories it feeds. `active` is in run order (combination.ts), whatever
 * the registry's.
 */
export function activeSignals(registry: readonly Signal[], setup: SignalSetup, only?: string): SignalChoice {
  let policy = setup.policy
  if (only !== undefined) {
    const alone = registry.find((s) => s.name === only && s.kind === 'model')
    if (alone === undefined) throw new ModError('invalid_config', `no signal "${only}" can score alone`)
    const reason = offReason(alone, setup)
    if (reason !== undefined) throw new ModError('invalid_config', `only ${alone.title} was asked for, but ${reason}`)
    policy = {...policy, categories: policy.categories.filter((c) => alone.weight(c) > 0)}
  }
  const off = new Map<string, string>()
  const active: Signal[] = []
  for (const s of runOrder(registry)) {
    const reason =
      only !== undefined && s.name !== only && !(s.kind === 'labels' && (s.needs ?? []).every((n) => n === only))
        ? `only ${only} runs`
        : offReason(s, {...setup, policy})
    if (reason === undefined && (s.needs ?? []).every((n) => active.some((a) => a.name === n))) active.push(s)
    else off.set(s.name, reason ?? `it needs ${(s.needs ?? []).join(', ')}`)
  }
  return {policy, active, off}
}

/** One frame made ready for inference: each signal's model input. */
export type PreparedFrame = ReadonlyMap<string, unknown>

/** What eval keeps of one frame: the embedding (empty without a CLIP model) and the other cached signals' outputs. */
export interface FrameFeatures {
  embedding: Float32Array
  signals: Record<string, Float32Array>
}

/**
 * What eval keeps of an image: its first frame's features, an animation's later frames scored (as scan scores
 * them), and the outputs of the signals that keep no features, per frame: those whose output depends on the
 * policy's rules (text read and matched, hash-list matches) are computed again on every run, never cached.
 */
export interface Features extends FrameFeatures {
  /** An animation's frames after the first (absent for a still image). */
  later?: FrameFeatures[]
  /** Per frame, the outputs of the signals that keep no features (absent when none is open). */
  live?: FrameOutputs[]
  /** An animation showing more pictures than are scored: some were left out (scan's `animation_truncated`). */
  picturesLeftOut?: true
}

/** A label as eval reports it: a category of the policy (with its calibration) or a label a signal adds. */
export interface LabelInfo extends ExtraLabel {
  calibration?: Category['calibration']
}

export interface CoreOptions {
  /** Frames per inference run. */
  batchSize: number
  /** Told about every inference run. */
  observe?: BatchObserver
}

export interface InferenceCore {
  readonly policy: Policy
  /** The signals open (installed and on), in run order (combination.ts). */
  readonly open: ReadonlySet<string>
  /** Categories of the policy that no open signal feeds. */
  readonly notEvaluated: readonly string[]
  /** Every label scored: the evaluated categories, then the labels signals add. */
  readonly labels: readonly LabelInfo[]
  /** Names the open signals' models and the settings that change their outputs (the feature cache's folder). */
  readonly key: string
  /** Size of the image embedding, 0 without one. */
  readonly embeddingSize: number
  /**
   * The largest side the open signals resample a frame to, for decodeImage (a large image may be decoded
   * smaller); undefined when one of them reads every pixel.
   */
  readonly frameSide?: number
  /** Frames run through the models so far. */
  framesInferred(): number
  /** Loads every model now rather than on the first frame. */
  warm(): Promise<void>
  /** The evidence kinds of the open signals, in registry order: how results and segments show what they found. */
  readonly evidenceKinds: readonly OpenEvidence[]
  /** The open signals that keep no features (eval runs them on every image, every run). */
  readonly live: ReadonlySet<string>
  /**
   * The preparing stage: frames trimmed (when the policy asks) and made ready for each signal (or only those of
   * `only`); an image's by default. `steps` gets the time of trimming and of each signal's preprocessing
   * (pipeline/steps.ts). A signal a frame is not prepared for does not run on it.
   */
  prepare(frames: readonly RgbImage[], kind?: MediaKind, steps?: StepTimes, only?: ReadonlySet<string>): Promise<PreparedFrame[]>
  /** Each frame's outputs; frames from concurrent callers share model runs. `steps` gets each signal's inference time. */
  infer(frames: readonly PreparedFrame[], steps?: StepTimes): Promise<FrameOutputs[]>
  /**
   * Says an image is on its way to `infer` (its frames being read or prepared): a run about to start waits for
   * it while such images keep coming (Batcher.expect). Returns what to call once its frames are given to `infer`,
   * or will not be.
   */
  expect(): () => void
  /** One frame's labels, as the result will show them once rounded. */
  score(outputs: FrameOutputs): ScoredLabel[]
  /** What each open signal found in the frame beyond label scores, by signal name (none where it did not look). */
  evidence(outputs: FrameOutputs): ReadonlyMap<string, unknown>
  /** Per label of `labels`, the raw margin its calibration applies to (NaN where no signal gives one). */
  raw(outputs: FrameOutputs): Float64Array
  /**
   * Per label of `labels`, how its score is made from the calibrated score of the signal that gives raw margins:
   * score = rest + share x that score, the weighted mean with the other signals that feed it (a label it alone
   * feeds: share 1, rest 0). Labels that rules or a head adjust afterwards are taken before the adjustment.
   */
  mix(outputs: FrameOutputs): {share: Float64Array; rest: Float64Array}
  /** An image's features from its frames' outputs. */
  toFeatures(outputs: readonly FrameOutputs[]): Features
  /** Each frame's outputs back from an image's features. */
  fromFeatures(features: Features): FrameOutputs[]
  /** Releases every signal; inference after it is refused. */
  dispose(): Promise<void>
  [Symbol.asyncDispose](): Promise<void>
}

type Entries = readonly (readonly [string, OpenSignal])[]

/** What the core works out once from the signals it opened, and its per-frame steps read. */
interface CoreParts {
  policy: Policy
  entries: Entries
  weight: (name: string, c: Category) => number
  labels: LabelInfo[]
  index: ReadonlyMap<string, number>
  /** The opened signals that keep their output as features, and the one whose output is the image embedding. */
  cached: Entries
  embeddingName?: string
  live: ReadonlySet<string>
}

/** Opens the active signals in run order; one that is not installed is tolerated when others can score. */
export async function openCore(registry: readonly Signal[], setup: SignalSetup, choice: SignalChoice, o: CoreOptions): Promise<InferenceCore> {
  const {opened, absent, life} = await openSignals(setup, choice)
  const alive = () => {
    if (life.disposed) throw new ModError('model_unavailable', 'the models were released')
  }
  const bySignal = new Map(registry.map((s) => [s.name, s]))
  const weight = (name: string, c: Category) => bySignal.get(name)?.weight(c) ?? 0
  const {policy} = choice
  const entries = [...opened.entries()]
  const skipped = notEvaluated(policy, entries.filter(([name]) => bySignal.get(name)?.kind === 'model').map(([name]) => name), weight)
  const labels = labelsOf(policy, skipped, entries)
  if (labels.length === 0) {
    // A verdict of safe that checked nothing would pass every image: refuse instead.
    await life.dispose()
    const feeding = [...absent].find(([name]) => policy.categories.some((c) => weight(name, c) > 0))
    throw nothingToCheck(policy.categories.map((c) => c.name), feeding?.[1])
  }
  const cached = entries.filter(([, s]) => s.encode && s.decode)
  const parts: CoreParts = {
    policy,
    entries,
    weight,
    labels,
    index: new Map(labels.map((l, i) => [l.name, i])),
    cached,
    embeddingName: entries.find(([name]) => bySignal.get(name)?.embedding)?.[0],
    live: new Set(entries.filter(([, s]) => s.prepare && !(s.encode && s.decode)).map(([name]) => name)),
  }
  const frameSide = frameSideOf(entries)
  const counted = {inferred: 0}
  const batcher = frameBatcher(entries, o, counted)
  return {
    policy,
    open: new Set(opened.keys()),
    notEvaluated: skipped,
    labels,
    key: featureKey(policy, cached, frameSide),
    embeddingSize: (parts.embeddingName && opened.get(parts.embeddingName)?.outputSize) || 0,
    frameSide,
    evidenceKinds: openEvidence(registry, new Set(opened.keys())),
    live: parts.live,
    framesInferred: () => counted.inferred,
    async warm() {
      for (const s of opened.values()) await s.warm?.()
    },
    prepare(frames, kind = 'image', steps, only) {
      alive()
      const longest = longestShown(frames)
      return Promise.all(frames.map((decoded, index) => prepareFrame(parts, decoded, {index, count: frames.length, ...(longest === undefined ? {} : {longest})}, kind, steps, only)))
    },
    expect: () => batcher.expect(),
    async infer(frames, steps) {
      alive()
      return Promise.all(frames.map((frame) => batcher.submit({frame, steps})))
    },
    score: (outputs) => scoreFrame(parts, outputs),
    evidence: (outputs) => frameEvidence(entries, outputs),
    raw: (outputs) => rawMargins(parts, outputs),
    mix: (outputs) => mixOf(parts, outputs),
    toFeatures: (outputs) => toFeatures(parts, outputs),
    fromFeatures: (features) => fromFeatures(parts, features),
    dispose: life.dispose,
    [Symbol.asyncDispose]: life.dispose,
  }
}

/** The active signals opened in run order, why each tolerated one did not open, and what releases them. */
async function openSignals(setup: SignalSetup, {policy, active}: SignalChoice) {
  const signalSetup = {...setup, policy}
  const opened = new Map<string, OpenSignal>()
  // Why each tolerated signal did not open, to explain a policy left with nothing to check.
  const absent = new Map<string, ModError>()
  const life = disposer(async () => {
    await Promise.allSettled([...opened.values()].map((s) => s.dispose()))
  })
  try {
    for (const s of active) {
      try {
        const open = await s.open(signalSetup, opened)
        opened.set(s.name, open)
        checkOpened(s, open)
      } catch (e) {
        // Not installed and not required: the categories only it feeds are not evaluated.
        if (!(isModError(e) && e.code === 'model_missing' && tolerated(s, active, setup))) throw e
        absent.set(s.name, e)
      }
    }
  } catch (e) {
    await life.dispose()
    throw e
  }
  return {opened, absent, life}
}

/** Every label scored: the policy's categories the open signals evaluate, then the labels they add. */
function labelsOf(policy: Policy, skipped: readonly string[], entries: Entries): LabelInfo[] {
  const categories: LabelInfo[] = policy.categories
    .filter((c) => !skipped.includes(c.name))
    .map((c) => ({name: c.name, threshold: c.threshold, parent: c.parent, origin: c.origin, calibration: c.calibration}))
  return [...categories, ...entries.flatMap(([, s]) => s.extraLabels ?? [])]
}

/** The largest side the signals that prepare frames resample to; undefined when one of them reads every pixel. */
function frameSideOf(entries: Entries): number | undefined {
  const preparing = entries.filter(([, s]) => s.prepare)
  return preparing.length > 0 && preparing.every(([, s]) => s.frameSide !== undefined) ? Math.max(...preparing.map(([, s]) => s.frameSide as number)) : undefined
}

/** Names the cached signals' models and the settings that change their features (trimming, reduced decoding). */
function featureKey(policy: Policy, cached: Entries, frameSide: number | undefined): string {
  const keys = cached.map(([, s]) => s.key as string)
  const untrimmed = policy.trim_borders ? '' : '-untrimmed'
  // Features of an image decoded reduced differ from those of every pixel: a cache of either is not the other's.
  const reduced = frameSide === undefined ? '' : `-reduced${frameSide}`
  return [`${keys[0] ?? ''}${untrimmed}${reduced}`, ...keys.slice(1)].join('+')
}

/** One batcher for every caller's frames: each signal's model runs once per batch, on the frames prepared for it. */
function frameBatcher(entries: Entries, o: CoreOptions, counted: {inferred: number}) {
  return createBatcher(
    async (frames: {frame: PreparedFrame; steps?: StepTimes}[]): Promise<FrameOutputs[]> => {
      const outputs = frames.map(() => new Map<string, unknown>())
      // The records of the requests whose frames are in this run: each is told the run's time in full.
      const records = new Set(frames.map((f) => f.steps))
      for (const [name, s] of entries) {
        // The frames prepared for this signal: eval prepares the live signals alone for an image whose features were cached.
        const mine = frames.flatMap((f, i) => (f.frame.has(name) ? [i] : []))
        if (!s.infer || mine.length === 0) continue
        const started = performance.now()
        const out = await s.infer(mine.map((i) => frames[i].frame.get(name)))
        const ms = performance.now() - started
        for (const steps of records) addStep(steps, `${name}_infer`, ms)
        out.forEach((value, k) => outputs[mine[k]].set(name, value))
      }
      counted.inferred += frames.length
      return outputs
    },
    o.batchSize,
    o.observe,
  )
}

/** One frame trimmed (when the policy asks) and made ready for each signal that prepares frames (or those of `only`). */
async function prepareFrame(parts: CoreParts, decoded: RgbImage, place: FramePlace, kind: MediaKind, steps?: StepTimes, only?: ReadonlySet<string>): Promise<PreparedFrame> {
  const {frame, origin} = timeStep(steps, 'trim', () => {
    const box = scoredBox(decoded, parts.policy.trim_borders)
    return {frame: crop(decoded, box), origin: {left: box.left, top: box.top, ...(decoded.scale ? {scale: decoded.scale} : {}), ...turnBackOf(decoded)}}
  })
  // Every signal starts at once: CLIP's resize runs in libvips' threads while the others compute here.
  const preparing = parts.entries.flatMap(([name, s]) => {
    if (!s.prepare || (only !== undefined && !only.has(name))) return []
    const prepare = s.prepare.bind(s)
    const started = performance.now()
    const input = (async () => prepare(frame, origin, decoded, kind, place))()
    return [{name, input: input.then((value) => ({value, ms: performance.now() - started}))}]
  })
  const ready = await Promise.all(preparing.map((p) => p.input))
  // Recorded in run order, whichever finished first.
  ready.forEach(({ms}, i) => addStep(steps, `${preparing[i].name}_preprocess`, ms))
  return new Map(ready.map(({value}, i) => [preparing[i].name, value]))
}

/** For a further view in another reading of the image's orientation tag: what turns its boxes into the image's view. */
function turnBackOf(decoded: RgbImage): Pick<FrameOrigin, 'turnBack'> {
  if (decoded.primaryOrientation === undefined) return {}
  const scale = decoded.scale ?? 1
  const size = {width: Math.round(decoded.width * scale), height: Math.round(decoded.height * scale)}
  return {turnBack: {from: decoded.orientation ?? 1, to: decoded.primaryOrientation, ...size}}
}

/** Each scoring signal's calibrated scores on the frame. */
function frameSignals(entries: Entries, outputs: FrameOutputs): FrameSignals {
  const signals: Record<string, ReadonlyMap<string, number>> = {}
  for (const [name, s] of entries) {
    const out = outputs.get(name)
    if (s.scores && out !== undefined) signals[name] = s.scores(out)
  }
  return signals
}

/** A frame's labels: the scorers' weighted mean, then each other signal's adjustment in run order. */
function scoreFrame({policy, entries, weight}: CoreParts, outputs: FrameOutputs): ScoredLabel[] {
  let scored = combineSignals(policy, frameSignals(entries, outputs), weight)
  for (const [, s] of entries) if (s.adjust) scored = s.adjust(scored, outputs)
  return scored
}

function frameEvidence(entries: Entries, outputs: FrameOutputs): ReadonlyMap<string, unknown> {
  const found = new Map<string, unknown>()
  for (const [name, s] of entries) {
    const value = outputs.get(name)
    const e = s.evidence && value !== undefined ? s.evidence(value) : undefined
    if (e !== undefined) found.set(name, e)
  }
  return found
}

function rawMargins({entries, labels, index}: CoreParts, outputs: FrameOutputs): Float64Array {
  const out = new Float64Array(labels.length).fill(Number.NaN)
  for (const [name, s] of entries) {
    const value = outputs.get(name)
    const margins = [...(s.raw && value !== undefined ? s.raw(value) : []), ...(s.extraRaw ? s.extraRaw(outputs) : [])]
    for (const [label, raw] of margins) {
      const i = index.get(label)
      if (i !== undefined) out[i] = raw
    }
  }
  return out
}

function mixOf({policy, entries, weight, labels, index}: CoreParts, outputs: FrameOutputs): {share: Float64Array; rest: Float64Array} {
  const share = new Float64Array(labels.length).fill(1)
  const rest = new Float64Array(labels.length)
  const own = entries.find(([, s]) => s.raw)?.[0]
  if (own === undefined) return {share, rest}
  const signals = frameSignals(entries, outputs)
  for (const category of policy.categories) {
    const i = index.get(category.name)
    const mix = i === undefined ? undefined : shareOf(category, signals, own, weight)
    if (i === undefined || mix === undefined) continue
    share[i] = mix.share
    rest[i] = mix.rest
  }
  return {share, rest}
}

function toFeatures({cached, embeddingName, live}: CoreParts, outputs: readonly FrameOutputs[]): Features {
  const frames = outputs.map((frame): FrameFeatures => {
    const features: FrameFeatures = {embedding: new Float32Array(0), signals: {}}
    for (const [name, s] of cached) {
      const output = frame.get(name)
      if (output === undefined) continue
      const encoded = (s.encode as (o: unknown) => Float32Array)(output)
      if (name === embeddingName) features.embedding = encoded
      else features.signals[name] = encoded
    }
    return features
  })
  const kept = live.size === 0 ? undefined : outputs.map((frame) => new Map([...frame].filter(([name]) => live.has(name))))
  return {...frames[0], ...(frames.length > 1 ? {later: frames.slice(1)} : {}), ...(kept ? {live: kept} : {})}
}

function fromFeatures({cached, embeddingName}: CoreParts, features: Features): FrameOutputs[] {
  const frames = [features, ...(features.later ?? [])]
  return frames.map((frame, i) => {
    const outputs = new Map<string, unknown>(features.live?.[i] ?? [])
    for (const [name, s] of cached) {
      // An empty embedding is no CLIP model; an empty output is one (no detection).
      const encoded = name === embeddingName ? (frame.embedding.length > 0 ? frame.embedding : undefined) : frame.signals[name]
      if (encoded !== undefined) outputs.set(name, (s.decode as (f: Float32Array) => unknown)(encoded))
    }
    return outputs
  })
}

/** The error of a policy, signal choice and set of installed models that leave no category to check. */
function nothingToCheck(categories: readonly string[], missing: ModError | undefined): ModError {
  if (categories.length === 0) return new ModError('invalid_config', 'the policy has no category left to check')
  const which = `none of the policy's categories (${categories.join(', ')}) can be checked`
  if (missing) return new ModError('model_missing', `${which}: ${missing.message}`, missing.context)
  return new ModError('invalid_config', `${which} by the signals chosen`)
}

/**
 * A signal that is not installed only leaves its categories not evaluated when nothing requires it: not the
 * user (a model folder they named), not a signal built on it, and another model signal must be there to score.
 */
function tolerated(s: Signal, active: readonly Signal[], setup: SignalSetup): boolean {
  if (s.required?.(setup)) return false
  if (active.some((a) => (a.needs ?? []).includes(s.name))) return false
  return active.some((a) => a !== s && a.kind === 'model')
}
