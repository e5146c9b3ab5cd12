/**
 * The embedded NSFW specialist as the engine runs it: two shipped models (model.ts) and their preprocessing
 * (preprocess.ts) behind one small interface, the views of a frame they look at, and when the second looks.
 *
 * Every view starts from one canonical image: the frame (or a window of it) resampled by libvips to CANONICAL_SIDE
 * pixels square with an antialiasing filter (image/square.ts), then resized to the model's input as nsfwjs resizes
 * it. Both models were trained on images resized to their input with Keras's default nearest-neighbour
 * interpolation (GantMan/nsfw_model, training/*_transfer: `flow_from_directory` with no `interpolation`), so they
 * expect sharp inputs, and nsfwjs's bilinear resize with aligned corners of a large photo reads a few pixels out of
 * many: the score then depends on the size the photo was uploaded at. Resampling to a fixed size first makes the
 * model's input the same for a photo and its resized copies, and the last step (448 to 224 or 299) stays a
 * sampling close to the training's.
 */
import {nsfwPreprocess, nsfwViewSize} from './preprocess.js'
import type {RgbImage} from '../../image/rgb.js'
import {lazy} from '../../lazy.js'
import {resampleSquare} from '../../image/square.js'
import type {Box} from '../../image/trim.js'
import {NSFW_MODELS} from './manifest.js'
import {openNsfw, type NsfwOptions} from './model.js'
import {stackTensors} from '../../pipeline/stack.js'
import {JUDGE_VIEWS, passesGate, turnCouldRaise, turnsWorthLooking, turnToJudge} from './rule.js'

/** Side of the canonical square every view starts from: twice the small model's input, 1.5 times the large one's. */
export const CANONICAL_SIDE = 448

/** The share of the frame's width and height the centre view keeps. */
export const CENTRE_SHARE = 0.7

/** One classifier of the cascade: five class probabilities for each of `n` views laid end to end. */
export interface NsfwClassifier {
  /** Floats of one view. */
  readonly viewSize: number
  classify(batch: Float32Array, n: number): Promise<Float32Array[]>
}

export interface NsfwRunner {
  /** The small model, which looks at every frame. */
  readonly gate: NsfwClassifier
  /** The large model, which looks again at the frames the gate lets through. */
  readonly judge: NsfwClassifier
  /** Opens the judge now, if it opens on first need: so that no frame waits for its opening. */
  openJudge?(): Promise<void>
  /** The views of a decoded frame: the gate's now, the judge's when asked. */
  views(frame: RgbImage): Promise<NsfwViews>
  close(): Promise<void>
}

/**
 * A frame's views: the gate's, which every frame is classified on, its quarter turns, and the judge's JUDGE_VIEWS
 * laid end to end, of the frame as given or turned.
 */
export interface NsfwViews {
  readonly first: Float32Array
  /** The gate's view turned 1, 2 and 3 quarters clockwise, laid end to end. */
  turns(): Float32Array
  /** The judge's views of the frame turned `quarters` clockwise (0, the default: as given). */
  rest(quarters?: Quarters): Promise<Float32Array>
}

/** Quarter turns clockwise. */
export type Quarters = 0 | 1 | 2 | 3

/**
 * Square views of side `side` (RGB, channels last) laid end to end, each turned `quarters` clockwise. A turned copy of
 * a view is the view of the turned frame but for half a pixel of rounding (libvips' resampling, the centre window's
 * edges), as the resampling and the resize to the model's side treat both axes alike: turning the view is a copy,
 * where making the turned frame's views would resample it again. Written into `out` from `offset` when given (a new
 * array otherwise), which is returned.
 */
export function turnViews(views: Float32Array, side: number, quarters: Quarters, {out = new Float32Array(views.length), offset = 0}: {out?: Float32Array; offset?: number} = {}): Float32Array {
  const size = side * side * 3
  if (views.length % size !== 0) throw new RangeError(`turnViews: ${views.length} floats are not views of side ${side}`)
  if (offset < 0 || offset + views.length > out.length) throw new RangeError(`turnViews: ${views.length} floats at offset ${offset} do not fit in ${out.length}`)
  if (quarters === 0) {
    out.set(views, offset)
    return out
  }
  const last = side - 1
  for (let base = 0; base < views.length; base += size) {
    for (let y = 0; y < side; y++) {
      for (let x = 0; x < side; x++) {
        // The pixel that lands at (x, y): a clockwise quarter brings the left column, read upwards, to the top row.
        const from = quarters === 1 ? (last - x) * side + y : quarters === 2 ? (last - y) * side + (last - x) : x * side + (last - y)
        const o = offset + base + 3 * (y * side + x)
        const i = base + 3 * from
        out[o] = views[i]
        out[o + 1] = views[i + 1]
        out[o + 2] = views[i + 2]
      }
    }
  }
  return out
}

/** The middle CENTRE_SHARE of each side of a frame. */
export function centreWindow(width: number, height: number): Box {
  const left = Math.floor((width * (1 - CENTRE_SHARE)) / 2)
  const top = Math.floor((height * (1 - CENTRE_SHARE)) / 2)
  return {
    left,
    top,
    width: Math.max(1, Math.min(width - left, Math.round(width * CENTRE_SHARE))),
    height: Math.max(1, Math.min(height - top, Math.round(height * CENTRE_SHARE))),
  }
}

/**
 * The views of a frame for models of input sides `gateSide` and `judgeSide`: the gate's is the canonical square
 * at its side; the judge's are the same square, the centre window's square, and the whole frame letterboxed in
 * a black square, each at its side. The judge's two other squares are resampled only when `rest` is called.
 */
export async function nsfwViews(frame: RgbImage, gateSide: number = NSFW_MODELS.mobilenet_v2.side, judgeSide: number = NSFW_MODELS.inception_v3.side): Promise<NsfwViews> {
  const square = await resampleSquare(frame, CANONICAL_SIDE)
  const first = nsfwPreprocess(square, {side: gateSide})
  const judged = lazy(async () => {
    const size = nsfwViewSize(judgeSide)
    const out = new Float32Array(JUDGE_VIEWS.length * size)
    const [centre, letterbox] = await Promise.all([
      resampleSquare(frame, CANONICAL_SIDE, {window: centreWindow(frame.width, frame.height)}),
      resampleSquare(frame, CANONICAL_SIDE, {letterbox: true}),
    ])
    ;[square, centre, letterbox].forEach((s, i) => nsfwPreprocess(s, {side: judgeSide, out, offset: i * size}))
    return out
  })
  return {
    first,
    turns: () => {
      const out = new Float32Array(3 * first.length)
      for (const q of [1, 2, 3] as const) turnViews(first, gateSide, q, {out, offset: (q - 1) * first.length})
      return out
    },
    rest: async (quarters = 0) => (quarters === 0 ? judged.get() : turnViews(await judged.get(), judgeSide, quarters)),
  }
}

/**
 * Both shipped models with the same options. The gate opens now; the judge on first need (`judge.classify`) or
 * `openJudge`: most frames never reach it, and opening it (its 88 MB optimised graph) costs a scan of a few ordinary
 * images about 0.1 s of CPU and its memory. A failure closes what opened.
 */
export async function openNsfwRunner(opts: Omit<NsfwOptions, 'model'> = {}): Promise<NsfwRunner> {
  const gate = await openNsfw({...opts, model: 'mobilenet_v2'})
  const judgeSide = NSFW_MODELS.inception_v3.side
  const opened = lazy(() => openNsfw({...opts, model: 'inception_v3'}))
  return {
    gate,
    judge: {viewSize: nsfwViewSize(judgeSide), classify: async (batch, n) => (await opened.get()).classify(batch, n)},
    openJudge: async () => void (await opened.get()),
    views: (frame) => nsfwViews(frame, gate.side, judgeSide),
    close: async () => {
      const judge = opened.current()
      opened.reset()
      await Promise.all([gate.close(), judge?.then((j) => j.close(), () => undefined)])
    },
  }
}

/**
 * Class probabilities per frame, laid end to end (five per view), as nsfwJudgement reads them: the gate's view
 * alone where it stops the frame (most ordinary photos: one small run, and the judge's views are never made),
 * followed by the judge's JUDGE_VIEWS otherwise (one more run for each such frame, and one of the gate on the
 * frame's three quarter turns unless none could be telling enough: turnsWorthLooking); then, where the gate finds a
 * turn clearly more telling (turnToJudge) and the judge's look at the turn's image view could raise a score
 * (turnCouldRaise), the gate's view of that turn and the judge's views of it (two more runs).
 *
 * The judge runs on one frame's views at a time. Its time per view is the same in any batch (25-27 ms a view from 1
 * to 24 views on two cores), while onnxruntime's arena keeps what its largest run needed: eight frames' 24 views in
 * one run held a scan of swimwear photos at 1.45 GB and a video at 10 fps at 1.1 GB, where one frame's three hold
 * 0.86 and 0.55 GB, as fast or faster, with the same scores.
 */
export async function classifyViews(runner: Pick<NsfwRunner, 'gate' | 'judge'>, frames: NsfwViews[]): Promise<Float32Array[]> {
  const first = await runner.gate.classify(stackTensors(frames.map((f) => f.first)), frames.length)
  const again = frames.map((_, i) => i).filter((i) => passesGate(first[i]))
  if (again.length === 0) return first
  const views = await Promise.all(again.map((i) => frames[i].rest()))
  const per = JUDGE_VIEWS.length
  const out = [...first]
  // One frame's views a run (the arena note above), the gate's turns as the judge's.
  for (const [k, i] of again.entries()) {
    const turns = turnsWorthLooking(first[i]) ? await runner.gate.classify(frames[i].turns(), 3) : undefined
    const turn = turns ? turnToJudge(first[i], turns) : 0
    const given = stackTensors([first[i], ...(await runner.judge.classify(views[k], per))])
    out[i] = turns && turn > 0 ? await withTurn(runner.judge, given, turns[turn - 1], await frames[i].rest(turn)) : given
  }
  return out
}

/**
 * A frame's probabilities (`given`) followed by those of its quarter turn (the gate's `gate` and the judge's on the
 * turn's `views`), or `given` alone where the turn's image view shows the turn cannot raise a score (turnCouldRaise):
 * the same scores for one judge view instead of three.
 */
async function withTurn(judge: NsfwClassifier, given: Float32Array, gate: Float32Array, views: Float32Array): Promise<Float32Array> {
  const [image] = await judge.classify(views.subarray(0, judge.viewSize), 1)
  if (!turnCouldRaise(given, image)) return given
  const others = await judge.classify(views.subarray(judge.viewSize), JUDGE_VIEWS.length - 1)
  return stackTensors([given, gate, image, ...others])
}
