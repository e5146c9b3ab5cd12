/**
 * A signal turns frames into evidence about labels: the zero-shot CLIP prompts, the embedded NSFW specialist,
 * a trained head. Each lives in its own folder behind this interface and is listed once in registry.ts; the
 * inference core (core.ts) opens the signals a setup wants, prepares each frame for every one of them, runs
 * their models on batches of frames and combines what they say into labels.
 */
import type {Static, TObject, TProperties} from '../typebox.js'

import {boxInOrientation} from '../image/orientation.js'
import type {RgbImage} from '../image/rgb.js'
import type {Int8Weights, Precision} from '../model/manifest-types.js'
import type {PullableManifest} from '../model/pull.js'
import type {PolicySection} from '../policy/section.js'
import type {Category, Policy, PresetName} from '../policy/types.js'
import type {Origin} from '../schema-parts.js'
import {policyWeight as weightInPolicy} from '../scoring/combine.js'
import type {ScoredLabel} from '../scoring/result.js'
import type {Combination} from './combination.js'

/**
 * Everything a signal may need to open, as plain settings (lib/compose.ts builds it from the configuration): each
 * signal opens its own model from these, so nothing outside its folder names its model.
 */
export interface SignalSetup {
  /** The preset named (absent where only a model folder is). */
  preset?: PresetName
  modelDir: string
  cacheDir: string
  precision: Precision
  /** How an int8 encoder's weights run (model/int8-weights.ts); absent: auto. */
  int8Weights?: Int8Weights
  threads?: number
  /** Recogniser columns the text signal may read per image (MOD_TEXT_BUDGET), over the policy's `text.budget`. */
  textBudget?: number
  /** The policy in force (already narrowed to one signal's categories under `only`). */
  policy: Policy
  headPath?: string
  /** The user named the model folder: the CLIP model must be there. */
  requireClip?: boolean
  /**
   * Open at load every model, also those only some frames need (the NSFW specialist's judge): what a long-running
   * server wants, so that no request pays for an opening. Absent: those open on first need.
   */
  eager?: boolean
}

/** Where a trimmed frame starts in the decoded one: what maps a box found in it back to the image's pixels. */
export interface FrameOrigin {
  left: number
  top: number
  /** The image's pixels per decoded pixel, when it was decoded scaled down; absent: 1. */
  scale?: number
  /**
   * Of a further view in another reading of the image's orientation tag (RgbImage.primaryOrientation): the view's
   * orientation, the image's own, and the view's size in the image's pixels, to turn its boxes into the image's view.
   */
  turnBack?: {from: number; to: number; width: number; height: number}
}

/** An [x, y, width, height] box found in a trimmed frame, in the image's pixels (whole pixels when scaled). */
export function toImageBox(box: readonly [number, number, number, number], origin: FrameOrigin): [number, number, number, number] {
  const [x, y, width, height] = box
  const scale = origin.scale ?? 1
  const at = [x + origin.left, y + origin.top, width, height] as [number, number, number, number]
  const scaled = scale === 1 ? at : (at.map((v) => Math.round(v * scale)) as [number, number, number, number])
  const turn = origin.turnBack
  return turn ? boxInOrientation(scaled, turn.from, turn.to, turn.width, turn.height) : scaled
}

/** Whether frames come from an image (a still one or an animation) or from a video. */
export type MediaKind = 'image' | 'video'

/** The outputs of one frame, per signal name (what each signal's `infer` gave). */
export type FrameOutputs = ReadonlyMap<string, unknown>

/** A label that is not a category of the policy (a head's own label), as listings and eval show it. */
export interface ExtraLabel {
  name: string
  parent: string | null
  threshold: number
  origin: Origin
}

/** A frame's place among the frames prepared together: the `index`-th of `count`. */
export interface FramePlace {
  index: number
  count: number
  /** For an animation's frames: the index of the one on screen longest among them (longestShown). */
  longest?: number
}

/** A box in frame pixels: left, top, width, height. */
export type Box = [number, number, number, number]

/** A box the HTML report draws on an item's thumbnail: where, what kind of finding (its colour), its caption. */
export interface ReportMark {
  box: readonly number[]
  kind: 'region' | 'line' | 'hit' | 'mark'
  caption: string
}

/** What a run of frames gathers for one video segment: each frame of the run added in order, then its fields. */
export interface SegmentEvidence<E> {
  /** A frame of the run; `at`: its time in seconds. */
  add(evidence: E, at: number): void
  /** The segment's fields; {} when what was gathered says nothing. */
  fields(): Record<string, unknown>
}

/** The fields an evidence kind adds, as a result carries them (each optional). */
export type EvidenceFields<P extends TProperties> = Partial<Static<TObject<P>>>

/**
 * What a signal finds beyond label scores, and everything outside its folder needs to show it: the fields it adds
 * to image results and to video segments (JSON Schema, each optional: the result schemas, the job schema and the
 * OpenAPI document are built from these), how the frames of an image and those of a segment merge, and how the
 * table output and the HTML report note it. `E` is one frame's evidence (OpenSignal.evidence).
 */
export interface EvidenceKind<E = unknown, I extends TProperties = TProperties, G extends TProperties = {}> {
  readonly imageFields: I
  readonly segmentFields?: G
  /** An image result's fields from the evidence of each frame scored (one for a still image; none: nothing read). */
  image(frames: readonly E[]): EvidenceFields<I>
  /** The gatherer of one segment: a run of frames where `category` is violated. */
  segment?(category: string): SegmentEvidence<E>
  /** Said after a violated category in the table row (` (list removals: "case-1", distance 3)`), or ''. */
  note?(fields: EvidenceFields<I>, category: string): string
  /** Said after a segment's line in scan-video's table, or ''. */
  segmentNote?(fields: EvidenceFields<G>, category: string): string
  /** The boxes the HTML report draws on an item. */
  marks?(fields: EvidenceFields<I>): ReportMark[]
  /** The lines the HTML report lists under an item. */
  notes?(fields: EvidenceFields<I>): string[]
}

/** An add-on as `mod models list` shows it. */
export interface AddonStatus {
  /** What users pull it by. */
  name: string
  id: string
  kind: string
  licence: string
  installed: boolean
  dir: string
  /** Bytes of the download (and of the installed file). */
  size: number
  /** Installed only: the file matched the sha256 the shipped manifest pins, and is there with its size. */
  verified?: boolean
}

/**
 * A model a signal needs that the user pulls on purpose beside the presets: `mod models pull <name>` downloads it
 * into `<cache-dir>/<name>`, `mod models add <name> <file>` installs a copy they have, `mod models list` lists it.
 */
export interface Addon {
  /** What users pull it by, and its folder under the cache. */
  readonly name: string
  /** Printed on stderr before a pull or an add writes anything (what its licence means), when there is something to say. */
  readonly notice?: string
  /** The file a copy of which installs it offline (`./320n.onnx`), and where one is found (`the PyPI wheel nudenet 3.4.2 holds it`). */
  readonly offlineCopy: {file: string; where: string}
  /** Its paragraph in `mod models pull --help`. */
  readonly help: string
  /** Its paragraph in `mod models add --help`. */
  readonly addHelp: string
  /** What a pull downloads, with the sizes and sha256 it pins. */
  manifest(): Promise<PullableManifest>
  /** Whether it is installed in the cache folder, read from its manifest without loading it. */
  status(cacheDir: string): Promise<AddonStatus>
}

/** An open signal: its model in memory (or ready to load on first use) and what the core asks of it per frame. */
export interface OpenSignal<In = unknown, Out = unknown> {
  /** Names the model and every setting that changes its output: eval's feature cache is kept per key. */
  readonly key?: string
  /** Floats per output, where fixed (an embedding's size). */
  readonly outputSize?: number
  /**
   * The shorter side, in pixels, its input is resampled to (CLIP's `resize`, the specialist's 224): an image much
   * larger than every open signal's may then be decoded smaller (decode.ts planDecode). Absent on a signal that
   * prepares frames: it reads every pixel (a hash, text, codes), and images are decoded whole.
   */
  readonly frameSide?: number
  /** Loads what its first frame would (the engine's load); eval leaves it to the first frame that needs it. */
  warm?(): Promise<void>
  /**
   * The preparing stage: one frame (already trimmed and bounded; `origin` is where it starts in the decoded
   * frame) → this signal's model input. `decoded` is the frame as decoded, before both, for a signal that must
   * see the same pixels as another path (`mod hash`). `kind` says whether the frame is a video's, for a signal
   * that reads videos only when the policy asks (text). `place` is its place among the frames prepared together
   * (an animation's frames scored; a still image is frame 0 of 1), for a signal with a budget per image (text).
   */
  prepare?(frame: RgbImage, origin: FrameOrigin, decoded: RgbImage, kind: MediaKind, place: FramePlace): In | Promise<In>
  /** One model run over the inputs of several frames, one output per input. */
  infer?(inputs: In[]): Promise<Out[]>
  /** Per category this signal feeds: its calibrated score in [0, 1], combined with the others' by the policy's weights. */
  scores?(output: Out): ReadonlyMap<string, number>
  /** Per category: the raw margin that its calibration turns into the score (what `mod calibrate` fits). */
  raw?(output: Out): ReadonlyMap<string, number>
  /** What it found in the frame beyond label scores (its Signal's evidence kind merges it); undefined: nothing, the frame was not looked at. */
  evidence?(output: Out): unknown
  /** After combination: the labels with this signal's own applied (a head blends and adds labels). */
  adjust?(labels: ScoredLabel[], outputs: FrameOutputs): ScoredLabel[]
  /** Raw logits of the labels it adds (`extraLabels`), for calibrate. */
  extraRaw?(outputs: FrameOutputs): ReadonlyMap<string, number>
  /** Labels it adds beside the policy's categories. */
  readonly extraLabels?: readonly ExtraLabel[]
  /** Its output as floats and back, for eval's feature cache; a signal without it is recomputed every run. */
  encode?(output: Out): Float32Array
  decode?(features: Float32Array): Out
  dispose(): Promise<void>
}

export interface Signal {
  readonly name: string
  /** For a person: what it is (`the NSFW specialist`). */
  readonly title: string
  /** One line for the API documentation. */
  readonly description: string
  /**
   * `model`: scores categories from frames on its own, so it can run alone (`--only`) and a category's weights
   * name it; `labels`: builds on other signals' outputs after the categories are combined (a trained head).
   */
  readonly kind: 'model' | 'labels'
  /**
   * How its findings combine with the other signals' (combination.ts): `mean` (its `scores` enter the weighted
   * mean), `revise` after the revisers it names (its `adjust` may lower or replace scores), or `max` (its `adjust`
   * only raises a category to its hit's score). Checked when a registry is built; the list's order decides nothing.
   */
  readonly combine: Combination
  /** The setup insists on it: not being installed is an error, not categories left unevaluated. */
  required?(setup: SignalSetup): boolean
  /** Other signals whose outputs it reads: they must be installed when it runs. */
  readonly needs?: readonly string[]
  /**
   * The policy switches it with `specialists: {<name>: true|false}`, and this is its state when the policy says
   * nothing: `on` (the NSFW specialist), or `off` for a signal that runs only when the policy asks for it.
   */
  readonly policySwitch?: 'on' | 'off'
  /** Its own section of the policy file (`hash_lists:`), read, checked, built and shown by the policy module. */
  readonly policy?: PolicySection
  /** Its output is the image embedding a head is trained on and reads. */
  readonly embedding?: boolean
  /** What it reports beyond label scores, and how results, segments, tables and reports show it. */
  readonly evidence?: EvidenceKind
  /** The model the user pulls on purpose for it, where it has one. */
  readonly addon?: Addon
  /**
   * Why the setup leaves it off (nothing to run), or undefined when it should run; absent: it always runs.
   * The one place each signal's on/off rule is decided.
   */
  off?(setup: SignalSetup): string | undefined
  /** How much it counts in a category's score; 0 when it does not feed the category. */
  weight(category: Category): number
  /** Opens it; a ModError `model_missing` when it is not installed. `open` holds the signals opened before it. */
  open(setup: SignalSetup, opened: ReadonlyMap<string, OpenSignal>): Promise<OpenSignal>
  /**
   * For listings, without loading any model: why it would not open (not installed), with what installs it
   * (`run \`mod models pull fast\``); undefined when it is there. A signal without it is taken as installed.
   */
  missing?(setup: SignalSetup): Promise<string | undefined>
  /** For listings, without loading any model: the id of the model it scores with. */
  modelId?(setup: SignalSetup): Promise<string>
  /** For listings, without loading any model: the labels it feeds or adds by name (a head's labels). */
  labelNames?(setup: SignalSetup): Promise<ExtraLabel[]>
}

/** A category's weight for a model signal, from the policy (`signals: {clip: 1, nsfw: 3}`). */
export function policyWeight(name: string): (category: Category) => number {
  return (category) => weightInPolicy(name, category)
}
