import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {averageViews, nsfwCategoryScores} from '../../../../src/lib/signals/nsfw/rule.js'

// Probabilities in class order: Drawing, Hentai, Neutral, Porn, Sexy.
function scores(d: number, h: number, n: number, p: number, s: number) {
  const r = nsfwCategoryScores([d, h, n, p, s])
  return {nudity: +r.nudity.toFixed(6), sexual_activity: +r.sexual_activity.toFixed(6), suggestive: +r.suggestive.toFixed(6)}
}

test('a clear Porn image: nudity is Porn + Hentai, sexual activity 2·Porn − 1', () => {
  assert.equal(scores(0.02, 0.08, 0.1, 0.8, 0), {nudity: 0.88, sexual_activity: 0.6, suggestive: 0})
})

test('the safe classes pull a score down only while they outweigh it', () => {
  // explicit 0.35 against safe 0.6: 0.35 − 0.5 · 0.25
  assert.equal(scores(0.1, 0, 0.5, 0.35, 0.05).nudity, 0.225)
  // Sexy 0.40 beside Neutral 0.35 and Drawing 0.25 (nsfwjs's argmax rule flags it): 0.40 − 0.5 · 0.20
  assert.equal(scores(0.25, 0, 0.35, 0, 0.4).suggestive, 0.3)
  // explicit 0.55 against safe 0.45: no pull
  assert.equal(scores(0.05, 0.25, 0.4, 0.3, 0).nudity, 0.55)
})

test('Sexy never counts as nudity; Hentai counts as nudity but not as sexual activity', () => {
  assert.equal(scores(0, 0, 0.1, 0, 0.9), {nudity: 0, sexual_activity: 0, suggestive: 0.9})
  assert.equal(scores(0.3, 0.7, 0, 0, 0), {nudity: 0.7, sexual_activity: 0, suggestive: 0})
})

test('an ordinary photo scores nothing', () => {
  assert.equal(scores(0.01, 0, 0.93, 0.06, 0), {nudity: 0, sexual_activity: 0, suggestive: 0})
})

test('recall: whatever nsfwjs flags with p > 0.5 (argmax Porn, Hentai or Sexy) scores >= 0.5 somewhere', () => {
  let seed = 12345
  const rnd = () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32)
  let clear = 0
  for (let i = 0; i < 20000; i++) {
    const raw = Array.from({length: 5}, () => rnd() ** 3)
    const sum = raw.reduce((a, b) => a + b, 0)
    const p = raw.map((x) => x / sum)
    const top = p.indexOf(Math.max(...p))
    if (![1, 3, 4].includes(top) || p[top] <= 0.5) continue
    clear++
    const s = nsfwCategoryScores(p)
    assert.ok(Math.max(s.nudity, s.suggestive) >= 0.5, `${p} → ${JSON.stringify(s)}`)
  }
  assert.ok(clear > 1000, `${clear} clear cases drawn`)
})

test('scores stay in [0, 1]; a wrong number of probabilities is refused', () => {
  assert.equal(scores(0, 0.6, 0, 0.6, 0).nudity, 1)
  assert.throws(() => nsfwCategoryScores([0.5, 0.5]), /2 probabilities, expected 5/)
})

test('averageViews is the class-by-class mean', () => {
  const mean = averageViews([
    [0.1, 0.2, 0.3, 0.4, 0],
    [0.3, 0, 0.5, 0, 0.2],
  ])
  assert.equal(Array.from(mean, (x) => +x.toFixed(6)), [0.2, 0.1, 0.4, 0.2, 0.1])
  assert.throws(() => averageViews([]), /no views/)
})

test.run()
