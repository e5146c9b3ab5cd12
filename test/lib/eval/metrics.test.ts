import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {computeMetrics, histogram, prCurve, SWEEP_THRESHOLDS, type ScoredSample} from '../../../src/lib/eval/metrics.js'

// Two labels, thresholds 0.5 (weapons) and 0.7 (gore); scores are [weapons, gore].
const labels = [
  {name: 'weapons', threshold: 0.5},
  {name: 'gore', threshold: 0.7},
]
const samples: ScoredSample[] = [
  {truth: ['weapons'], scores: [0.9, 0.1]}, // weapons flagged
  {truth: ['weapons'], scores: [0.6, 0.8]}, // weapons and gore flagged
  {truth: ['weapons'], scores: [0.2, 0.1]}, // missed
  {truth: ['gore'], scores: [0.55, 0.75]}, // gore flagged, weapons flagged wrongly
  {truth: ['weapons', 'gore'], scores: [0.7, 0.3]}, // weapons flagged, gore missed
  {truth: [], scores: [0.1, 0.1]}, // safe, clean
  {truth: [], scores: [0.5, 0.1]}, // safe, weapons flagged (score = threshold)
  {truth: [], scores: [0.3, 0.69]}, // safe, clean
  {truth: [], scores: [0.8, 0.9]}, // safe, both flagged
]

test('per-label figures match a hand count', () => {
  const m = computeMetrics(samples, labels)
  const weapons = m.labels[0]
  // Images with weapons: 1, 2, 3, 5 → flagged 1, 2, 5. Flagged without weapons: 4, 7, 9.
  assert.equal(
    {p: weapons.positives, tp: weapons.true_positives, fp: weapons.false_positives, fn: weapons.false_negatives, safe: weapons.safe_flagged},
    {p: 4, tp: 3, fp: 3, fn: 1, safe: 2},
  )
  assert.is(weapons.recall, 3 / 4)
  assert.is(weapons.precision, 3 / 6)
  assert.is(weapons.safe_fpr, 2 / 4)
  const gore = m.labels[1]
  // Images with gore: 4, 5 → flagged 4. Flagged without gore: 2, 9.
  assert.equal([gore.positives, gore.true_positives, gore.false_positives, gore.safe_flagged], [2, 1, 2, 1])
  assert.is(gore.recall, 1 / 2)
  assert.is(gore.precision, 1 / 3)
  assert.is(gore.safe_fpr, 1 / 4)
})

test('headline figures: mean recall over labels, safe images flagged by any label', () => {
  const m = computeMetrics(samples, labels)
  assert.is(m.images, 9)
  assert.is(m.safe_images, 4)
  assert.is(m.average_recall, (3 / 4 + 1 / 2) / 2)
  assert.is(m.safe_flagged, 2 / 4)
})

test('confusion: rows are true labels and safe, columns flagged labels and (none)', () => {
  const m = computeMetrics(samples, labels)
  assert.equal(m.confusion.rows, ['weapons', 'gore', 'safe'])
  assert.equal(m.confusion.columns, ['weapons', 'gore', '(none)'])
  assert.equal(m.confusion.counts, [
    [3, 1, 1],
    [2, 1, 0],
    [2, 1, 2],
  ])
})

test('the sweep gives the figures at each threshold from 0.05 to 0.95', () => {
  const m = computeMetrics(samples, labels)
  assert.equal(m.sweep.weapons.map((p) => p.threshold), [...SWEEP_THRESHOLDS])
  const at = (t: number) => m.sweep.weapons.find((p) => p.threshold === t)
  assert.equal(at(0.65), {threshold: 0.65, recall: 2 / 4, precision: 2 / 3, safe_fpr: 1 / 4})
  assert.equal(at(0.95), {threshold: 0.95, recall: 0, precision: null, safe_fpr: 0})
})

test('a label without images has null recall and is left out of the average', () => {
  const m = computeMetrics(
    [
      {truth: ['a'], scores: [0.9, 0.9]},
      {truth: [], scores: [0.1, 0.9]},
    ],
    [
      {name: 'a', threshold: 0.5},
      {name: 'b', threshold: 0.5},
    ],
  )
  assert.is(m.labels[1].recall, null)
  assert.is(m.labels[1].safe_fpr, 1)
  assert.is(m.average_recall, 1)
  assert.equal(m.confusion.rows, ['a', 'safe'])
})

test('no safe images: safe figures are null', () => {
  const m = computeMetrics([{truth: ['a'], scores: [0.9]}], [{name: 'a', threshold: 0.5}])
  assert.is(m.safe_flagged, null)
  assert.is(m.labels[0].safe_fpr, null)
})

test('precision-recall curve: one point per distinct score, highest threshold first', () => {
  const curve = prCurve(samples, 'gore', 1)
  // Scores of gore, descending: 0.9(safe) 0.8(w) 0.75(g) 0.69(safe) 0.3(w+g) 0.1 ×4
  assert.equal(curve.map((p) => p.threshold), [0.9, 0.8, 0.75, 0.69, 0.3, 0.1])
  assert.equal(curve[2], {threshold: 0.75, recall: 0.5, precision: 1 / 3})
  assert.equal(curve[4], {threshold: 0.3, recall: 1, precision: 2 / 5})
  assert.equal(prCurve(samples, 'gore', 1, 3).map((p) => p.threshold), [0.9, 0.69, 0.1])
  assert.equal(prCurve([{truth: [], scores: [0.4]}], 'x', 0), [])
})

test('histogram: 20 bins of the label\'s images, safe images and the rest', () => {
  const h = histogram(samples, 'weapons', 0)
  assert.is(h.edges.length, 20)
  assert.is(h.edges[10], 0.5)
  assert.is(h.positives.reduce((a, b) => a + b), 4)
  assert.is(h.positives[18], 1) // 0.9
  assert.is(h.safe[10], 1) // 0.5
  assert.is(h.others[11], 1) // 0.55
  assert.is(histogram([{truth: [], scores: [1]}], 'x', 0).safe[19], 1)
})

test.run()
