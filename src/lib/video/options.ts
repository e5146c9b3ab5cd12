import {ModError} from '../errors.js'

/** How a video is sampled and when its analysis stops. */
export interface VideoSampling {
  fps: number
  minFrames: number
  stopOnViolation: boolean
}

/**
 * Below 0.01 fps (one frame per 100 s) the sampling filter asks ffmpeg for frames it cannot give in time,
 * and a long video would be decoded in full for one or two frames.
 */
export const MIN_FPS = 0.01
export const MAX_FPS = 10
export const MAX_MIN_FRAMES = 1000
export const DEFAULT_SAMPLING: Readonly<VideoSampling> = {fps: 1, minFrames: 1, stopOnViolation: false}

function bad(name: string, value: number, expected: string): ModError {
  return new ModError('bad_request', `${name}=${value} is not valid: expected ${expected}`)
}

/**
 * The sampling options with their defaults, checked: `fps` a number from 0.01 to 10 (default 1),
 * `minFrames` a whole number from 1 to 1000 (default 1), `stopOnViolation` (default false). A value out
 * of bounds is `bad_request` naming the parameter as the API spells it.
 */
export function checkVideoSampling(given: Readonly<Partial<VideoSampling>>): VideoSampling {
  const o = {
    fps: given.fps ?? DEFAULT_SAMPLING.fps,
    minFrames: given.minFrames ?? DEFAULT_SAMPLING.minFrames,
    stopOnViolation: given.stopOnViolation ?? DEFAULT_SAMPLING.stopOnViolation,
  }
  if (!(o.fps >= MIN_FPS && o.fps <= MAX_FPS)) throw bad('fps', o.fps, `a number from ${MIN_FPS} to ${MAX_FPS}`)
  if (!(Number.isInteger(o.minFrames) && o.minFrames >= 1 && o.minFrames <= MAX_MIN_FRAMES)) {
    throw bad('min_frames', o.minFrames, `a whole number from 1 to ${MAX_MIN_FRAMES}`)
  }
  return o
}
