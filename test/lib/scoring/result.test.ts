import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {buildResult, finishLabel, mergeFrameLabels, type ScoredLabel} from '../../../src/lib/scoring/result.js'

function scored(name: string, score: number, extra: Partial<ScoredLabel> = {}): ScoredLabel {
  return {name, score, threshold: 0.5, parent: null, origin: 'builtin', ...extra}
}

const label = (name: string, score: number, extra: Partial<ScoredLabel> = {}) => finishLabel(scored(name, score, extra))

test('finishLabel rounds the score and decides the violation on the rounded score', () => {
  assert.equal(label('x', 0.49996), {name: 'x', score: 0.5, threshold: 0.5, parent: null, violated: true, origin: 'builtin'})
  assert.is(label('x', 0.49994).violated, false)
  assert.is(label('x', 0.49994).score, 0.4999)
})

test('a score equal to the threshold is a violation', () => {
  assert.is(label('x', 0.7, {threshold: 0.7}).violated, true)
  assert.is(label('x', 0.6999, {threshold: 0.7}).violated, false)
})

test('scores are clamped to [0, 1]', () => {
  assert.is(label('x', 1.2).score, 1)
  assert.is(label('x', -0.1).score, 0)
})

test('labels are sorted by score descending, then by name', () => {
  const r = buildResult('a.jpg', [label('b', 0.2), label('c', 0.9), label('a', 0.2), label('d', 0.5)])
  assert.equal(
    r.labels.map((l) => [l.name, l.score]),
    [
      ['c', 0.9],
      ['d', 0.5],
      ['a', 0.2],
      ['b', 0.2],
    ],
  )
})

test('violations are the labels at or above their threshold, in label order, with confidence and parent', () => {
  const r = buildResult('beach.jpg', [
    label('weapons', 0.91, {parent: 'violence'}),
    label('violence', 0.3),
    label('alcohol', 0.6, {threshold: 0.6}),
    label('redness', 0.55, {threshold: 0.7, origin: 'custom'}),
  ])
  assert.is(r.source, 'beach.jpg')
  assert.is(r.is_safe, false)
  assert.equal(r.violations, [
    {name: 'weapons', confidence: 0.91, parent: 'violence', threshold: 0.5},
    {name: 'alcohol', confidence: 0.6, parent: null, threshold: 0.6},
  ])
  assert.equal(r.labels[0], {name: 'weapons', score: 0.91, threshold: 0.5, parent: 'violence', violated: true, origin: 'builtin'})
})

test('a violated child does not add its parent', () => {
  const r = buildResult('x', [label('gore', 0.8, {parent: 'violence'}), label('violence', 0.1)])
  assert.equal(r.violations.map((v) => v.name), ['gore'])
  assert.is(r.labels.find((l) => l.name === 'violence')?.violated, false)
})

test('an image with no label at its threshold is safe', () => {
  const r = buildResult('x', [label('a', 0.1), label('b', 0.4999)])
  assert.is(r.is_safe, true)
  assert.equal(r.violations, [])
})

test('scores stay unrounded until the result: 0.49996 and 0.00004 are rounded once, at the end', () => {
  const r = buildResult('x', [scored('a', 0.49996), scored('b', 0.00004)])
  assert.equal(r.labels.map((l) => [l.name, l.score, l.violated]), [['a', 0.5, true], ['b', 0, false]])
})

test('buildResult carries the categories that were not evaluated, [] by default', () => {
  assert.equal(buildResult('x', [scored('a', 0.1)]).not_evaluated, [])
  assert.equal(buildResult('x', [scored('a', 0.1)], ['weapons']).not_evaluated, ['weapons'])
})

test('frames merge to each label\'s maximum score', () => {
  const merged = mergeFrameLabels([
    [scored('a', 0.2), scored('b', 0.7, {parent: 'a'})],
    [scored('a', 0.6), scored('b', 0.1, {parent: 'a'})],
    [scored('a', 0.4), scored('b', 0.3, {parent: 'a'})],
  ])
  assert.equal(merged, [
    {name: 'a', score: 0.6, threshold: 0.5, parent: null, origin: 'builtin'},
    {name: 'b', score: 0.7, threshold: 0.5, parent: 'a', origin: 'builtin'},
  ])
  assert.equal(mergeFrameLabels([]), [])
})

test.run()
