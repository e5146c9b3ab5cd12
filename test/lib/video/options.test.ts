import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {isModError} from '../../../src/lib/errors.js'
import {checkVideoSampling, type VideoSampling} from '../../../src/lib/video/options.js'

function refusal(given: Partial<VideoSampling>): {code: string; message: string} | undefined {
  try {
    checkVideoSampling(given)
  } catch (e) {
    return isModError(e) ? {code: e.code, message: e.message} : {code: 'not a ModError', message: String(e)}
  }
  return undefined
}

test('absent options take their defaults: fps 1, minFrames 1, stopOnViolation false', () => {
  assert.equal(checkVideoSampling({}), {fps: 1, minFrames: 1, stopOnViolation: false})
  assert.equal(checkVideoSampling({fps: undefined}), {fps: 1, minFrames: 1, stopOnViolation: false})
})

test('keeps values within the bounds', () => {
  assert.equal(checkVideoSampling({fps: 0.5, minFrames: 3, stopOnViolation: true}), {fps: 0.5, minFrames: 3, stopOnViolation: true})
  assert.equal(checkVideoSampling({fps: 10, minFrames: 1000}), {fps: 10, minFrames: 1000, stopOnViolation: false})
  assert.equal(checkVideoSampling({fps: 0.01}).fps, 0.01)
})

test('refuses fps below 0.01, over 10 or not a finite number, naming the bound', () => {
  for (const fps of [0, 0.0001, 0.009, 10.01, 11, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
    assert.equal(refusal({fps}), {code: 'bad_request', message: `fps=${fps} is not valid: expected a number from 0.01 to 10`}, String(fps))
  }
})

test('refuses minFrames that is not a whole number from 1 to 1000', () => {
  for (const minFrames of [0, 1001, 1.5, -2, Number.NaN]) {
    assert.equal(refusal({minFrames}), {code: 'bad_request', message: `min_frames=${minFrames} is not valid: expected a whole number from 1 to 1000`}, String(minFrames))
  }
})

test.run()
