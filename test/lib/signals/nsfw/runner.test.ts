import {join} from 'node:path'

import sharp from 'sharp'
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {nsfwPreprocess, nsfwViewSize} from '../../../../src/lib/signals/nsfw/preprocess.js'
import {resampleSquare} from '../../../../src/lib/image/square.js'
import {JUDGE_VIEWS} from '../../../../src/lib/signals/nsfw/rule.js'
import {CANONICAL_SIDE, centreWindow, classifyViews, nsfwViews, turnViews, type NsfwClassifier, type NsfwViews} from '../../../../src/lib/signals/nsfw/runner.js'
import type {RgbImage} from '../../../../src/lib/types.js'
import {PHOTOS_DIR} from '../../../helpers/nsfw-images.js'

function noisy(width: number, height: number): RgbImage {
  let seed = width * 31 + height
  const data = Buffer.alloc(width * height * 3)
  for (let i = 0; i < data.length; i++) data[i] = (seed = (seed * 1103515245 + 12345) >>> 0) >>> 24
  return {data, width, height}
}

const view = (all: Float32Array, side: number, k: number) => Array.from(all.subarray(k * nsfwViewSize(side), (k + 1) * nsfwViewSize(side)))

test('every view starts from a 448-pixel square resampled by libvips: the gate\'s at 224, the judge\'s image, centre and letterbox at 299', async () => {
  const frame = noisy(600, 300)
  const square = await resampleSquare(frame, CANONICAL_SIDE)
  assert.is(CANONICAL_SIDE, 448)
  assert.equal([square.width, square.height], [448, 448])
  const {first, rest} = await nsfwViews(frame)
  assert.equal(Array.from(first), Array.from(nsfwPreprocess(square, {side: 224})))
  const judge = await rest()
  assert.equal(JUDGE_VIEWS, ['image', 'centre', 'letterbox'])
  assert.is(judge.length, 3 * nsfwViewSize(299))
  assert.equal(view(judge, 299, 0), Array.from(nsfwPreprocess(square, {side: 299})))
  assert.equal(centreWindow(600, 300), {left: 90, top: 45, width: 420, height: 210})
  const centre = await resampleSquare(frame, CANONICAL_SIDE, {window: centreWindow(600, 300)})
  assert.equal(view(judge, 299, 1), Array.from(nsfwPreprocess(centre, {side: 299})))
  const letterbox = await resampleSquare(frame, CANONICAL_SIDE, {letterbox: true})
  assert.equal(view(judge, 299, 2), Array.from(nsfwPreprocess(letterbox, {side: 299})))
  // The letterbox keeps the frame's 2:1 shape: the rows above and below it are black.
  assert.ok(letterbox.data.subarray(0, 448 * 3 * 100).every((v) => v === 0))
  assert.ok(letterbox.data.subarray(448 * 3 * 200, 448 * 3 * 220).some((v) => v > 0))
})

test('a photo and its resized copy give (nearly) the same view: the canonical square, not the upload\'s size, decides', async () => {
  // Fine stripes of one pixel: read directly, nsfwjs's resize of the large image picks whichever stripes its
  // sample points hit; resampled first, both sizes average them to the same grey.
  const stripes = (width: number): RgbImage => {
    const height = width
    const data = Buffer.alloc(width * height * 3)
    for (let y = 0; y < height; y++) for (let x = 0; x < width; x++) data.fill(x % 2 ? 255 : 0, 3 * (y * width + x), 3 * (y * width + x) + 3)
    return {data, width, height}
  }
  const [large, small] = await Promise.all([nsfwViews(stripes(1600)), nsfwViews(stripes(800))])
  // Mean absolute difference, in units of full scale.
  const gap = (a: Float32Array, b: Float32Array) => a.reduce((sum, v, i) => sum + Math.abs(v - b[i]), 0) / a.length
  assert.ok(gap(large.first, small.first) < 0.005, `canonical: ${gap(large.first, small.first)}`)
  const direct = gap(nsfwPreprocess(stripes(1600), {side: 224}), nsfwPreprocess(stripes(800), {side: 224}))
  assert.ok(direct > 0.2, `direct: ${direct}`)
})

/**
 * Classifiers whose views are one float each: for frame f, 10 f for the gate's view, 10 f + 4, 5, 6 for its quarter
 * turns 1, 2, 3, 10 f + 1, 2, 3 for the judge's views, and 1000 q more for the judge's views of turn q. The gate
 * answers Porn 0.6 for the frames in `suspect` (0.85 for those in `sure`) and Porn 0.9 for the turn `turned` names
 * of a frame; the judge answers
 * Porn 0.9 for the views of a turn (Porn 0.1 with `turnsLikeFrames`); Neutral otherwise. Both write the view's
 * number into Drawing's place (scaled by 1/100 000) so that the test can see which answer went where.
 */
function numbered(suspect: Set<number>, turned = new Map<number, number>(), turnsLikeFrames = false, sure = new Set<number>()): {gate: NsfwClassifier; judge: NsfwClassifier; runs: string[]} {
  const runs: string[] = []
  const model = (name: string): NsfwClassifier => ({
    viewSize: 1,
    classify: async (batch, n) => {
      runs.push(`${name} ${n}`)
      return Array.from(batch.subarray(0, n), (v) => {
        const f = Math.floor((v % 1000) / 10)
        const turn = v % 10 >= 4 ? (v % 10) - 3 : 0
        const judged = v >= 1000 ? (turnsLikeFrames ? 0.1 : 0.9) : 0
        const porn = name !== 'gate' ? judged : turn > 0 && turned.get(f) === turn ? 0.9 : sure.has(f) ? 0.85 : suspect.has(f) ? 0.6 : 0
        return Float32Array.from([v / 100_000, 0, 1 - v / 100_000 - porn, porn, 0])
      })
    },
  })
  return {gate: model('gate'), judge: model('judge'), runs}
}

/** Frame `f`'s views (numbered as above), noting in `computed` each frame whose judge views were asked for, and for which turn. */
function numberedViews(f: number, computed: string[]): NsfwViews {
  return {
    first: Float32Array.of(10 * f),
    turns: () => Float32Array.of(10 * f + 4, 10 * f + 5, 10 * f + 6),
    rest: async (quarters = 0) => {
      computed.push(`${f}${quarters ? ` turned ${quarters}` : ''}`)
      return Float32Array.of(1, 2, 3).map((k) => 1000 * quarters + 10 * f + k)
    },
  }
}

const seenViews = (out: Float32Array[]) => out.map((p) => Array.from({length: p.length / 5}, (_, k) => Math.round(p[5 * k] * 100_000)))

test('classifyViews: one gate run for every frame; for each frame it lets through, one of the gate on its three quarter turns and one of the judge on its three views, whose views alone are made', async () => {
  const {gate, judge, runs} = numbered(new Set([1, 3]))
  const computed: string[] = []
  const out = await classifyViews({gate, judge}, [0, 1, 2, 3].map((f) => numberedViews(f, computed)))
  // One frame's views a run: onnxruntime's arena keeps what the largest run needed.
  assert.equal(runs, ['gate 4', 'gate 3', 'judge 3', 'gate 3', 'judge 3'])
  assert.equal(computed, ['1', '3'])
  assert.equal(seenViews(out), [[0], [10, 11, 12, 13], [20], [30, 31, 32, 33]])
})

test('classifyViews: frames the gate stops cost one small run, and the judge never runs', async () => {
  const {gate, judge, runs} = numbered(new Set())
  const computed: string[] = []
  const out = await classifyViews({gate, judge}, [numberedViews(0, computed), numberedViews(1, computed)])
  assert.equal(runs, ['gate 2'])
  assert.equal(computed, [])
  assert.equal(out.map((p) => p.length), [5, 5])
})

test('classifyViews: a quarter turn the gate finds clearly more telling is judged too, after the frame as given: its image view, then the other two', async () => {
  // Frame 1's turn by 270 degrees rates Porn 0.9 against the frame's 0.6 (more than TURN_MARGIN above); frame 2's
  // turn rates 0.9 too, but frame 2 itself is stopped by the gate, so its turns are never looked at.
  const {gate, judge, runs} = numbered(new Set([0, 1]), new Map([[1, 3], [2, 1]]))
  const computed: string[] = []
  const out = await classifyViews({gate, judge}, [0, 1, 2].map((f) => numberedViews(f, computed)))
  assert.equal(runs, ['gate 3', 'gate 3', 'judge 3', 'gate 3', 'judge 3', 'judge 1', 'judge 2'])
  assert.equal(computed, ['0', '1', '1 turned 3'])
  // Frame 1: the gate's view, the judge's three; then the gate's view of the turn and the judge's three of it.
  assert.equal(seenViews(out), [[0, 1, 2, 3], [10, 11, 12, 13, 16, 3011, 3012, 3013], [20]])
})

test('classifyViews: the gate looks at no turn of a frame it rates within TURN_MARGIN of 1: no turn could be telling enough', async () => {
  // Frame 1 rates Porn 0.85 (0.85 + 0.2 > 1), frame 2 0.6: only frame 2's turns are looked at.
  const {gate, judge, runs} = numbered(new Set([2]), new Map([[1, 1]]), false, new Set([1]))
  const out = await classifyViews({gate, judge}, [numberedViews(1, []), numberedViews(2, [])])
  assert.equal(runs, ['gate 2', 'judge 3', 'gate 3', 'judge 3'])
  assert.equal(seenViews(out), [[10, 11, 12, 13], [20, 21, 22, 23]])
})

test('classifyViews: a turn whose image view scores no category above the frame as given costs one judge view, and adds nothing', async () => {
  // The judge rates every view of the turn Porn 0.1, the frame's own views Neutral: nudity 0.1 - 0.45 is 0 either way.
  const {gate, judge, runs} = numbered(new Set([1]), new Map([[1, 2]]), true)
  const computed: string[] = []
  const out = await classifyViews({gate, judge}, [numberedViews(1, computed)])
  assert.equal(runs, ['gate 1', 'gate 3', 'judge 3', 'judge 1'])
  assert.equal(computed, ['1', '1 turned 2'])
  assert.equal(seenViews(out), [[10, 11, 12, 13]])
})

test('turnViews: a quarter turn clockwise brings the left column, read upwards, to the top row; four turns are none', () => {
  // A 2 x 2 view whose pixels are a, b (top row) and c, d, each channel its own number.
  const pixel = (n: number) => [n, n + 0.1, n + 0.2]
  const [a, b, c, d] = [1, 2, 3, 4]
  const view = Float32Array.from([a, b, c, d].flatMap(pixel))
  const two = Float32Array.from([...view, ...view.map((v) => v + 10)])
  const rows = (v: Float32Array, at = 0) => [0, 1, 2, 3].map((i) => Math.round(v[at + 3 * i]))
  assert.equal(rows(turnViews(view, 2, 1)), [c, a, d, b])
  assert.equal(rows(turnViews(view, 2, 2)), [d, c, b, a])
  assert.equal(rows(turnViews(view, 2, 3)), [b, d, a, c])
  // Each view of several is turned on its own, channels kept together.
  const turned = turnViews(two, 2, 1)
  assert.equal(rows(turned, 12), [c + 10, a + 10, d + 10, b + 10])
  assert.equal(Array.from(turned.subarray(0, 3)).map((v) => Math.round(v * 10) / 10), [3, 3.1, 3.2])
  assert.equal(Array.from(turnViews(turnViews(turnViews(turnViews(two, 2, 1), 2, 1), 2, 1), 2, 1)), Array.from(two))
  assert.throws(() => turnViews(new Float32Array(13), 2, 1), /not views of side 2/)
  // Into a given array at an offset, the rest of it untouched; a view that would not fit is refused.
  const out = new Float32Array(3 * 12).fill(-1)
  assert.is(turnViews(view, 2, 2, {out, offset: 12}), out)
  assert.equal(rows(out, 12), [d, c, b, a])
  assert.ok(out.subarray(0, 12).every((v) => v === -1) && out.subarray(24).every((v) => v === -1))
  turnViews(view, 2, 0, {out, offset: 24})
  assert.equal(rows(out, 24), [a, b, c, d])
  assert.throws(() => turnViews(view, 2, 1, {out, offset: 30}), /do not fit/)
})

test('the turned views are the views of the turned frame, to within the resampling\'s half-pixel: the gate\'s turns and the judge\'s views of a turn', async () => {
  // A photo wider than high: its square is squeezed one way and stretched the other, and turned the other way round.
  const {data, info} = await sharp(join(PHOTOS_DIR, 'chelsea.jpg')).raw().toBuffer({resolveWithObject: true})
  const frame: RgbImage = {data, width: info.width, height: info.height}
  const quarter = async (q: number): Promise<RgbImage> => {
    const turned = await sharp(data, {raw: {width: info.width, height: info.height, channels: 3}}).rotate(90 * q).raw().toBuffer({resolveWithObject: true})
    return {data: turned.data, width: turned.info.width, height: turned.info.height}
  }
  const views = await nsfwViews(frame)
  // The judge's views are made once, for the frame as given and each turn of it.
  assert.is(await views.rest(), await views.rest())
  // Mean absolute difference, in units of full scale: about 0.01-0.02 (libvips' and the centre window's rounding),
  // against 0.13-0.18 for the views of the frame as given.
  const gap = (a: Float32Array, b: Float32Array) => a.reduce((sum, v, i) => sum + Math.abs(v - b[i]), 0) / a.length
  const size = nsfwViewSize(224)
  for (const q of [1, 2, 3] as const) {
    const other = await nsfwViews(await quarter(q))
    const gate = gap(views.turns().subarray((q - 1) * size, q * size), other.first)
    const judge = gap(await views.rest(q), await other.rest())
    assert.ok(gate < 0.03 && judge < 0.03, `turn ${q}: gate ${gate}, judge ${judge}`)
    assert.ok(gap(views.first, other.first) > 0.1 && gap(await views.rest(), await other.rest()) > 0.1, `turn ${q} as given`)
  }
})

test.run()
