import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {GATE, nsfwCategoryScores, nsfwJudgement, passesGate, SUGGESTIVE_VIEWS, SURE, TURN_MARGIN, turnCouldRaise, turnsWorthLooking, turnToJudge, viewScores} from '../../../../src/lib/signals/nsfw/rule.js'

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

/** A frame the gate let through: the gate's view (which no longer counts) and the judge's image, centre and letterbox. */
const judged = (image: P, centre: P, letterbox: P, gate: P = [0, 0, 0.5, 0.5, 0]) => round(nsfwCategoryScores([...gate, ...image, ...centre, ...letterbox]))

test('a judged frame scores, per category, the lowest of the judge\'s views; the gate\'s view no longer counts', () => {
  // The image and its centre are sure, the letterbox less so: nudity is the letterbox's.
  assert.equal(judged([0, 0, 0.1, 0.9, 0], [0, 0.1, 0, 0.9, 0], [0, 0, 0.3, 0.7, 0]), {nudity: 0.7, sexual_activity: 0.4, suggestive: 0})
  // A green apple: explicit 0.74 and 0.70 on image and letterbox, 0.28 in its centre: not flagged.
  assert.is(judged([0.01, 0, 0.1, 0.74, 0.15], [0.1, 0, 0.62, 0.28, 0], [0.02, 0, 0.1, 0.7, 0.18]).nudity, 0.06)
  // Swimwear: Sexy 0.99 in every view is suggestive, whatever the gate said.
  assert.is(judged([0, 0, 0.01, 0, 0.99], [0, 0, 0.01, 0, 0.99], [0, 0, 0.05, 0, 0.95], [1, 0, 0, 0, 0]).suggestive, 0.916667)
})

test('suggestive leaves the judge\'s centre view out; nudity and sexual activity keep it', () => {
  assert.equal(SUGGESTIVE_VIEWS, ['image', 'letterbox'])
  // Sexy 0.95 on image and letterbox, Neutral in the centre: suggestive stands.
  assert.is(judged([0, 0, 0.05, 0, 0.95], [0, 0, 1, 0, 0], [0, 0, 0.05, 0, 0.95]).suggestive, 0.916667)
  // Porn 0.8 on image and letterbox (below the sure bar), Neutral in the centre: the centre clears it.
  assert.is(judged([0, 0, 0.2, 0.8, 0], [0, 0, 1, 0, 0], [0, 0, 0.2, 0.8, 0]).nudity, 0)
})

test('a frame the gate stopped scores as the gate\'s one view', () => {
  assert.equal(frame([0.01, 0, 0.9, 0.05, 0.04]), one(0.01, 0, 0.9, 0.05, 0.04))
})

test('the gate lets a frame through at Porn + Hentai or Sexy 0.15, and stops it below', () => {
  assert.is(GATE, 0.15)
  assert.is(passesGate([0.01, 0, 0.93, 0.06, 0]), false)
  assert.is(passesGate([0.2, 0.07, 0.6, 0.07, 0.06]), false)
  assert.is(passesGate([0.2, 0.08, 0.5, 0.07, 0.15]), true) // Sexy 0.15
  assert.is(passesGate([0, 0.05, 0.8, 0.1, 0.05]), true) // Porn + Hentai 0.15
  assert.throws(() => passesGate([0.5, 0.5]), /2 probabilities, expected 5/)
})

test('recall guarantee: the judge\'s image and letterbox both Porn + Hentai >= 0.9 is nudity >= 0.9, whatever the centre says', () => {
  const sure = (): P => {
    const e = SURE + (1 - SURE) * rnd()
    const porn = e * rnd()
    const [d, , , , s] = simplex()
    const other = 1 - e
    return [other * d, e - porn, other * (1 - d - s), porn, other * s]
  }
  for (let i = 0; i < 20000; i++) {
    const image = sure()
    const letterbox = sure()
    const j = nsfwJudgement([...simplex(), ...image, ...simplex(), ...letterbox])
    const least = Math.min(image[1] + image[3], letterbox[1] + letterbox[3])
    assert.ok(j.scores.nudity >= 0.9 && Math.abs(j.scores.nudity - least) < 1e-6, `${image} ${letterbox} → ${j.scores.nudity}`)
  }
  // Just under the bar on the letterbox, the centre decides.
  assert.is(judged([0, 0.45, 0.05, 0.5, 0], [0, 0, 1, 0, 0], [0, 0.4, 0.11, 0.49, 0]).nudity, 0)
})

test('a judgement says whether the explicit probability was mostly drawn (Hentai) or photographed (Porn)', () => {
  assert.is(nsfwJudgement([0, 0, 0, 0.2, 0.8, 0.05, 0.9, 0, 0.05, 0, 0.1, 0.8, 0, 0.1, 0, 0.05, 0.9, 0, 0.05, 0]).drawn, true)
  assert.is(nsfwJudgement([0, 0, 0, 0.2, 0.8, 0.05, 0.05, 0, 0.9, 0, 0.1, 0.1, 0, 0.8, 0, 0.05, 0.05, 0, 0.9, 0]).drawn, false)
})

test('sexual activity needs more than nudity: whatever flags it flags nudity too', () => {
  let flagged = 0
  for (let i = 0; i < 20000; i++) {
    // Views often dominated by Porn, so that many frames reach sexual activity.
    const pornish = (): P => simplex().map((x, k) => 0.3 * x + (k === 3 ? 0.7 : 0)) as P
    const views = Array.from({length: rnd() < 0.25 ? 1 : 4}, () => (rnd() < 0.8 ? pornish() : simplex()))
    const r = nsfwCategoryScores(views.flat())
    if (r.sexual_activity < 0.5) continue
    flagged++
    assert.ok(r.nudity >= 0.75, `${views} → ${JSON.stringify(r)}`)
  }
  assert.ok(flagged > 100, `${flagged} frames with sexual activity drawn`)
})

test('judged frames whose three views all rate explicit above 0.5 (or Sexy above 0.7) stay flagged', () => {
  let clear = 0
  for (let i = 0; i < 20000; i++) {
    const [gate, ...views] = Array.from({length: 4}, simplex)
    const r = nsfwCategoryScores([...gate, ...views.flat()])
    if (views.every((p) => p[1] + p[3] > 0.5)) {
      clear++
      assert.ok(r.nudity >= 0.5, `${views} → ${r.nudity}`)
    }
    if (views.every((p) => p[4] >= 0.7)) assert.ok(r.suggestive >= 0.5, `${views} → ${r.suggestive}`)
  }
  assert.ok(clear > 50, `${clear} explicit frames drawn`)
})

test('scores stay in [0, 1]; a wrong number of probabilities is refused', () => {
  assert.is(one(0, 0.6, 0, 0.6, 0).nudity, 1)
  assert.throws(() => nsfwCategoryScores([0.5, 0.5]), /2 probabilities, expected 5 \(the gate's view\), 20 \(and the judge's\) or 40 \(and a quarter turn's\)/)
  assert.throws(() => nsfwCategoryScores(new Array(25).fill(0.1)), /25 probabilities/)
  assert.throws(() => nsfwCategoryScores([]), /0 probabilities/)
  assert.throws(() => nsfwCategoryScores(new Array(10).fill(0.1)), /10 probabilities/)
  assert.throws(() => viewScores([0.5, 0.5, 0, 0, 0, 0]), /6 probabilities, expected 5/)
})

test('a quarter turn is judged when the gate finds it more than TURN_MARGIN more telling than the frame as given: the most telling one', () => {
  const gate = (porn: number, sexy = 0): P => [0, 0, 1 - porn - sexy, porn, sexy]
  assert.is(TURN_MARGIN, 0.2)
  assert.is(turnToJudge(gate(0.3), [gate(0.45), gate(0.1), gate(0.5)]), 0)
  assert.is(turnToJudge(gate(0.3), [gate(0.51), gate(0.1), gate(0.45)]), 1)
  assert.is(turnToJudge(gate(0.3), [gate(0.6), gate(0.1), gate(0.8)]), 3)
  // Porn + Hentai or Sexy, whichever is larger, on both sides.
  assert.is(turnToJudge(gate(0.1, 0.4), [gate(0), gate(0, 0.65), gate(0.55)]), 2)
  assert.is(turnToJudge([0, 0.2, 0.6, 0.2, 0], [gate(0.55), gate(0), gate(0)]), 0)
  assert.throws(() => turnToJudge(gate(0.3), [gate(0.6), gate(0.1)]), /three turns/)
  // From 0.8, no turn can be more than 0.2 more telling: the gate need not look.
  assert.equal([gate(0.79), gate(0.8), gate(0, 0.9), [0, 0.5, 0, 0.4, 0.1] as P].map(turnsWorthLooking), [true, false, false, false])
})

test('a turn could raise a score only where its image view scores some category above the frame as given', () => {
  const gate: P = [0, 0, 0.7, 0.3, 0]
  const sexy: P = [0, 0, 0.1, 0, 0.9]
  const photoNude: P = [0, 0, 0.2, 0.8, 0]
  const given = [gate, sexy, sexy, sexy].flat()
  // The frame scores suggestive 0.83 and nothing else: a nude image view could raise nudity, a sexy one nothing.
  assert.is(turnCouldRaise(given, photoNude), true)
  assert.is(turnCouldRaise(given, sexy), false)
  assert.is(turnCouldRaise(given, [0, 0, 0.05, 0, 0.95]), true)
  assert.throws(() => turnCouldRaise(gate, sexy), /5 probabilities for the frame, expected 20/)
  // What it rests on: a judgement never scores above its image view, whatever the other two say.
  for (let i = 0; i < 500; i++) {
    const views = [simplex(), simplex(), simplex()]
    const judged = nsfwCategoryScores([...gate, ...views.flat()])
    const image = viewScores(views[0])
    for (const k of ['nudity', 'sexual_activity', 'suggestive'] as const) assert.ok(judged[k] <= image[k], `${k}: ${judged[k]} above ${image[k]}`)
  }
})

test('a frame judged turned too scores the higher of its two judgements in each category; drawn as the one that gives nudity', () => {
  const gate: P = [0, 0, 0.7, 0.3, 0]
  const neutral: P = [0, 0, 1, 0, 0]
  const sexy: P = [0, 0, 0.1, 0, 0.9]
  const drawnNude: P = [0, 0.7, 0.3, 0, 0]
  const photoNude: P = [0, 0, 0.2, 0.8, 0]
  // As given: a nude photo in every view; turned: suggestive in every view.
  const given = [gate, photoNude, photoNude, photoNude]
  const turned = [gate, sexy, sexy, sexy]
  const both = nsfwJudgement([...given, ...turned].flat())
  assert.equal(round(both.scores), {nudity: 0.8, sexual_activity: 0.6, suggestive: frame(...turned).suggestive})
  assert.is(both.drawn, false)
  // Turned, a drawn nude: its nudity (0.7) is below the photo's, so drawn is the photo's (no).
  assert.is(nsfwJudgement([...given, gate, drawnNude, drawnNude, drawnNude].flat()).drawn, false)
  // As given neutral, turned a drawn nude: the nudity and drawn both come from the turn.
  const fromTurn = nsfwJudgement([gate, neutral, neutral, neutral, gate, drawnNude, drawnNude, drawnNude].flat())
  assert.is(round(fromTurn.scores).nudity, 0.7)
  assert.is(fromTurn.drawn, true)
  // A turn never lowers a score: the same frame with a neutral turn keeps its own scores.
  assert.equal(round(nsfwJudgement([...given, gate, neutral, neutral, neutral].flat()).scores), frame(...given))
})

test.run()
