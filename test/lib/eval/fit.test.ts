import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {balancedWeights, fitPlatt, isHeldOut, thresholdForMaxFpr, thresholdForMinRecall} from '../../../src/lib/eval/fit.js'
import {sigmoid} from '../../../src/lib/scoring/calibrate.js'

test('the held-out split depends only on content hash, seed and fraction', () => {
  const hashes = Array.from({length: 2000}, (_, i) => i.toString(16).padStart(64, '0'))
  const held = hashes.filter((h) => isHeldOut(h, 1, 0.3)).length
  assert.ok(held > 520 && held < 680, String(held))
  assert.equal(hashes.map((h) => isHeldOut(h, 1, 0.3)), hashes.map((h) => isHeldOut(h, 1, 0.3)))
  assert.not.equal(hashes.map((h) => isHeldOut(h, 1, 0.3)), hashes.map((h) => isHeldOut(h, 2, 0.3)))
  assert.is(hashes.filter((h) => isHeldOut(h, 1, 0)).length, 0)
})

test('balanced weights give both classes the same total', () => {
  assert.equal(balancedWeights([true, false, false, false]), {pos: 2, neg: 4 / 6})
  assert.equal(balancedWeights([false, false]), {pos: 0, neg: 0.5})
})

test('Platt scaling recovers the slope and offset of logistic data', () => {
  // Every raw value appears with the share of positives sigmoid(0.5 * raw - 2) (balanced classes at raw = 4).
  const raw: number[] = []
  const y: boolean[] = []
  for (let r = -6; r <= 14; r += 0.5) {
    const p = sigmoid(0.5 * r - 2)
    const n = 200
    const pos = Math.round(p * n)
    for (let k = 0; k < n; k++) {
      raw.push(r)
      y.push(k < pos)
    }
  }
  const fit = fitPlatt(raw, y, 0)
  assert.ok(fit)
  // Balanced weighting moves the offset by log(negatives / positives) of the data.
  const positives = y.filter(Boolean).length
  const shift = Math.log((y.length - positives) / positives)
  assert.ok(Math.abs(fit.scale - 0.5) < 0.02, JSON.stringify(fit))
  assert.ok(Math.abs(fit.bias - (-2 + shift)) < 0.1, JSON.stringify(fit))
})

test('Platt scaling: separable data gives a finite positive scale; reversed data none', () => {
  const fit = fitPlatt([1, 2, 3, 10, 11, 12], [false, false, false, true, true, true])
  assert.ok(fit && fit.scale > 0 && Number.isFinite(fit.bias))
  assert.ok(sigmoid(fit.scale * 10 + fit.bias) > 0.5 && sigmoid(fit.scale * 3 + fit.bias) < 0.5)
  assert.is(fitPlatt([1, 2, 10, 11], [true, true, false, false]), undefined)
  assert.is(fitPlatt([1, 2], [true, true]), undefined)
})

test('threshold for a maximum share of safe images flagged', () => {
  const safe = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95]
  const positives = [0.55, 0.85, 0.97]
  // 10% of 10 safe images: one may be flagged (0.95), so 0.9 must not be: halfway to the next score, 0.93.
  assert.is(thresholdForMaxFpr(positives, safe, 0.1), 0.925)
  // None may be flagged: above 0.95, halfway to 0.97.
  assert.is(thresholdForMaxFpr(positives, safe, 0), 0.96)
  // Nothing above the highest safe score: just above it.
  assert.is(thresholdForMaxFpr([0.1], [0.3, 0.2], 0), 0.3001)
  // Everything may be flagged: the lowest score.
  assert.is(thresholdForMaxFpr([0.4], [0.3, 0.2], 1), 0.2)
})

test('threshold for a minimum recall', () => {
  const positives = [0.9, 0.8, 0.6, 0.3]
  const others = [0.5, 0.2]
  // 75% of 4: the three highest, so at most 0.6 and above 0.5: halfway.
  assert.is(thresholdForMinRecall(positives, others, 0.75), 0.55)
  assert.is(thresholdForMinRecall(positives, others, 1), 0.25)
  assert.is(thresholdForMinRecall([0.4, 0.3], [], 1), 0.3)
})

test.run()
