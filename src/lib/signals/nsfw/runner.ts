/**
 * The embedded NSFW specialist as the engine runs it: the shipped model (nsfw.ts) and its preprocessing
 * (nsfw-preprocess.ts) behind one small interface, and how its views of a frame are classified.
 */
import {NSFW_VIEW_SIZE, nsfwPreprocess} from '../../image/nsfw-preprocess.js'
import {stackTensors} from '../../pipeline/stack.js'
import {averageViews, nsfwCategoryScores} from './rule.js'
import type {RgbImage} from '../../types.js'
import {openNsfw, type NsfwOptions} from '../../model/nsfw.js'

export interface NsfwRunner {
  /** Floats of one view. */
  readonly viewSize: number
  /** The two views of a decoded frame laid end to end: the frame, then its mirror image. */
  views(frame: RgbImage): Float32Array
  /** Class probabilities for `n` views laid end to end. */
  classify(batch: Float32Array, n: number): Promise<Float32Array[]>
  close(): Promise<void>
}

export async function openNsfwRunner(opts: NsfwOptions = {}): Promise<NsfwRunner> {
  const model = await openNsfw(opts)
  return {
    viewSize: NSFW_VIEW_SIZE,
    views: (frame) => nsfwPreprocess(frame, {flip: true}),
    classify: (batch, n) => model.classify(batch, n),
    close: () => model.close(),
  }
}

/**
 * The specialist looks at the mirror image too only where its first look is uncertain (a category score within
 * this distance of 0.5), and averages the two: a mirrored second opinion pulls down chance hits on ordinary
 * photos, and frames it is sure about cost one run, not two.
 */
export const SECOND_LOOK_BAND = 0.25

function uncertain(probabilities: Float32Array): boolean {
  return Object.values(nsfwCategoryScores(probabilities)).some((s) => Math.abs(s - 0.5) < SECOND_LOOK_BAND)
}

/** Class probabilities per frame from its two views (see `views`): the first view, and the mirror where uncertain. */
export async function classifyViews(runner: NsfwRunner, frames: Float32Array[]): Promise<Float32Array[]> {
  const size = runner.viewSize
  const first = await runner.classify(stackTensors(frames.map((f) => f.subarray(0, size))), frames.length)
  const again = frames.map((_, i) => i).filter((i) => uncertain(first[i]))
  if (again.length === 0) return first
  const mirrored = await runner.classify(stackTensors(again.map((i) => frames[i].subarray(size, 2 * size))), again.length)
  const out = [...first]
  again.forEach((i, k) => (out[i] = averageViews([first[i], mirrored[k]])))
  return out
}
