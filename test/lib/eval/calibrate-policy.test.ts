import {test} from 'uvu'
import * as assert from 'uvu/assert'
import {parse} from 'yaml'

import {validatePolicyText} from '../../../src/lib/config/policy.js'
import {calibrateCategories, calibrationComments, writeCalibratedPolicy, type RawSample} from '../../../src/lib/eval/calibrate-policy.js'
import type {LabelInfo} from '../../../src/lib/eval/features.js'

const hash = (i: number) => i.toString(16).padStart(64, '0')
const categories: LabelInfo[] = [
  {name: 'redness', threshold: 0.5, parent: null, origin: 'custom', calibration: {scale: 1, bias: 0}},
  {name: 'weapons', threshold: 0.5, parent: 'violence', origin: 'builtin', calibration: {scale: 0.5, bias: -3}},
]
// redness images have raw margins around -16, safe images around -70: all score 0 uncalibrated.
const samples: RawSample[] = [
  ...Array.from({length: 30}, (_, i) => ({sha256: hash(i), truth: ['redness'], raw: [-16 + (i % 5), -1]})),
  ...Array.from({length: 30}, (_, i) => ({sha256: hash(100 + i), truth: [], raw: [-70 + (i % 7), -1]})),
]

test('a category with images gets a positive scale and a threshold that separates them on held-out images', () => {
  const r = calibrateCategories(samples, categories, {target: {maxFpr: 0.05}, holdout: 0.3, seed: 1})
  const [redness, weapons] = r.categories
  assert.is(redness.fitted, true)
  assert.ok(redness.calibration.scale > 0)
  assert.equal([redness.before.recall, redness.after.recall, redness.after.safe_fpr], [0, 1, 0])
  assert.is(r.train_images + r.heldout_images, 60)
  assert.is(weapons.fitted, false)
  assert.is(weapons.note, 'no training images with this label: unchanged')
  assert.equal(weapons.calibration, {scale: 0.5, bias: -3})
  assert.equal(r.after, {average_recall: 1, safe_flagged: 0})
})

test('a category the NSFW specialist feeds too is measured and given its threshold on the score scan gives, the weighted mean', () => {
  // CLIP's quarter of the score: the specialist's three quarters put the redness images at 0.675 and the safe ones at
  // 0.3 before CLIP's part, which scores 0 uncalibrated. The held-out figures before are eval's: all flagged at 0.5.
  const fed = samples.map((s) => ({...s, share: [0.25, 1], rest: [s.truth.length > 0 ? 0.675 : 0.3, 0]}))
  const r = calibrateCategories(fed, categories, {target: {minRecall: 1}, holdout: 0.3, seed: 1})
  const [redness] = r.categories
  assert.equal([redness.before.recall, redness.before.safe_fpr], [1, 0])
  assert.equal([redness.after.recall, redness.after.safe_fpr], [1, 0])
  // The threshold is halfway between the combined scores (about 0.925 and 0.3), not CLIP's alone (about 1 and 0).
  assert.ok(Math.abs(redness.threshold - 0.6125) < 0.01, `threshold ${redness.threshold}`)
})

test('a raw score that ranks the images the wrong way is left unchanged', () => {
  const reversed = samples.map((s) => ({...s, raw: [-s.raw[0], -1]}))
  const [redness] = calibrateCategories(reversed, categories, {target: {minRecall: 0.9}, holdout: 0.3, seed: 1}).categories
  assert.is(redness.fitted, false)
  assert.match(redness.note ?? '', 'does not rank its images above the others')
})

test('the written policy keeps the file, sets the fitted values, and validates', () => {
  const r = calibrateCategories(samples, categories, {target: {maxFpr: 0.05}, holdout: 0.3, seed: 1})
  const original = '# mine\npreset: fast\ncategories:\n  redness:\n    prompts: ["red"]\n  tobacco:\n    enabled: false\n'
  const text = writeCalibratedPolicy(original, r, calibrationComments(r, 'data'))
  assert.equal(validatePolicyText(text).problems, [])
  const file = parse(text)
  assert.is(file.preset, 'fast')
  assert.equal(file.categories.tobacco, {enabled: false})
  assert.equal(file.categories.redness.calibration, r.categories[0].calibration)
  assert.is(file.categories.redness.threshold, r.categories[0].threshold)
  assert.ok(!('weapons' in file.categories))
  assert.match(text, /^# Calibrated by mod calibrate on data/)
  assert.match(text, '# mine')

  const fresh = parse(writeCalibratedPolicy(undefined, r, ['x']))
  assert.equal(Object.keys(fresh.categories), ['redness'])
  // A category that is only named (null) becomes a mapping.
  const named = parse(writeCalibratedPolicy('categories:\n  redness:\n', r, []))
  assert.is(named.categories.redness.threshold, r.categories[0].threshold)
})

test('a category written as an alias of another is written apart: the fitted one gets its values, the other keeps its own, and the policy validates', () => {
  const r = calibrateCategories(samples, categories, {target: {maxFpr: 0.05}, holdout: 0.3, seed: 1})
  const original = 'categories:\n  redness: &r\n    prompts: ["red"]\n    threshold: 0.4\n  reddish: *r\n'
  const text = writeCalibratedPolicy(original, r, [])
  assert.equal(validatePolicyText(text).problems, [])
  const file = parse(text)
  assert.is(file.categories.redness.threshold, r.categories[0].threshold)
  assert.equal(file.categories.reddish, {prompts: ['red'], threshold: 0.4})

  // Fitted through the alias: the anchored category keeps its values.
  const aliased = parse(writeCalibratedPolicy('categories:\n  other: &r\n    prompts: ["red"]\n  redness: *r\n', r, []))
  assert.equal(aliased.categories.other, {prompts: ['red']})
  assert.equal(aliased.categories.redness, {prompts: ['red'], threshold: r.categories[0].threshold, calibration: r.categories[0].calibration})
})

test('a threshold or calibration the fitted category shares through an anchor stays as it was for the categories that alias it', () => {
  const r = calibrateCategories(samples, categories, {target: {maxFpr: 0.05}, holdout: 0.3, seed: 1})
  const original = [
    'categories:',
    '  redness:',
    '    prompts: ["red"]',
    '    threshold: &strict 0.3',
    '    calibration: &cal {scale: &s 2, bias: -1}',
    '  weapons:',
    '    threshold: *strict',
    '  gore:',
    '    calibration: *cal',
    '  drugs:',
    '    calibration: {scale: *s, bias: 0}',
    '',
  ].join('\n')
  const text = writeCalibratedPolicy(original, r, [])
  assert.equal(validatePolicyText(text).problems, [])
  const file = parse(text)
  assert.is(file.categories.redness.threshold, r.categories[0].threshold)
  assert.equal(file.categories.redness.calibration, r.categories[0].calibration)
  assert.equal(file.categories.weapons, {threshold: 0.3})
  assert.equal(file.categories.gore, {calibration: {scale: 2, bias: -1}})
  assert.equal(file.categories.drugs, {calibration: {scale: 2, bias: 0}})
})

test('a JSON policy is written back as JSON, without the comments JSON cannot hold', () => {
  const r = calibrateCategories(samples, categories, {target: {maxFpr: 0.05}, holdout: 0.3, seed: 1})
  const text = writeCalibratedPolicy('{"trim_borders": false, "categories": {"redness": {"prompts": ["red"]}}}', r, calibrationComments(r, 'data'))
  assert.equal(JSON.parse(text), {
    trim_borders: false,
    categories: {redness: {prompts: ['red'], threshold: r.categories[0].threshold, calibration: r.categories[0].calibration}},
  })
  assert.equal(validatePolicyText(text).problems, [])
})

test('a split that leaves no held-out image is refused', () => {
  assert.throws(() => calibrateCategories(samples, categories, {target: {maxFpr: 0.05}, holdout: 0, seed: 1}), /0 held-out images/)
})

test.run()
