import {ModError} from '../errors.js'

export interface VideoQuery {
  fps: number
  minFrames: number
  stopOnViolation: boolean
}

export const MAX_FPS = 10
export const MAX_MIN_FRAMES = 1000
export const DEFAULT_VIDEO_QUERY: Readonly<VideoQuery> = {fps: 1, minFrames: 1, stopOnViolation: false}

const DECIMAL = /^(\d+(\.\d*)?|\.\d+)$/
const INTEGER = /^\d+$/

function bad(name: string, value: string, expected: string): ModError {
  return new ModError('bad_request', `${name}=${JSON.stringify(value)} is not valid: expected ${expected}`)
}

/**
 * The video query parameters (CONTRACTS §2) from their raw text, absent ones taking their defaults:
 * `fps` a number with 0 < fps <= 10 (default 1), `min_frames` an integer 1..1000 (default 1),
 * `stop_on_violation` true|false|1|0 (default false). Anything else is `bad_request` naming the bound.
 */
export function parseVideoOptions(raw: Readonly<Record<string, string | undefined>>): VideoQuery {
  const {fps: fpsText, min_frames: minText, stop_on_violation: stopText} = raw

  let fps = DEFAULT_VIDEO_QUERY.fps
  if (fpsText !== undefined) {
    fps = Number(fpsText)
    if (!DECIMAL.test(fpsText) || !(fps > 0 && fps <= MAX_FPS)) {
      throw bad('fps', fpsText, `a number greater than 0 and at most ${MAX_FPS}`)
    }
  }

  let minFrames = DEFAULT_VIDEO_QUERY.minFrames
  if (minText !== undefined) {
    minFrames = Number(minText)
    if (!INTEGER.test(minText) || minFrames < 1 || minFrames > MAX_MIN_FRAMES) {
      throw bad('min_frames', minText, `a whole number from 1 to ${MAX_MIN_FRAMES}`)
    }
  }

  let stopOnViolation = DEFAULT_VIDEO_QUERY.stopOnViolation
  if (stopText !== undefined) {
    if (!['true', 'false', '1', '0'].includes(stopText)) throw bad('stop_on_violation', stopText, 'true, false, 1 or 0')
    stopOnViolation = stopText === 'true' || stopText === '1'
  }

  return {fps, minFrames, stopOnViolation}
}
