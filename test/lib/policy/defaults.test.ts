import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {
  BUILTIN_CALIBRATION,
  CUSTOM_CALIBRATION,
  DEFAULT_CATEGORIES,
  DEFAULT_NEUTRAL,
} from '../../../src/lib/policy/defaults.js'
import {calibrate} from '../../../src/lib/scoring/calibrate.js'

const SPEC_NAMES = [
  'nudity',
  'sexual_activity',
  'suggestive',
  'violence',
  'gore',
  'weapons',
  'hate_symbols',
  'drugs',
  'self_harm',
  'alcohol',
  'tobacco',
]

const byName = new Map(DEFAULT_CATEGORIES.map((c) => [c.name, c]))

test('the 11 built-in categories are exactly the specification\'s, all origin builtin', () => {
  assert.equal(
    DEFAULT_CATEGORIES.map((c) => c.name),
    SPEC_NAMES,
  )
  assert.ok(DEFAULT_CATEGORIES.every((c) => c.origin === 'builtin'))
})

test('parents: weapons, gore and self_harm under violence; sexual_activity under nudity; others none', () => {
  assert.equal(
    Object.fromEntries(DEFAULT_CATEGORIES.filter((c) => c.parent !== null).map((c) => [c.name, c.parent])),
    {sexual_activity: 'nudity', gore: 'violence', weapons: 'violence', self_harm: 'violence'},
  )
  for (const c of DEFAULT_CATEGORIES) if (c.parent !== null) assert.is(byName.get(c.parent)?.parent, null, `${c.name}'s parent is top-level`)
})

test('every category has 4 to 8 distinct prompts and at least 3 distinct negatives', () => {
  for (const c of DEFAULT_CATEGORIES) {
    assert.ok(c.prompts.length >= 4 && c.prompts.length <= 8, `${c.name} prompts`)
    assert.ok(c.negatives.length >= 3, `${c.name} negatives`)
    assert.is(new Set([...c.prompts, ...c.negatives]).size, c.prompts.length + c.negatives.length, `${c.name} duplicates`)
  }
})

test('the benign look-alikes of the issue are negatives', () => {
  assert.ok(byName.get('nudity')?.negatives.some((n) => n.includes('swimwear')))
  assert.ok(byName.get('weapons')?.negatives.some((n) => n.includes('kitchen knife')))
  assert.ok(byName.get('gore')?.negatives.some((n) => n.includes('ketchup')))
  assert.ok(byName.get('self_harm')?.negatives.some((n) => n.includes('medical')))
})

test('no default text contains red, green or blue, so the toy model embeds all of them to zero', () => {
  const texts = [...DEFAULT_CATEGORIES.flatMap((c) => [...c.prompts, ...c.negatives]), ...DEFAULT_NEUTRAL]
  assert.equal(
    texts.filter((t) => /red|green|blue/i.test(t)),
    [],
  )
})

test('there are 6 to 12 distinct neutral prompts', () => {
  assert.ok(DEFAULT_NEUTRAL.length >= 6 && DEFAULT_NEUTRAL.length <= 12)
  assert.is(new Set(DEFAULT_NEUTRAL).size, DEFAULT_NEUTRAL.length)
})

test('with raw = 0 every built-in scores well below its threshold; a custom category scores 0.5', () => {
  for (const c of DEFAULT_CATEGORIES) {
    assert.is(c.calibration, BUILTIN_CALIBRATION)
    assert.ok(calibrate(0, c.calibration) < c.threshold / 5, c.name)
  }
  assert.equal({...CUSTOM_CALIBRATION}, {scale: 1, bias: 0})
  assert.is(calibrate(0, CUSTOM_CALIBRATION), 0.5)
})

test('every built-in threshold is 0.5', () => {
  assert.ok(DEFAULT_CATEGORIES.every((c) => c.threshold === 0.5))
})

test('the defaults are frozen, so a merged policy cannot change them', () => {
  assert.ok(Object.isFrozen(DEFAULT_CATEGORIES) && Object.isFrozen(DEFAULT_CATEGORIES[0]))
  assert.ok(Object.isFrozen(DEFAULT_CATEGORIES[0].prompts) && Object.isFrozen(DEFAULT_NEUTRAL))
})

test.run()
