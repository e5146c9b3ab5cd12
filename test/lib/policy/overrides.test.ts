import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {buildPolicy} from '../../../src/lib/config/policy.js'
import {applyOverrides, parseThreshold, parseThresholds} from '../../../src/lib/policy/overrides.js'

test('--threshold takes CATEGORY=VALUE with a decimal value', () => {
  assert.equal(parseThreshold('nudity=0.3'), ['nudity', 0.3])
  assert.equal(parseThreshold('nudity=.25'), ['nudity', 0.25])
  assert.equal(parseThreshold('nudity=1'), ['nudity', 1])
  assert.equal(parseThreshold('nudity=5e-1'), ['nudity', 0.5])
  assert.equal(parseThreshold('a=b=0.7'), ['a=b', 0.7])
  // Out of range is refused later, with the range named.
  assert.equal(parseThreshold('nudity=-0.1'), ['nudity', -0.1])
})

test('a value that is not a decimal number is refused, hexadecimal and binary forms too', () => {
  for (const text of ['nudity', 'nudity=', '=0.3', 'nudity=abc', 'nudity=0x1', 'nudity=0b1', 'nudity=Infinity', 'nudity=-']) {
    assert.throws(() => parseThreshold(text), (e: Error) => e.message === `--threshold ${text}: expected CATEGORY=VALUE, e.g. nudity=0.3`, text)
  }
})

test('a category given two thresholds is refused, not settled by the last; the same value twice is one', () => {
  assert.throws(
    () => parseThresholds(['nudity=0.3', 'weapons=0.6', 'nudity=0.5']),
    (e: Error) => e.message === '--threshold nudity is given twice, 0.3 and 0.5: give it once',
  )
  assert.equal([...parseThresholds(['nudity=0.3', 'nudity=0.30', 'weapons=0.6'])], [['nudity', 0.3], ['weapons', 0.6]])
})

test('a threshold for a category the same run disables is refused, not ignored', () => {
  const policy = buildPolicy()
  assert.throws(
    () => applyOverrides(policy, {disabled: ['nudity'], thresholds: new Map([['nudity', 0.3]])}),
    (e: Error) => e.message === '--threshold nudity and --disable nudity cannot be used together: a disabled category has no threshold',
  )
  const changed = applyOverrides(policy, {disabled: ['gore'], thresholds: new Map([['nudity', 0.3]])})
  assert.is(changed.categories.find((c) => c.name === 'nudity')?.threshold, 0.3)
  assert.is(changed.categories.some((c) => c.name === 'gore'), false)
})

test.run()
