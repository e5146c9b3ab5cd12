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
import {JUDGE_VIEWS, passesGate} from './rule.js'

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

/** A frame's views: the gate's, which every frame is classified on, and the judge's JUDGE_VIEWS laid end to end. */
export interface NsfwViews {
  readonly first: Float32Array
  rest(): Promise<Float32Array>
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
  return {
    first: nsfwPreprocess(square, {side: gateSide}),
    async rest() {
      const size = nsfwViewSize(judgeSide)
      const out = new Float32Array(JUDGE_VIEWS.length * size)
      const [centre, letterbox] = await Promise.all([
        resampleSquare(frame, CANONICAL_SIDE, {window: centreWindow(frame.width, frame.height)}),
        resampleSquare(frame, CANONICAL_SIDE, {letterbox: true}),
      ])
      ;[square, centre, letterbox].forEach((s, i) => nsfwPreprocess(s, {side: judgeSide, out, offset: i * size}))
      return out
    },
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
 * followed by the judge's JUDGE_VIEWS otherwise (one more run for each such frame).
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
  const judged: Float32Array[] = []
  // One frame's views a run (the arena note above).
  for (const frameViews of views) judged.push(...(await runner.judge.classify(frameViews, per)))
  const out = [...first]
  again.forEach((i, k) => {
    out[i] = stackTensors([first[i], ...judged.slice(k * per, (k + 1) * per)])
  })
  return out
}
