import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {looksAgain, nsfwCategoryScores, SURE, viewScores} from '../../../../src/lib/signals/nsfw/rule.js'

// Probabilities in class order: Drawing, Hentai, Neutral, Porn, Sexy.
type P = [number, number, number, number, number]
const round = (r: {nudity: number; sexual_activity: number; suggestive: number}) => ({
  nudity: +r.nudity.toFixed(6),
  sexual_activity: +r.sexual_activity.toFixed(6),
  suggestive: +r.suggestive.toFixed(6),
})
const one = (...p: P) => round(viewScores(p))
const frame = (...views: P[]) => round(nsfwCategoryScores(views.flat()))

let seed = 12345
const rnd = () => (seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32
/** A random probability vector, often dominated by one class. */
function simplex(): P {
  const raw = Array.from({length: 5}, () => rnd() ** 3)
  const sum = raw.reduce((a, b) => a + b, 0)
  return raw.map((x) => x / sum) as P
}

test('one view, a clear Porn image: nudity is Porn + Hentai, sexual activity 2·Porn − 1', () => {
  assert.equal(one(0.02, 0.08, 0.1, 0.8, 0), {nudity: 0.88, sexual_activity: 0.6, suggestive: 0})
})

test('one view: the safe classes pull a score down only while they outweigh it', () => {
  // explicit 0.35 against safe 0.6: 0.35 − 0.5 · 0.25
  assert.is(one(0.1, 0, 0.5, 0.35, 0.05).nudity, 0.225)
  // explicit 0.55 against safe 0.45: no pull
  assert.is(one(0.05, 0.25, 0.4, 0.3, 0).nudity, 0.55)
})

test('one view: suggestive needs Sexy 0.7 for 0.5, scaled linearly below and above', () => {
  assert.is(one(0, 0, 0.3, 0, 0.7).suggestive, 0.5)
  assert.is(one(0, 0, 0.4, 0, 0.6).suggestive, 0.428571) // 0.5 · 0.6 / 0.7
  assert.is(one(0, 0, 0.1, 0, 0.9).suggestive, 0.833333) // 0.5 + 0.5 · 0.2 / 0.3
  assert.is(one(0, 0, 0, 0, 1).suggestive, 1)
  // Sexy 0.40 beside Neutral 0.35 and Drawing 0.25 (nsfwjs's argmax rule flags it): 0.40 − 0.5 · 0.20, then scaled
  assert.is(one(0.25, 0, 0.35, 0, 0.4).suggestive, 0.214286)
})

test('one view: Sexy never counts as nudity; Hentai counts as nudity but not as sexual activity', () => {
  assert.equal(one(0, 0, 0.1, 0, 0.9), {nudity: 0, sexual_activity: 0, suggestive: 0.833333})
  assert.equal(one(0.3, 0.7, 0, 0, 0), {nudity: 0.7, sexual_activity: 0, suggestive: 0})
})

test('a frame scores, per category, the lowest of its views', () => {
  // The image and its centre are sure, the mirror less so, the letterbox Neutral for suggestive.
  assert.equal(frame([0, 0, 0.1, 0.9, 0], [0, 0, 0.3, 0.7, 0], [0, 0.1, 0, 0.9, 0], [0, 0, 0.2, 0.8, 0]), {
    nudity: 0.7,
    sexual_activity: 0.4,
    suggestive: 0,
  })
  // A green apple: explicit 0.74 and 0.80 on image and mirror, 0.28 in its centre: not flagged.
  assert.is(frame([0.01, 0, 0.1, 0.74, 0.15], [0.01, 0, 0.04, 0.8, 0.15], [0.1, 0, 0.62, 0.28, 0], [0.02, 0, 0.1, 0.7, 0.18]).nudity, 0.06)
  // A red sock: Sexy 0.99 in every view is still suggestive.
  assert.is(frame([0, 0, 0.01, 0, 0.99], [0, 0, 0.01, 0, 0.99], [0, 0, 0.01, 0, 0.99], [0, 0, 0.05, 0, 0.95]).suggestive, 0.916667)
})

test('one view alone scores as that view (a first look too low to look again)', () => {
  assert.equal(frame([0.01, 0, 0.9, 0.05, 0.04]), one(0.01, 0, 0.9, 0.05, 0.04))
})

test('recall guarantee: image and mirror both Porn + Hentai >= 0.9 is nudity >= 0.9, whatever the other views say', () => {
  const sure = (): P => {
    const e = SURE + (1 - SURE) * rnd()
    const porn = e * rnd()
    const [d, , , , s] = simplex()
    const other = 1 - e
    return [other * d, e - porn, other * (1 - d - s), porn, other * s]
  }
  for (let i = 0; i < 20000; i++) {
    const image = sure()
    const mirror = sure()
    const r = nsfwCategoryScores([...image, ...mirror, ...simplex(), ...simplex()])
    const least = Math.min(image[1] + image[3], mirror[1] + mirror[3])
    assert.ok(r.nudity >= 0.9 && Math.abs(r.nudity - least) < 1e-6, `${image} ${mirror} → ${r.nudity}`)
  }
  // Just under the bar on the mirror, the other views decide.
  assert.is(frame([0, 0.45, 0.05, 0.5, 0], [0, 0.4, 0.11, 0.49, 0], [0, 0, 1, 0, 0], [0, 0, 1, 0, 0]).nudity, 0)
})

test('sexual activity needs more than nudity: whatever flags it flags nudity too', () => {
  let flagged = 0
  for (let i = 0; i < 20000; i++) {
    // Views often dominated by Porn, so that many frames reach sexual activity.
    const pornish = (): P => simplex().map((x, k) => 0.3 * x + (k === 3 ? 0.7 : 0)) as P
    const views = Array.from({length: 1 + Math.floor(rnd() * 4)}, () => (rnd() < 0.8 ? pornish() : simplex()))
    const r = nsfwCategoryScores(views.flat())
    if (r.sexual_activity < 0.5) continue
    flagged++
    assert.ok(r.nudity >= 0.75, `${views} → ${JSON.stringify(r)}`)
  }
  assert.ok(flagged > 100, `${flagged} frames with sexual activity drawn`)
})

test('views that all rate explicit above 0.5 (or Sexy above 0.7) stay flagged', () => {
  let clear = 0
  for (let i = 0; i < 20000; i++) {
    const views = Array.from({length: 4}, simplex)
    const r = nsfwCategoryScores(views.flat())
    if (views.every((p) => p[1] + p[3] > 0.5)) {
      clear++
      assert.ok(r.nudity >= 0.5, `${views} → ${r.nudity}`)
    }
    if (views.every((p) => p[4] >= 0.7)) assert.ok(r.suggestive >= 0.5, `${views} → ${r.suggestive}`)
  }
  assert.ok(clear > 50, `${clear} explicit frames drawn`)
})

test('looksAgain: a first look under 0.25 in every category is final', () => {
  assert.is(looksAgain([0.01, 0, 0.93, 0.06, 0]), false)
  assert.is(looksAgain([0.1, 0.05, 0.55, 0.2, 0.1]), false) // nudity 0.25 − 0.5 · 0.4 = 0.05
  assert.is(looksAgain([0, 0, 0.7, 0.3, 0]), false) // nudity 0.3 − 0.5 · 0.4 = 0.1
  assert.is(looksAgain([0, 0, 0.5, 0.5, 0]), true)
  assert.is(looksAgain([0, 0, 0.6, 0, 0.4]), false) // suggestive 0.4 − 0.5 · 0.2, scaled: 0.214
  assert.is(looksAgain([0, 0, 0.5, 0, 0.5]), true) // suggestive 0.5 scaled: 0.357
})

test('scores stay in [0, 1]; a wrong number of probabilities is refused', () => {
  assert.is(one(0, 0.6, 0, 0.6, 0).nudity, 1)
  assert.throws(() => nsfwCategoryScores([0.5, 0.5]), /2 probabilities, expected 5 per view/)
  assert.throws(() => nsfwCategoryScores([]), /0 probabilities/)
  assert.throws(() => viewScores([0.5, 0.5, 0, 0, 0, 0]), /6 probabilities, expected 5/)
})

test.run()
