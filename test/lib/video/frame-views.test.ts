import {test} from 'uvu'
import * as assert from 'uvu/assert'

import type {RgbImage} from '../../../src/lib/image/rgb.js'
import {frameViews, sameFrame} from '../../../src/lib/video/frame-views.js'

/** A 16x16 frame: grey `level`, its left half at `left` when given. */
function frame(level: number, left = level): RgbImage {
  const data = Buffer.alloc(16 * 16 * 3, level)
  for (let y = 0; y < 16; y++) data.fill(left, y * 48, y * 48 + 24)
  return {data, width: 16, height: 16}
}

/** A 16x16 frame of squares 4 pixels a side, alternately `a` and `b`: a fine picture whose blocks average the same. */
function checks(a: number, b: number): RgbImage {
  const data = Buffer.alloc(16 * 16 * 3)
  for (let y = 0; y < 16; y++) for (let x = 0; x < 16; x++) data.fill((Math.floor(x / 4) + Math.floor(y / 4)) % 2 ? a : b, 3 * (y * 16 + x), 3 * (y * 16 + x) + 3)
  return {data, width: 16, height: 16}
}

test('two frames are the same frame when their 4 x 4 blocks differ by at most 4 levels on average, whatever their coarse picture', () => {
  assert.is(sameFrame(frame(100), frame(103)), true)
  assert.is(sameFrame(frame(100), frame(106)), false)
  // The same average brightness in every block, another picture: not the same frame.
  assert.is(sameFrame(checks(50, 150), frame(100)), false)
})

test("the interval's frame is scored beside the instant's unless it is the same frame, on a light or a dark page", () => {
  const plain = {views: 1, interval: true, fields: false} as const
  assert.equal(frameViews([frame(10), frame(12)], plain).map((v) => [v.image.data[0], v.interval ?? false]), [[10, false]])
  assert.equal(frameViews([frame(10), frame(200)], plain).map((v) => [v.image.data[0], v.interval ?? false]), [[10, false], [200, true]])
  // With transparency: light, dark of the instant, then of the interval. The same on the light page (white), other on
  // the dark one (a picture drawn in alpha): added, both its views.
  const alpha = {views: 2, interval: true, fields: false} as const
  const views = frameViews([frame(255), frame(0), frame(255), frame(180)], alpha)
  assert.equal(views.map((v) => [v.image.data[0], v.image.onBlack ?? false, v.interval ?? false]), [[255, false, false], [0, true, false], [255, false, true], [180, true, true]])
  // An opaque frame (both pages the same) is one view.
  assert.equal(frameViews([frame(40), frame(40), frame(40), frame(40)], alpha).length, 1)
})

test("an interlaced frame's fields are scored beside it when they are other pictures, one when both show the same, before the interval's frame", () => {
  const fields = {views: 1, interval: true, fields: true} as const
  const seen = (parts: RgbImage[]) => frameViews(parts, fields).map((v) => [v.image.data[0], v.field ?? false, v.interval ?? false])
  // Progressive content stored interlaced: both fields are the frame.
  assert.equal(seen([frame(100), frame(101), frame(99), frame(100)]), [[100, false, false]])
  // A picture in each field (the frame a blend of both): each field, then the interval's frame (another picture).
  assert.equal(seen([frame(100), frame(200), frame(0), frame(30)]), [[100, false, false], [200, true, false], [0, true, false], [30, false, true]])
  // One field another picture, the other the frame: that field alone.
  assert.equal(seen([frame(100), frame(100), frame(180), frame(100)]), [[100, false, false], [180, true, false]])
  // Both fields the same other picture: one of them.
  assert.equal(seen([frame(100), frame(180), frame(181), frame(100)]), [[100, false, false], [180, true, false]])
  // Without an interval: the frame and its fields only.
  assert.equal(frameViews([frame(100), frame(200), frame(0)], {views: 1, interval: false, fields: true}).map((v) => v.image.data[0]), [100, 200, 0])
})

test.run()
