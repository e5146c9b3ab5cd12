import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {nsfwJudgement, SURE, type NsfwCategoryScores, type NsfwJudgement} from '../../../../src/lib/signals/nsfw/rule.js'
import type {Detection} from '../../../../src/lib/signals/nudenet/decode.js'
import {agreement, AGREE, combineNudenet, confirmLabels, evidence, EXPOSED_PARTS, SUGGESTIVE_PARTS} from '../../../../src/lib/signals/nudenet/rule.js'

const at = (label: Detection['label'], score: number): Detection => ({label, score, box: [0, 0, 10, 10]})
const close = (a: number, b: number) => Math.abs(a - b) < 1e-9
/** The specialist's judgement of a photo (not drawn) with these scores. */
const judged = (scores: NsfwCategoryScores, drawn = false): NsfwJudgement => ({scores, drawn})

test('agreement maps 0 to 0, the package\'s default threshold to 0.5 and 1 to 1, linearly between', () => {
  assert.equal([0, AGREE / 2, AGREE, (1 + AGREE) / 2, 1].map(agreement), [0, 0.25, 0.5, 0.75, 1])
  assert.is(AGREE, 0.25)
})

test('evidence is the best score among the labels asked for; 0 without one', () => {
  const d = [at('FACE_FEMALE', 0.9), at('BUTTOCKS_EXPOSED', 0.3), at('FEMALE_BREAST_EXPOSED', 0.6), at('BELLY_EXPOSED', 0.8)]
  assert.is(evidence(d, EXPOSED_PARTS), 0.6)
  assert.is(evidence(d, SUGGESTIVE_PARTS), 0.8)
  assert.is(evidence([at('FACE_MALE', 0.9), at('FEET_EXPOSED', 0.9)], EXPOSED_PARTS), 0)
})

test('below the sure bar, nudity and sexual_activity need the detector: with no exposed part they drop to 0', () => {
  const s = {nudity: 0.8, sexual_activity: 0.7, suggestive: 0.6}
  assert.equal(combineNudenet(judged(s), [at('FACE_FEMALE', 0.9), at('FEET_EXPOSED', 0.8)]), {nudity: 0, sexual_activity: 0, suggestive: 0})
})

test('both agreeing: each category keeps the lower of the specialist\'s score and the detector\'s agreement', () => {
  const s = {nudity: 0.8, sexual_activity: 0.55, suggestive: 0.6}
  const r = combineNudenet(judged(s), [at('FEMALE_GENITALIA_EXPOSED', 0.4)])
  assert.ok(close(r.nudity, 0.6), String(r.nudity))
  assert.is(r.sexual_activity, 0.55)
  assert.ok(close(r.suggestive, 0.6))
  // At the package's default threshold the detector agrees exactly at 0.5: a specialist's 0.5 stays flagged.
  assert.is(combineNudenet(judged({nudity: 0.5, sexual_activity: 0, suggestive: 0}), [at('ANUS_EXPOSED', 0.25)]).nudity, 0.5)
})

test('suggestive is confirmed by what a swimsuit shows (covered genitalia or buttocks, a bare belly), not by a covered breast, faces or feet', () => {
  const s = {nudity: 0, sexual_activity: 0, suggestive: 0.7}
  assert.ok(close(combineNudenet(judged(s), [at('FEMALE_GENITALIA_COVERED', 0.625)]).suggestive, 0.7))
  assert.ok(close(combineNudenet(judged(s), [at('BELLY_EXPOSED', 0.4)]).suggestive, 0.6))
  // A covered breast is found on most photos of clothed women: it confirms nothing.
  assert.is(combineNudenet(judged(s), [at('FEMALE_BREAST_COVERED', 0.9)]).suggestive, 0)
  assert.is(combineNudenet(judged(s), [at('FEET_COVERED', 0.9), at('FACE_MALE', 0.9)]).suggestive, 0)
})

test('the detector never raises a score above the specialist\'s', () => {
  const r = combineNudenet(judged({nudity: 0.1, sexual_activity: 0, suggestive: 0.2}), [at('FEMALE_BREAST_EXPOSED', 0.99)])
  assert.equal(r, {nudity: 0.1, sexual_activity: 0, suggestive: 0.2})
})

test('a specialist score at the sure bar stands whatever the detector says, once it has found any part of a person', () => {
  const r = combineNudenet(judged({nudity: SURE, sexual_activity: 0.95, suggestive: 0.95}), [at('FACE_FEMALE', 0.3)])
  assert.equal([r.nudity, r.sexual_activity, r.suggestive], [SURE, 0.95, 0])
})

test('a detector that found no part of a person at all vetoes a sure photo (a close-up of skin), not a sure drawing', () => {
  const s = {nudity: 0.97, sexual_activity: 0.94, suggestive: 0}
  assert.equal(combineNudenet(judged(s), []), {nudity: 0, sexual_activity: 0, suggestive: 0})
  assert.equal(combineNudenet(judged(s, true), []), s)
})

test('recall guarantee for drawings: the judge\'s image and letterbox both Porn + Hentai >= 0.9, mostly Hentai, stay flagged with no detection at all', () => {
  // Random probability vectors (Drawing, Hentai, Neutral, Porn, Sexy): the gate's view, then the judge's three.
  let seed = 7
  const rand = () => ((seed = (seed * 16807) % 2147483647) / 2147483647)
  for (let i = 0; i < 2000; i++) {
    const views: number[] = []
    for (let v = 0; v < 4; v++) {
      const sure = v === 1 || v === 3
      const explicit = sure ? 0.9 + 0.1 * rand() : rand()
      const porn = sure ? 0.4 * explicit * rand() : explicit * rand()
      const rest = 1 - explicit
      const a = rest * rand()
      const b = (rest - a) * rand()
      views.push(a, explicit - porn, b, porn, rest - a - b)
    }
    const r = combineNudenet(nsfwJudgement(views), [])
    assert.ok(r.nudity >= 0.5, `views ${views.map((x) => x.toFixed(3))}: nudity ${r.nudity}`)
  }
})

test('on combined labels: the family is capped by the agreement unless the specialist was sure; other labels pass', () => {
  const label = (name: string, score: number) => ({name, score, threshold: 0.5, parent: null, origin: 'builtin' as const})
  const labels = [label('nudity', 0.8), label('sexual_activity', 0.7), label('suggestive', 0.6), label('violence', 0.9)]
  const specialist = judged({nudity: 0.95, sexual_activity: 0.5, suggestive: 0.99})
  const out = confirmLabels(labels, specialist, [at('BUTTOCKS_COVERED', 0.25)])
  assert.equal(out.map((l) => [l.name, l.score]), [['nudity', 0.8], ['sexual_activity', 0], ['suggestive', 0.5], ['violence', 0.9]])
  // Without the specialist's scores nothing counts as sure.
  assert.equal(confirmLabels([label('nudity', 0.8)], undefined, []).map((l) => l.score), [0])
})

test.run()
