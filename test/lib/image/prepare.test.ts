import sharp from 'sharp'
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {prepareFrames, prepareImage} from '../../../src/lib/image/prepare.js'
import {preprocess} from '../../../src/lib/image/preprocess.js'
import type {Preprocessing} from '../../../src/lib/model/manifest-types.js'

const P: Preprocessing = {resize: 8, crop: 8, mean: [0.5, 0.5, 0.5], std: [0.5, 0.5, 0.5], resample: 'bicubic'}
const LIMITS = {maxBytes: 1 << 20, maxPixels: 1 << 20}

/** 64x48: black bars of 8 rows top and bottom around a colourful gradient (no row or column of it is uniform). */
function letterboxed(): Buffer {
  const width = 64
  const height = 48
  const data = Buffer.alloc(width * height * 3)
  for (let y = 8; y < 40; y++) {
    for (let x = 0; x < width; x++) data.set([60 + 3 * x, 40 + 5 * y, (x * 37 + y * 11) % 256], 3 * (y * width + x))
  }
  return data
}

const png = () => sharp(letterboxed(), {raw: {width: 64, height: 48, channels: 3}}).png().toBuffer()

test('prepareImage keeps the trimmed frame and gives its preprocessed tensor', async () => {
  const {frames, tensors} = await prepareImage(await png(), {limits: LIMITS, preprocess: P, trimBorders: true})
  assert.equal(frames.map((f) => [f.width, f.height]), [[64, 32]])
  assert.equal(frames[0].data, letterboxed().subarray(8 * 64 * 3, 40 * 64 * 3))
  assert.equal(tensors, [await preprocess(frames[0], P)])
})

test('prepareImage without trimming keeps the whole decoded image', async () => {
  const {frames, tensors} = await prepareImage(await png(), {limits: LIMITS, preprocess: P, trimBorders: false})
  assert.equal(frames.map((f) => [f.width, f.height]), [[64, 48]])
  assert.equal(tensors, [await preprocess({data: letterboxed(), width: 64, height: 48}, P)])
})

test('prepareImage refuses an image over the limits before decoding it', async () => {
  const e = await prepareImage(await png(), {limits: {maxBytes: 1 << 20, maxPixels: 64 * 48 - 1}, preprocess: P, trimBorders: true}).catch((x: unknown) => x)
  assert.is((e as {code?: string}).code, 'payload_too_large')
})

test('prepareFrames trims and preprocesses frames decoded elsewhere (video)', async () => {
  const frame = {data: letterboxed(), width: 64, height: 48}
  const {frames, tensors} = await prepareFrames([frame, frame], {preprocess: P, trimBorders: true})
  assert.equal(frames.map((f) => [f.width, f.height]), [[64, 32], [64, 32]])
  assert.is(tensors.length, 2)
  assert.equal(tensors[1], await preprocess(frames[1], P))
})

test('a frame longer than MAX_ASPECT_RATIO : 1 after trimming is cut to its centre before preprocessing', async () => {
  // 1000x100: black bars of 34 rows above and below 32 gradient rows; trimmed to 1000x32 (31 : 1), cut to 640x32.
  const width = 1000
  const data = Buffer.alloc(width * 100 * 3)
  for (let y = 34; y < 66; y++) {
    for (let x = 0; x < width; x++) data.set([60 + (x % 150), 40 + 5 * y, (x * 37 + y * 11) % 256], 3 * (y * width + x))
  }
  const {frames, tensors} = await prepareFrames([{data, width, height: 100}], {preprocess: P, trimBorders: true})
  assert.equal(frames.map((f) => [f.width, f.height]), [[640, 32]])
  const rows = Array.from({length: 32}, (_, y) => data.subarray(3 * ((34 + y) * width + 180), 3 * ((34 + y) * width + 820)))
  assert.equal(frames[0].data, Buffer.concat(rows))
  assert.equal(tensors, [await preprocess(frames[0], P)])
  const untrimmed = await prepareFrames([{data, width, height: 100}], {preprocess: P, trimBorders: false})
  assert.equal(untrimmed.frames.map((f) => [f.width, f.height]), [[1000, 100]])
})

test.run()
