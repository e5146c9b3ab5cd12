import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {nsfwPreprocess, nsfwViewSize} from '../../../../src/lib/signals/nsfw/preprocess.js'
import {resampleSquare} from '../../../../src/lib/image/square.js'
import {JUDGE_VIEWS} from '../../../../src/lib/signals/nsfw/rule.js'
import {CANONICAL_SIDE, centreWindow, classifyViews, nsfwViews, type NsfwClassifier, type NsfwViews} from '../../../../src/lib/signals/nsfw/runner.js'
import type {RgbImage} from '../../../../src/lib/types.js'

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
 * Classifiers whose views are one float each: the frame's number times 10 plus the view's index. The gate answers
 * Porn 0.6 for the frames in `suspect`, Neutral otherwise; both write the view's number into Drawing's place
 * (scaled by 1/1000) so that the test can see which answer went where.
 */
function numbered(suspect: Set<number>): {gate: NsfwClassifier; judge: NsfwClassifier; runs: string[]} {
  const runs: string[] = []
  const model = (name: string): NsfwClassifier => ({
    viewSize: 1,
    classify: async (batch, n) => {
      runs.push(`${name} ${n}`)
      return Array.from(batch.subarray(0, n), (v) => {
        const porn = name === 'gate' && suspect.has(Math.floor(v / 10)) ? 0.6 : 0
        return Float32Array.from([v / 1000, 0, 1 - v / 1000 - porn, porn, 0])
      })
    },
  })
  return {gate: model('gate'), judge: model('judge'), runs}
}

/** Frame `f`'s views (10 f for the gate's, 10 f + 1..3 for the judge's), noting in `computed` each frame whose judge views were made. */
function numberedViews(f: number, computed: number[]): NsfwViews {
  return {
    first: Float32Array.of(10 * f),
    rest: async () => {
      computed.push(f)
      return Float32Array.of(10 * f + 1, 10 * f + 2, 10 * f + 3)
    },
  }
}

test('classifyViews: one gate run for every frame, one judge run for the three views of each frame it lets through, whose views alone are made', async () => {
  const {gate, judge, runs} = numbered(new Set([1, 3]))
  const computed: number[] = []
  const out = await classifyViews({gate, judge}, [0, 1, 2, 3].map((f) => numberedViews(f, computed)))
  // A judge run of one frame's views: onnxruntime's arena keeps what the largest run needed.
  assert.equal(runs, ['gate 4', 'judge 3', 'judge 3'])
  assert.equal(computed, [1, 3])
  const seen = out.map((p) => Array.from({length: p.length / 5}, (_, k) => Math.round(p[5 * k] * 1000)))
  assert.equal(seen, [[0], [10, 11, 12, 13], [20], [30, 31, 32, 33]])
})

test('classifyViews: frames the gate stops cost one small run, and the judge never runs', async () => {
  const {gate, judge, runs} = numbered(new Set())
  const computed: number[] = []
  const out = await classifyViews({gate, judge}, [numberedViews(0, computed), numberedViews(1, computed)])
  assert.equal(runs, ['gate 2'])
  assert.equal(computed, [])
  assert.equal(out.map((p) => p.length), [5, 5])
})

test.run()
