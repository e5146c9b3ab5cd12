import * as tf from '@tensorflow/tfjs'
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {NSFW_VIEW_SIZE, nsfwPreprocess, nsfwViewSize} from '../../../../src/lib/signals/nsfw/preprocess.js'
import type {RgbImage} from '../../../../src/lib/types.js'

await tf.setBackend('cpu')

const SIZE = 224

function image(width: number, height: number, pixel: (x: number, y: number) => [number, number, number]): RgbImage {
  const data = Buffer.alloc(width * height * 3)
  for (let y = 0; y < height; y++) for (let x = 0; x < width; x++) data.set(pixel(x, y), 3 * (y * width + x))
  return {data, width, height}
}

/** The three values at output (x, y) of the view written at `offset`. */
function at(out: Float32Array, x: number, y: number, offset = 0): number[] {
  const i = offset + 3 * (y * SIZE + x)
  return [out[i], out[i + 1], out[i + 2]]
}

const f32 = Math.fround

test('a 224x224 image is only scaled: each value is v / 255 in float32', () => {
  const img = image(SIZE, SIZE, (x, y) => [x, y, (x + y) % 256])
  const out = nsfwPreprocess(img)
  assert.is(out.length, NSFW_VIEW_SIZE)
  assert.equal(at(out, 0, 0), [0, 0, 0])
  assert.equal(at(out, 200, 17), [f32(200 / 255), f32(17 / 255), f32(217 / 255)])
  assert.equal(at(out, 223, 223), [f32(223 / 255), f32(223 / 255), f32(190 / 255)])
})

test('aligned corners: a 2x1 image goes from its first to its last pixel in 223 equal steps', () => {
  // Red 0 → 255 left to right, green 255 → 0, blue constant 51 (0.2).
  const out = nsfwPreprocess(image(2, 1, (x) => (x === 0 ? [0, 255, 51] : [255, 0, 51])))
  assert.equal(at(out, 0, 0), [0, 1, f32(0.2)])
  assert.equal(at(out, 223, 0), [1, 0, f32(0.2)])
  // Column c samples source position c / 223: red c / 223, green 1 - c / 223; every row is the same.
  assert.equal(at(out, 1, 0), [f32(1 / 223), f32(1 - 1 / 223), f32(0.2)])
  assert.equal(at(out, 100, 150), [f32(100 / 223), f32(1 - 100 / 223), f32(0.2)])
})

test('aligned corners along rows: a 1x3 image hits its middle pixel only at position 111.5, between outputs', () => {
  // Rows 0, 1, 2 are 0, 255, 0: output row r samples 2r / 223.
  const out = nsfwPreprocess(image(1, 3, (_, y) => (y === 1 ? [255, 255, 255] : [0, 0, 0])))
  assert.is(out[3 * SIZE * 111], f32(222 / 223)) // position 222/223, just below the middle pixel
  assert.is(out[3 * SIZE * 112], f32(1 - (224 / 223 - 1))) // position 224/223, just past it
  assert.is(out[3 * SIZE * 223], 0)
})

test('writes into a batch at an offset and leaves the rest alone', () => {
  const img = image(3, 3, () => [255, 255, 255])
  const batch = new Float32Array(3 * NSFW_VIEW_SIZE).fill(-1)
  nsfwPreprocess(img, {out: batch, offset: NSFW_VIEW_SIZE})
  assert.is(batch[NSFW_VIEW_SIZE - 1], -1)
  assert.is(batch[NSFW_VIEW_SIZE], 1)
  assert.is(batch[2 * NSFW_VIEW_SIZE - 1], 1)
  assert.is(batch[2 * NSFW_VIEW_SIZE], -1)
  assert.throws(() => nsfwPreprocess(img, {out: batch, offset: 2 * NSFW_VIEW_SIZE + 1}), /do not fit/)
})

test('equals tf.image.resizeBilinear(x / 255, [224, 224], true) bit for bit, as nsfwjs computes it', () => {
  for (const [w, h] of [
    [37, 53],
    [640, 427],
    [300, 301],
    [7, 1000],
  ]) {
    let seed = w * 7919 + h
    const img = image(w, h, () => {
      seed = (seed * 1103515245 + 12345) >>> 0
      return [seed & 255, (seed >>> 8) & 255, (seed >>> 16) & 255]
    })
    const expected = tf.tidy(() =>
      tf.image.resizeBilinear(tf.tensor3d(new Int32Array(img.data), [h, w, 3], 'int32').toFloat().div(tf.scalar(255)) as tf.Tensor3D, [SIZE, SIZE], true),
    )
    const want = expected.dataSync() as Float32Array
    expected.dispose()
    const got = nsfwPreprocess(img)
    let differing = 0
    for (let i = 0; i < want.length; i++) if (want[i] !== got[i]) differing++
    assert.is(differing, 0, `${w}x${h}: ${differing} values differ`)
  }
})

test('side 299 (InceptionV3\'s input) equals tf.image.resizeBilinear(x / 255, [299, 299], true) bit for bit', () => {
  const side = 299
  assert.is(nsfwViewSize(side), side * side * 3)
  for (const [w, h] of [
    [640, 427],
    [97, 131],
  ]) {
    const img = noisy(w, h)
    const expected = tf.tidy(() =>
      tf.image.resizeBilinear(tf.tensor3d(new Int32Array(img.data), [h, w, 3], 'int32').toFloat().div(tf.scalar(255)) as tf.Tensor3D, [side, side], true),
    )
    const want = expected.dataSync() as Float32Array
    expected.dispose()
    const got = nsfwPreprocess(img, {side})
    assert.is(got.length, nsfwViewSize(side))
    let differing = 0
    for (let i = 0; i < want.length; i++) if (want[i] !== got[i]) differing++
    assert.is(differing, 0, `${w}x${h}: ${differing} values differ`)
  }
  assert.throws(() => nsfwPreprocess(noisy(4, 4), {side, out: new Float32Array(NSFW_VIEW_SIZE)}), /do not fit/)
})

function noisy(width: number, height: number): RgbImage {
  let seed = width * 31 + height
  return image(width, height, () => {
    seed = (seed * 1103515245 + 12345) >>> 0
    return [seed & 255, (seed >>> 8) & 255, (seed >>> 16) & 255]
  })
}

test.run()
