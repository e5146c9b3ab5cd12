import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {CUSTOM_CALIBRATION} from '../../../src/lib/policy/defaults.js'
import type {Category, Policy} from '../../../src/lib/policy/types.js'
import {combineSignals, shareOf} from '../../../src/lib/scoring/combine.js'

const nudity: Category = {
  name: 'nudity',
  parent: null,
  threshold: 0.5,
  prompts: ['a nude photo'],
  negatives: [],
  calibration: CUSTOM_CALIBRATION,
  origin: 'builtin',
  signals: {clip: 1, nsfw: 3},
}
const weapons: Category = {...nudity, name: 'weapons', signals: {clip: 1}}
const policy: Policy = {trim_borders: true, categories: [nudity, weapons], neutral: [], specialists: {nsfw: true}, sections: {}}

test("a category's score is the weighted mean of the signals that scored it; shareOf gives it from the one signal's score", () => {
  const signals = {clip: new Map([['nudity', 0.2], ['weapons', 0.6]]), nsfw: new Map([['nudity', 0.9]])}
  assert.equal(combineSignals(policy, signals).map((l) => [l.name, l.score]), [['nudity', (0.2 + 3 * 0.9) / 4], ['weapons', 0.6]])
  const mix = shareOf(nudity, signals, 'clip')
  assert.equal(mix, {share: 0.25, rest: 0.675})
  // Any other score of clip's goes through the mean the same way: what calibrate tries a calibration with.
  assert.ok(Math.abs((mix?.rest ?? 0) + (mix?.share ?? 0) * 0.8 - combineSignals(policy, {...signals, clip: new Map([['nudity', 0.8]])})[0].score) < 1e-12)
  assert.equal(shareOf(weapons, signals, 'clip'), {share: 1, rest: 0})
  // A signal that did not score the category has no share of it.
  assert.is(shareOf(weapons, signals, 'nsfw'), undefined)
})

test.run()
