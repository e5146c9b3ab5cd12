import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {calibrate, roundScore, sigmoid} from '../../../src/lib/scoring/calibrate.js'

test('sigmoid is 0.5 at 0 and symmetric', () => {
  assert.is(sigmoid(0), 0.5)
  assert.ok(Math.abs(sigmoid(2) + sigmoid(-2) - 1) < 1e-15)
  assert.is(roundScore(sigmoid(3)), 0.9526)
})

test('sigmoid saturates to 0 and 1 without overflow or NaN', () => {
  assert.is(sigmoid(-1000), 0)
  assert.is(sigmoid(1000), 1)
  assert.is(sigmoid(-Number.MAX_VALUE), 0)
})

test('calibrate applies sigmoid(scale * raw + bias)', () => {
  assert.is(roundScore(calibrate(0, {scale: 0.5, bias: -3})), 0.0474)
  assert.is(calibrate(6, {scale: 0.5, bias: -3}), 0.5)
  assert.is(calibrate(0, {scale: 1, bias: 0}), 0.5)
  assert.is(roundScore(calibrate(-2, {scale: 2, bias: 1})), roundScore(sigmoid(-3)))
})

test('scores are rounded to 4 decimals', () => {
  assert.is(roundScore(0.047425873), 0.0474)
  assert.is(roundScore(0.91936725), 0.9194)
  assert.is(roundScore(0.99995), 1)
  assert.is(roundScore(0), 0)
})

test.run()
