import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {isModError} from '../../../src/lib/errors.js'
import {parseVideoOptions} from '../../../src/lib/video/options.js'

function refusal(raw: Record<string, string>): {code: string; message: string} | undefined {
  try {
    parseVideoOptions(raw)
  } catch (e) {
    return isModError(e) ? {code: e.code, message: e.message} : {code: 'not a ModError', message: String(e)}
  }
  return undefined
}

test('absent parameters take their defaults: fps 1, min_frames 1, stop_on_violation false', () => {
  assert.equal(parseVideoOptions({}), {fps: 1, minFrames: 1, stopOnViolation: false})
  assert.equal(parseVideoOptions({fps: undefined, other: 'x'}), {fps: 1, minFrames: 1, stopOnViolation: false})
})

test('reads values within the bounds', () => {
  assert.equal(parseVideoOptions({fps: '0.5', min_frames: '3', stop_on_violation: 'true'}), {fps: 0.5, minFrames: 3, stopOnViolation: true})
  assert.equal(parseVideoOptions({fps: '10', min_frames: '1000', stop_on_violation: '1'}), {fps: 10, minFrames: 1000, stopOnViolation: true})
  assert.equal(parseVideoOptions({fps: '.25', min_frames: '1', stop_on_violation: 'false'}), {fps: 0.25, minFrames: 1, stopOnViolation: false})
  assert.equal(parseVideoOptions({stop_on_violation: '0'}).stopOnViolation, false)
})

test('refuses fps outside 0 < fps <= 10 or not a plain number, naming the bound', () => {
  for (const fps of ['0', '0.0', '10.01', '11', '-1', 'abc', '', ' 1', 'Infinity', '1e1', '0x5']) {
    assert.equal(refusal({fps}), {code: 'bad_request', message: `fps=${JSON.stringify(fps)} is not valid: expected a number greater than 0 and at most 10`}, fps)
  }
})

test('refuses min_frames that is not a whole number from 1 to 1000', () => {
  for (const minFrames of ['0', '1001', '1.5', '-2', 'two', '']) {
    assert.equal(refusal({min_frames: minFrames})?.message, `min_frames=${JSON.stringify(minFrames)} is not valid: expected a whole number from 1 to 1000`, minFrames)
  }
})

test('refuses stop_on_violation other than true, false, 1 or 0', () => {
  for (const stop of ['yes', 'TRUE', '2', '']) {
    assert.equal(refusal({stop_on_violation: stop}), {code: 'bad_request', message: `stop_on_violation=${JSON.stringify(stop)} is not valid: expected true, false, 1 or 0`}, stop)
  }
})

test.run()
