import {CLIPImageProcessor, RawImage} from '@huggingface/transformers'
import sharp from 'sharp'
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {cropOffset, preprocess, resizedSize, tensorSize} from '../../../src/lib/image/preprocess.js'
import type {Preprocessing} from '../../../src/lib/model/manifest-types.js'
import type {RgbImage} from '../../../src/lib/types.js'

type Rgb = [number, number, number]
const MEAN: Rgb = [0.48145466, 0.4578275, 0.40821073]
const STD: Rgb = [0.26862954, 0.26130258, 0.27577711]
const CLIP: Preprocessing = {resize: 224, crop: 224, mean: MEAN, std: STD, resample: 'bicubic'}

// (v / 255 - mean) / std, worked out by hand for the CLIP mean and std.
const R255 = (1 - 0.48145466) / 0.26862954 // 1.9303363
const R0 = -0.48145466 / 0.26862954 // -1.7922625
const G0 = -0.4578275 / 0.26130258 // -1.7520971
const G255 = (1 - 0.4578275) / 0.26130258 // 2.0748838
const B0 = -0.40821073 / 0.27577711 // -1.4802198
const B255 = (1 - 0.40821073) / 0.27577711 // 2.1458961
const B128 = (128 / 255 - 0.40821073) / 0.27577711 // 0.3399486

function close(actual: number, expected: number, what: string): void {
  assert.ok(Math.abs(actual - expected) < 1e-6, `${what}: ${actual} != ${expected}`)
}

function solid(width: number, height: number, colour: (x: number, y: number) => Rgb): RgbImage {
  const data = Buffer.alloc(width * height * 3)
  for (let y = 0; y < height; y++) for (let x = 0; x < width; x++) data.set(colour(x, y), 3 * (y * width + x))
  return {data, width, height}
}

/** Values at (x, y) of the three planes of a crop x crop image written at `offset`. */
function at(out: Float32Array, crop: number, x: number, y: number, offset = 0): number[] {
  const i = offset + y * crop + x
  return [out[i], out[i + crop * crop], out[i + 2 * crop * crop]]
}

test('sizes: shortest side to `resize`, the other floored, as transformers.js does', () => {
  assert.equal(resizedSize(640, 480, 224), {width: 298, height: 224})
  assert.equal(resizedSize(1280, 720, 224), {width: 398, height: 224})
  assert.equal(resizedSize(100, 300, 224), {width: 224, height: 672})
  assert.equal(resizedSize(500, 223, 224), {width: 502, height: 224})
  assert.equal(resizedSize(224, 224, 224), {width: 224, height: 224})
  assert.equal(resizedSize(896, 448, 224), {width: 448, height: 224})
})

test('crop offsets: floor of half the excess, padding after when the image is smaller', () => {
  assert.is(cropOffset(298, 224), 37)
  assert.is(cropOffset(225, 224), 0)
  assert.is(cropOffset(224, 224), 0)
  assert.is(cropOffset(220, 224), -2)
  assert.is(cropOffset(221, 224), -1)
})

test('rescales and normalises each channel, in CHW order, when the image is already crop x crop', async () => {
  const p: Preprocessing = {...CLIP, resize: 4, crop: 4}
  const colours: Rgb[] = [[255, 0, 128], [0, 255, 0], [0, 0, 255], [128, 64, 0]]
  const img = solid(4, 4, (x, y) => colours[(y * 4 + x) % 4])
  const out = await preprocess(img, p)
  assert.is(out.length, tensorSize(p))
  assert.is(out.length, 48)
  // Pixel (0, 0) = (255, 0, 128): plane R at 0, plane G at 16, plane B at 32.
  close(out[0], R255, 'R of (0,0)')
  close(out[16], G0, 'G of (0,0)')
  close(out[32], B128, 'B of (0,0)')
  // Pixel (1, 0) = (0, 255, 0) and (2, 0) = (0, 0, 255).
  close(out[1], R0, 'R of (1,0)')
  close(out[17], G255, 'G of (1,0)')
  close(out[32 + 2], B255, 'B of (2,0)')
  close(out[2], R0, 'R of (2,0)')
  close(out[33], B0, 'B of (1,0)')
  // Pixel (3, 1) = row 1, column 3 = colours[7 % 4] = (128, 64, 0): index 7 in each plane.
  close(out[7], (128 / 255 - MEAN[0]) / STD[0], 'R of (3,1)')
  close(out[16 + 7], (64 / 255 - MEAN[1]) / STD[1], 'G of (3,1)')
  close(out[32 + 7], B0, 'B of (3,1)')
})

test('writes at an offset into a larger batch buffer, leaving the rest untouched', async () => {
  const p: Preprocessing = {...CLIP, resize: 4, crop: 4}
  const batch = new Float32Array(3 * tensorSize(p)).fill(NaN)
  const result = await preprocess(solid(4, 4, () => [255, 255, 255]), p, batch, tensorSize(p))
  assert.is(result, batch)
  assert.ok(batch.subarray(0, 48).every(Number.isNaN), 'first image untouched')
  assert.ok(batch.subarray(96).every(Number.isNaN), 'third image untouched')
  assert.equal(at(batch, 4, 0, 0, 48).map((v) => v.toFixed(6)), [R255, G255, B255].map((v) => v.toFixed(6)))
  assert.equal(at(batch, 4, 3, 3, 48).map((v) => v.toFixed(6)), [R255, G255, B255].map((v) => v.toFixed(6)))
})

test('refuses an offset that does not leave room for the image', async () => {
  const p: Preprocessing = {...CLIP, resize: 4, crop: 4}
  try {
    await preprocess(solid(4, 4, () => [0, 0, 0]), p, new Float32Array(60), 13)
    assert.unreachable('should have thrown')
  } catch (e) {
    assert.instance(e, RangeError)
  }
})

test('centre-crops a 448x224 image: the crop is red on its left half, blue on its right half', async () => {
  // Red on the left half, blue on the right: the centred 224 crop is red then blue, split in the middle.
  const out = await preprocess(solid(448, 224, (x) => (x < 224 ? [255, 0, 0] : [0, 0, 255])), CLIP)
  for (const x of [0, 111]) close(at(out, 224, x, 100)[0], R255, `R at x=${x}`)
  for (const x of [112, 223]) {
    close(at(out, 224, x, 100)[0], R0, `R at x=${x}`)
    close(at(out, 224, x, 100)[2], B255, `B at x=${x}`)
  }
})

test('resizes the shortest side before cropping: 896x448 halves become the crop halves', async () => {
  const out = await preprocess(solid(896, 448, (x) => (x < 448 ? [255, 0, 0] : [0, 0, 255])), CLIP)
  // 896x448 -> 448x224, crop from x = 112: the edge falls at crop column 112, blurred by a pixel or two.
  for (const x of [0, 50, 108]) close(at(out, 224, x, 10)[0], R255, `red at x=${x}`)
  for (const x of [116, 170, 223]) close(at(out, 224, x, 10)[2], B255, `blue at x=${x}`)
})

test('crops the middle of a portrait image', async () => {
  // 224x672 in thirds red / green / blue: the crop is the green third.
  const thirds: Rgb[] = [[255, 0, 0], [0, 255, 0], [0, 0, 255]]
  const out = await preprocess(solid(224, 672, (_, y) => thirds[Math.floor(y / 224)]), CLIP)
  for (const [x, y] of [[0, 0], [223, 0], [100, 100], [0, 223], [223, 223]]) {
    const [r, g, b] = at(out, 224, x, y)
    close(r, R0, 'R')
    close(g, G255, 'G')
    close(b, B0, 'B')
  }
})

test('pads with zeros (before normalisation) when the crop is larger than the resized image', async () => {
  const p: Preprocessing = {...CLIP, resize: 4, crop: 6}
  const out = await preprocess(solid(4, 4, () => [255, 255, 255]), p)
  assert.equal(at(out, 6, 0, 0).map((v) => v.toFixed(6)), [R0, G0, B0].map((v) => v.toFixed(6)))
  assert.equal(at(out, 6, 1, 1).map((v) => v.toFixed(6)), [R255, G255, B255].map((v) => v.toFixed(6)))
  assert.equal(at(out, 6, 5, 5).map((v) => v.toFixed(6)), [R0, G0, B0].map((v) => v.toFixed(6)))
})

test('reads an image that is a view into a larger buffer (as trimmed frames are)', async () => {
  const big = solid(64, 96, (x, y) => [(x * 4) & 255, (y * 2) & 255, (x * y) & 255])
  const view = {data: big.data.subarray(3 * 64 * 16, 3 * 64 * 80), width: 64, height: 64}
  const copy = {data: Buffer.from(view.data), width: 64, height: 64}
  const p: Preprocessing = {...CLIP, resize: 32, crop: 32}
  assert.equal(await preprocess(view, p), await preprocess(copy, p))
})

test('matches transformers.js CLIPImageProcessor bit for bit where no resize happens (the crop, rescale and normalisation)', async () => {
  // transformers.js resizes with sharp's unfiltered affine; mod follows Pillow there (clip-pillow.test.ts).
  const pattern = (w: number, h: number) =>
    solid(w, h, (x, y) => [Math.floor((x * 255) / w), Math.floor((y * 255) / h), ((x * y) >> 4) & 255])
  for (const resample of ['bicubic', 'bilinear'] as const) {
    const processor = new CLIPImageProcessor({
      do_resize: true,
      size: {shortest_edge: 224},
      resample: resample === 'bicubic' ? 3 : 2,
      do_center_crop: true,
      crop_size: 224,
      do_rescale: true,
      rescale_factor: 1 / 255,
      do_normalize: true,
      image_mean: MEAN,
      image_std: STD,
    } as ConstructorParameters<typeof CLIPImageProcessor>[0])
    for (const [w, h] of [[224, 224], [298, 224], [224, 301], [225, 224]]) {
      assert.equal(resizedSize(w, h, 224), {width: w, height: h})
      const img = pattern(w, h)
      const theirs = await processor(new RawImage(new Uint8ClampedArray(img.data), w, h, 3))
      const expected = theirs.pixel_values.data as Float32Array
      const ours = await preprocess(img, {...CLIP, resample})
      let differing = 0
      for (let i = 0; i < ours.length; i++) if (ours[i] !== expected[i]) differing++
      assert.is(differing, 0, `${resample} ${w}x${h}: ${differing} values differ`)
    }
  }
})

/** Noise: every pixel differs from its neighbours, so a crop taken one pixel off or filtered differently shows. */
function noise(width: number, height: number, seed: number): RgbImage {
  let state = seed
  const data = Buffer.alloc(width * height * 3)
  for (let i = 0; i < data.length; i++) {
    state = (Math.imul(state, 1_103_515_245) + 12_345) >>> 0
    data[i] = state >>> 24
  }
  return {data, width, height}
}

/** The whole image resized by libvips (as a step of preprocess resizes it), before any crop. */
async function resizedWhole(img: RgbImage, width: number, height: number, kernel: 'cubic' | 'linear'): Promise<RgbImage> {
  const data = await sharp(img.data, {raw: {width: img.width, height: img.height, channels: 3}}).resize(width, height, {kernel, fit: 'fill'}).raw().toBuffer()
  return {data, width, height}
}

test('the crop is resized alone, in the resize\'s own pipeline: the same values as cropping the whole resized image', async () => {
  // A 1280x720 photo (one bicubic step), a portrait with an odd excess, bilinear, and 1920x1080 (two bicubic steps).
  for (const [w, h, resample] of [[1280, 720, 'bicubic'], [500, 901, 'bicubic'], [1280, 720, 'bilinear'], [1920, 1080, 'bicubic']] as const) {
    const img = noise(w, h, w + h)
    const p = {...CLIP, resample}
    const kernel = resample === 'bicubic' ? 'cubic' : 'linear'
    const target = resizedSize(w, h, 224)
    const factor = Math.max(w / target.width, h / target.height)
    // preprocess reduces by less than 3.9 a step; the first of two steps is made here as it makes it.
    const first = factor > 3.9 ? await resizedWhole(img, Math.round(w / Math.sqrt(factor)), Math.round(h / Math.sqrt(factor)), kernel) : img
    const whole = await resizedWhole(first, target.width, target.height, kernel)
    // An image at the resized size is only cropped and normalised.
    const [ours, expected] = [await preprocess(img, p), await preprocess(whole, p)]
    let differing = 0
    for (let i = 0; i < ours.length; i++) if (ours[i] !== expected[i]) differing++
    assert.is(differing, 0, `${w}x${h} ${resample}: ${differing} values differ`)
  }
})

test.run()
