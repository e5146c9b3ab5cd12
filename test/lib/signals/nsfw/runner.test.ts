import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {NSFW_VIEW_SIZE, nsfwPreprocess} from '../../../../src/lib/image/nsfw-preprocess.js'
import {classifyViews, NSFW_VIEWS, nsfwViews, type NsfwRunner, type NsfwViews} from '../../../../src/lib/signals/nsfw/runner.js'
import type {RgbImage} from '../../../../src/lib/types.js'

function noisy(width: number, height: number): RgbImage {
  let seed = width * 31 + height
  const data = Buffer.alloc(width * height * 3)
  for (let i = 0; i < data.length; i++) data[i] = (seed = (seed * 1103515245 + 12345) >>> 0) >>> 24
  return {data, width, height}
}

const view = (all: Float32Array, k: number) => Array.from(all.subarray(k * NSFW_VIEW_SIZE, (k + 1) * NSFW_VIEW_SIZE))

test('the four views: the image, its mirror, its middle 70% of each side, the whole image letterboxed', () => {
  const frame = noisy(200, 100)
  const {first, rest} = nsfwViews(frame)
  const others = rest()
  assert.equal(NSFW_VIEWS, ['image', 'mirror', 'centre', 'letterbox'])
  assert.is(first.length, NSFW_VIEW_SIZE)
  assert.is(others.length, 3 * NSFW_VIEW_SIZE)
  assert.equal(Array.from(first), Array.from(nsfwPreprocess(frame)))
  assert.equal(view(others, 0), Array.from(nsfwPreprocess(frame, {flip: true}).subarray(NSFW_VIEW_SIZE)))
  assert.equal(view(others, 1), Array.from(nsfwPreprocess(frame, {window: {left: 30, top: 15, width: 140, height: 70}})))
  assert.equal(view(others, 2), Array.from(nsfwPreprocess(frame, {window: {left: 0, top: -50, width: 200, height: 200}})))
})

/**
 * A specialist whose views are one float each: the frame's number times 10 plus the view's index. It answers
 * Porn 0.6 for the frames in `suspect` (a first look that looks again), Neutral otherwise, and writes the view's
 * number into Drawing's place (scaled by 1/1000) so that the test can see which answer went where.
 */
function numberedSpecialist(suspect: Set<number>): {runner: NsfwRunner; runs: number[]} {
  const runs: number[] = []
  return {
    runs,
    runner: {
      viewSize: 1,
      views: () => ({first: new Float32Array(0), rest: () => new Float32Array(0)}),
      classify: async (batch, n) => {
        runs.push(n)
        return Array.from(batch.subarray(0, n), (v) => {
          const porn = suspect.has(Math.floor(v / 10)) ? 0.6 : 0
          return Float32Array.from([v / 1000, 0, 1 - v / 1000 - porn, porn, 0])
        })
      },
      close: async () => {},
    },
  }
}

/** Frame `f`'s four one-float views (10 f + the view's index), noting in `computed` each frame whose other views were made. */
function numberedViews(f: number, computed: number[]): NsfwViews {
  const all = Float32Array.from([0, 1, 2, 3], (v) => 10 * f + v)
  return {
    first: all.subarray(0, 1),
    rest: () => {
      computed.push(f)
      return all.subarray(1)
    },
  }
}

test('classifyViews: one run for every first view, one more for all views of the frames worth a second look, whose other views alone are computed', async () => {
  const {runner, runs} = numberedSpecialist(new Set([1, 3]))
  const computed: number[] = []
  const out = await classifyViews(runner, [0, 1, 2, 3].map((f) => numberedViews(f, computed)))
  assert.equal(runs, [4, 6])
  assert.equal(computed, [1, 3])
  const seen = out.map((p) => Array.from({length: p.length / 5}, (_, k) => Math.round(p[5 * k] * 1000)))
  assert.equal(seen, [[0], [10, 11, 12, 13], [20], [30, 31, 32, 33]])
})

test('classifyViews: frames that all score low cost one run, and their other views are never computed', async () => {
  const {runner, runs} = numberedSpecialist(new Set())
  const computed: number[] = []
  const out = await classifyViews(runner, [numberedViews(0, computed), numberedViews(1, computed)])
  assert.equal(runs, [2])
  assert.equal(computed, [])
  assert.equal(out.map((p) => p.length), [5, 5])
})

test.run()
