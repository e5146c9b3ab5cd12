import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {buildPolicy} from '../../../../src/lib/config/policy.js'
import {isModError} from '../../../../src/lib/errors.js'
import {BUILTIN_CALIBRATION, CUSTOM_CALIBRATION} from '../../../../src/lib/policy/defaults.js'
import type {Category, Policy} from '../../../../src/lib/policy/types.js'
import {combineSignals} from '../../../../src/lib/scoring/combine.js'
import {finishLabel} from '../../../../src/lib/scoring/result.js'
import {cosine, logMeanExp, policyPrompts, rawScore, zeroShotScores} from '../../../../src/lib/signals/clip/zero-shot.js'
import type {Label} from '../../../../src/lib/types.js'

const IMAGE = Float32Array.from([1, 0, 0])
const ZERO = Float32Array.from([0, 0, 0])

/** A unit vector whose cosine with IMAGE is `cos`. */
const at = (cos: number) => Float32Array.from([cos, Math.sqrt(1 - cos * cos), 0])

function category(name: string, fields: Partial<Category> = {}): Category {
  return {
    name,
    parent: null,
    threshold: 0.5,
    prompts: [],
    negatives: [],
    calibration: CUSTOM_CALIBRATION,
    origin: 'custom',
    signals: {clip: 1},
    ...fields,
  }
}

const policy = (categories: Category[], neutral: string[] = []): Policy => ({trim_borders: true, categories, neutral, specialists: {nsfw: false}, sections: {}})

test('cosine similarity of unnormalised vectors', () => {
  assert.ok(Math.abs(cosine(Float32Array.from([3, 0, 0]), Float32Array.from([2, 2, 0])) - Math.SQRT1_2) < 1e-7)
})

test('a cosine with a zero vector is 0, never NaN', () => {
  assert.is(cosine(IMAGE, ZERO), 0)
  assert.is(cosine(ZERO, ZERO), 0)
})

/** The zero-shot signal alone, as labels in policy order (rounded, violation decided). */
function scoreCategories(image: Float32Array, p: Policy, prompts: ReadonlyMap<string, Float32Array>): Label[] {
  return combineSignals(p, {clip: zeroShotScores(image, p, prompts)}).map(finishLabel)
}

test('log-mean-exp is stable for large values and 0 for none', () => {
  assert.ok(Math.abs(logMeanExp([1000, 1000]) - 1000) < 1e-9)
  assert.ok(Math.abs(logMeanExp([3, 1]) - Math.log((Math.exp(3) + Math.exp(1)) / 2)) < 1e-12)
  assert.is(logMeanExp([]), 0)
  assert.ok(Math.abs(logMeanExp(new Array(1_000_000).fill(2)) - 2) < 1e-9, 'a million values (a huge prompt list)')
})

test('raw = LME(100·positive sims) − LME(100·reference sims); empty references count 0', () => {
  assert.ok(Math.abs(rawScore([0.03], []) - 3) < 1e-12)
  assert.ok(Math.abs(rawScore([0.03], [0.03]) - 0) < 1e-12)
  assert.ok(Math.abs(rawScore([0.03], [0.03, 0]) - 0.6445598289862033) < 1e-12)
})

test('raw = 0 gives sigmoid(bias): a built-in calibration scores 0.0474', () => {
  const prompts = new Map([
    ['p', at(0)],
    ['n', at(0)],
  ])
  const labels = scoreCategories(IMAGE, policy([category('a', {prompts: ['p'], calibration: BUILTIN_CALIBRATION, origin: 'builtin'})], ['n']), prompts)
  assert.equal(labels, [{name: 'a', score: 0.0474, threshold: 0.5, parent: null, violated: false, origin: 'builtin'}])
})

test('a negative that fits the image lowers the score', () => {
  const prompts = new Map([
    ['p', at(0.03)],
    ['neg', at(0.03)],
    ['n', at(0)],
  ])
  const without = scoreCategories(IMAGE, policy([category('a', {prompts: ['p']})], ['n']), prompts)
  const withNeg = scoreCategories(IMAGE, policy([category('a', {prompts: ['p'], negatives: ['neg']})], ['n']), prompts)
  assert.is(without[0].score, 0.9526)
  assert.is(withNeg[0].score, 0.6558)
})

test('several positives and references combine by log-mean-exp', () => {
  const prompts = new Map([
    ['p1', at(0.03)],
    ['p2', at(0.01)],
    ['neg', at(0.02)],
    ['n1', at(0)],
    ['n2', at(-0.01)],
  ])
  const cats = [
    category('custom', {prompts: ['p1', 'p2'], negatives: ['neg']}),
    category('builtin', {prompts: ['p1', 'p2'], negatives: ['neg'], calibration: BUILTIN_CALIBRATION, origin: 'builtin'}),
  ]
  const labels = scoreCategories(IMAGE, policy(cats, ['n1', 'n2']), prompts)
  assert.equal(
    labels.map((l) => l.score),
    [0.7962, 0.0896],
  )
})

test('a prompt that is both a negative and a neutral prompt counts once', () => {
  const prompts = new Map([
    ['p', at(0.03)],
    ['n', at(0)],
  ])
  const once = scoreCategories(IMAGE, policy([category('a', {prompts: ['p']})], ['n']), prompts)
  const both = scoreCategories(IMAGE, policy([category('a', {prompts: ['p'], negatives: ['n']})], ['n']), prompts)
  assert.is(both[0].score, once[0].score)
})

test('zero-vector prompts and a zero image give sigmoid(bias), never NaN', () => {
  const prompts = new Map([
    ['p', ZERO],
    ['n', ZERO],
  ])
  const labels = scoreCategories(ZERO, policy([category('a', {prompts: ['p']})], ['n']), prompts)
  assert.is(labels[0].score, 0.5)
  assert.is(labels[0].violated, true)
})

test('a score equal to its threshold is a violation', () => {
  const prompts = new Map([['p', at(0)]])
  const at05 = scoreCategories(IMAGE, policy([category('a', {prompts: ['p'], threshold: 0.5})]), prompts)
  const above = scoreCategories(IMAGE, policy([category('a', {prompts: ['p'], threshold: 0.5001})]), prompts)
  assert.is(at05[0].violated, true)
  assert.is(above[0].violated, false)
})

test('labels carry the category name, parent, threshold and origin, in policy order', () => {
  const prompts = new Map([['p', at(0.5)]])
  const cats = [category('child', {prompts: ['p'], parent: 'top', threshold: 0.9}), category('top', {prompts: ['p']})]
  assert.equal(
    scoreCategories(IMAGE, policy(cats), prompts).map((l) => [l.name, l.parent, l.threshold, l.origin]),
    [
      ['child', 'top', 0.9, 'custom'],
      ['top', null, 0.5, 'custom'],
    ],
  )
})

test('on the toy model a custom "red" category flags a red image, a blue one stays safe, built-ins stay safe', () => {
  const p = buildPolicy({categories: [{name: 'redness', prompts: ['red']}]})
  const prompts = new Map(policyPrompts(p).map((text) => [text, text === 'red' ? Float32Array.from([1, 0, 0, 0]) : new Float32Array(4)]))
  const red = scoreCategories(Float32Array.from([1.93, -1.75, -1.48, 0]), p, prompts)
  const blue = scoreCategories(Float32Array.from([-1.79, -1.75, 2.15, 0]), p, prompts)
  const redness = (labels: typeof red) => labels.find((l) => l.name === 'redness')
  assert.equal(redness(red), {name: 'redness', score: 1, threshold: 0.5, parent: null, violated: true, origin: 'custom'})
  assert.is(redness(blue)?.score, 0)
  assert.is(redness(blue)?.violated, false)
  for (const labels of [red, blue]) {
    const builtins = labels.filter((l) => l.origin === 'builtin')
    assert.is(builtins.length, 11)
    assert.ok(builtins.every((l) => l.score === 0.0474 && !l.violated))
  }
})

test('policyPrompts lists every distinct prompt, negative and neutral prompt once, in first-use order', () => {
  const p = policy(
    [category('a', {prompts: ['x', 'y'], negatives: ['z']}), category('b', {prompts: ['y', 'w'], negatives: ['n']})],
    ['n', 'm'],
  )
  assert.equal(policyPrompts(p), ['x', 'y', 'z', 'w', 'n', 'm'])
})

test('a prompt without an embedding is an internal error', () => {
  try {
    scoreCategories(IMAGE, policy([category('a', {prompts: ['missing']})]), new Map())
    assert.unreachable()
  } catch (e) {
    assert.ok(isModError(e))
    assert.is(e.code, 'internal')
    assert.match(e.message, 'missing')
  }
})

test.run()
