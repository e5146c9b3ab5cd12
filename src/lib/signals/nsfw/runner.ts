/**
 * The embedded NSFW specialist as the engine runs it: the shipped model (nsfw.ts) and its preprocessing
 * (nsfw-preprocess.ts) behind one small interface, the views of a frame it looks at, and when it looks at them.
 */
import {mirrorView, NSFW_VIEW_SIZE, nsfwPreprocess} from '../../image/nsfw-preprocess.js'
import {openNsfw, type NsfwOptions} from '../../model/nsfw.js'
import {stackTensors} from '../../pipeline/stack.js'
import type {RgbImage} from '../../image/rgb.js'
import {looksAgain} from './rule.js'

export interface NsfwRunner {
  /** Floats of one view. */
  readonly viewSize: number
  /** The views of a decoded frame: the first one now, the others when asked (see nsfwViews). */
  views(frame: RgbImage): NsfwViews
  /** Class probabilities for `n` views laid end to end. */
  classify(batch: Float32Array, n: number): Promise<Float32Array[]>
  close(): Promise<void>
}

/**
 * A frame's views: the first one, which every frame is classified on, and the others laid end to end, computed
 * only for a frame whose first look is worth them (most ordinary photos are not: classifyViews).
 */
export interface NsfwViews {
  readonly first: Float32Array
  rest(): Float32Array
}

/** The share of the frame's width and height the centre view keeps. */
export const CENTRE_SHARE = 0.7

/** The views nsfwViews gives, in order. */
export const NSFW_VIEWS = ['image', 'mirror', 'centre', 'letterbox'] as const

/**
 * Four framings of the same pixels: the image squeezed to the model's square input (as nsfwjs feeds it), its
 * mirror image, its centre (the middle 70% of each side) enlarged, and the whole image undistorted in a black
 * square (letterboxed). The rule (rule.ts) keeps what they agree on. Only the first is computed here: the
 * others (three resizes in JavaScript on the event loop) when `rest` is called, which holds on to the frame.
 */
export function nsfwViews(frame: RgbImage): NsfwViews {
  const first = nsfwPreprocess(frame)
  return {first, rest: () => otherViews(frame, first)}
}

/** The mirror (the first view with its columns reversed, as resizing the mirrored image gives), centre and letterbox. */
function otherViews(frame: RgbImage, first: Float32Array): Float32Array {
  const {width, height} = frame
  const out = new Float32Array((NSFW_VIEWS.length - 1) * NSFW_VIEW_SIZE)
  mirrorView(first, 0, out, 0)
  const left = Math.floor((width * (1 - CENTRE_SHARE)) / 2)
  const top = Math.floor((height * (1 - CENTRE_SHARE)) / 2)
  const centre = {
    left,
    top,
    width: Math.max(1, Math.min(width - left, Math.round(width * CENTRE_SHARE))),
    height: Math.max(1, Math.min(height - top, Math.round(height * CENTRE_SHARE))),
  }
  nsfwPreprocess(frame, {out, offset: NSFW_VIEW_SIZE, window: centre})
  const side = Math.max(width, height)
  const letterbox = {left: -Math.floor((side - width) / 2), top: -Math.floor((side - height) / 2), width: side, height: side}
  nsfwPreprocess(frame, {out, offset: 2 * NSFW_VIEW_SIZE, window: letterbox})
  return out
}

export async function openNsfwRunner(opts: NsfwOptions = {}): Promise<NsfwRunner> {
  const model = await openNsfw(opts)
  return {
    viewSize: NSFW_VIEW_SIZE,
    views: nsfwViews,
    classify: (batch, n) => model.classify(batch, n),
    close: () => model.close(),
  }
}

/**
 * Class probabilities per frame, laid end to end (five per view), as nsfwCategoryScores reads them: the first
 * view alone where it scores too low in every category for the others to matter (most ordinary photos: one
 * run, and their other views are never computed), every view otherwise (one more run, for all such frames
 * together).
 */
export async function classifyViews(runner: NsfwRunner, frames: NsfwViews[]): Promise<Float32Array[]> {
  const size = runner.viewSize
  const first = await runner.classify(stackTensors(frames.map((f) => f.first)), frames.length)
  const rest = frames.map((f, i) => (looksAgain(first[i]) ? f.rest() : undefined))
  const again = frames.map((_, i) => i).filter((i) => (rest[i]?.length ?? 0) > 0)
  if (again.length === 0) return first
  const counts = again.map((i) => (rest[i] as Float32Array).length / size)
  const probabilities = await runner.classify(stackTensors(again.map((i) => rest[i] as Float32Array)), counts.reduce((a, b) => a + b, 0))
  const out = [...first]
  let at = 0
  again.forEach((i, k) => {
    out[i] = stackTensors([first[i], ...probabilities.slice(at, at + counts[k])])
    at += counts[k]
  })
  return out
}
