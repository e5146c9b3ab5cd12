import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {boxesFromMap, components, corners, DEFAULT_BOX_OPTIONS, minAreaRect} from '../../../../src/lib/signals/text/boxes.js'

const round = (v: number) => Math.round(v * 1000) / 1000

/** A 60 × 30 probability map, 0.95 inside each rectangle [x0, y0, x1, y1) and 0 elsewhere. */
function mapOf(...rects: [number, number, number, number][]): Float32Array {
  const prob = new Float32Array(60 * 30)
  for (const [x0, y0, x1, y1] of rects) for (let y = y0; y < y1; y++) for (let x = x0; x < x1; x++) prob[y * 60 + x] = 0.95
  return prob
}

test('labels 8-connected regions apart', () => {
  // 1 1 0 0
  // 0 0 1 0   ← touches the first region diagonally
  // 0 0 0 0
  // 1 0 0 1
  const mask = Uint8Array.from([1, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 0, 1])
  assert.equal(components(mask, 4, 4), [[0, 1, 6], [12], [15]])
})

test('fits the minimum-area rectangle of a tilted square, width axis pointing right', () => {
  const b = minAreaRect([
    {x: 5, y: 0},
    {x: 10, y: 5},
    {x: 5, y: 10},
    {x: 0, y: 5},
  ])
  assert.equal([round(b.cx), round(b.cy), round(b.halfW * 2), round(b.halfH * 2)], [5, 5, round(Math.SQRT2 * 5), round(Math.SQRT2 * 5)])
  assert.ok(b.ux > 0)
})

test('a region twice as tall as wide is read top to bottom', () => {
  const b = minAreaRect([
    {x: 0, y: 0},
    {x: 2, y: 0},
    {x: 2, y: 8},
    {x: 0, y: 8},
  ])
  assert.equal([round(b.halfW), round(b.halfH), round(b.ux), round(b.uy)], [4, 1, 0, 1])
})

test('a block of high probability becomes one box grown by the unclip distance', async () => {
  const w = 40
  const h = 20
  const prob = new Float32Array(w * h)
  for (let y = 5; y < 11; y++) for (let x = 4; x < 34; x++) prob[y * w + x] = 0.9
  const [only, ...rest] = (await boxesFromMap(prob, w, h)).boxes
  assert.equal(rest, [])
  // 30 × 6, distance = 180 × 1.5 / 72 = 3.75 on each side.
  assert.equal([round(only.box.cx), round(only.box.cy), round(only.box.halfW), round(only.box.halfH), round(only.score)], [19, 8, 18.75, 6.75, 0.9])
  assert.equal(
    corners(only.box).map((c) => [round(c.x), round(c.y)]),
    [
      [0.25, 1.25],
      [37.75, 1.25],
      [37.75, 14.75],
      [0.25, 14.75],
    ],
  )
})

test('drops regions scoring under the box threshold and specks under the minimum side', async () => {
  const w = 20
  const h = 20
  const prob = new Float32Array(w * h)
  for (let y = 2; y < 8; y++) for (let x = 2; x < 12; x++) prob[y * w + x] = 0.4
  prob[15 * w + 15] = 0.99
  assert.equal((await boxesFromMap(prob, w, h, DEFAULT_BOX_OPTIONS)).boxes, [])
})

test('keeps the largest maxBoxes regions and says when it left some out', async () => {
  // Three blocks far apart, of 24, 16 and 8 pixels' width.
  const prob = mapOf([3, 3, 27, 8], [3, 14, 19, 19], [3, 24, 11, 29])
  const all = await boxesFromMap(prob, 60, 30)
  assert.equal([all.boxes.length, all.truncated], [3, false])
  const two = await boxesFromMap(prob, 60, 30, {...DEFAULT_BOX_OPTIONS, maxBoxes: 2})
  assert.equal(two.truncated, true)
  assert.equal(
    two.boxes.map((b) => round(b.box.cy)),
    all.boxes.slice(0, 2).map((b) => round(b.box.cy)),
  )
})

test('orders boxes top to bottom, then left to right on a line', async () => {
  const prob = mapOf([40, 3, 58, 8], [3, 3, 25, 8], [3, 18, 40, 24])
  assert.equal(
    (await boxesFromMap(prob, 60, 30)).boxes.map((b) => [round(b.box.cx), round(b.box.cy)]),
    [
      [14, 5.5],
      [49, 5.5],
      [21.5, 21],
    ],
  )
})

test('joins the words of a line whose gap is under half its height, not a line below', async () => {
  const prob = mapOf([3, 3, 25, 8], [32, 3, 55, 8], [3, 18, 40, 24])
  const boxes = (await boxesFromMap(prob, 60, 30)).boxes.map((b) => [round(b.box.cx), round(b.box.cy), round(b.box.halfW)])
  assert.is(boxes.length, 2)
  // The joined line spans both grown word boxes: x from 3 - 3.056 to 55 + 3.080.
  assert.equal(boxes[0], [29.012, 5.5, 29.068])
  assert.equal(boxes[1].slice(0, 2), [21.5, 21])
})

test.run()
