/**
 * CLIP's resize against Pillow's, the resize OpenAI CLIP was trained with. test/fixtures/clip-pillow-reference.json
 * holds Pillow's 224 x 224 crops (8-bit levels on a grid of every fourth pixel) of the images of
 * scripts/clip/reference-images.ts, recorded by scripts/clip/record-pillow-reference.py from the very pixels mod
 * decodes, so the resize is the only step compared. Levels are recovered from mod's normalised tensor exactly
 * (each is one of 256 values per channel).
 */
import {createHash} from 'node:crypto'
import {readFile} from 'node:fs/promises'

import sharp from 'sharp'
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {cropOffset, preprocess, resizedSize} from '../../../src/lib/image/preprocess.js'
import type {Preprocessing} from '../../../src/lib/model/manifest-types.js'
import type {RgbImage} from '../../../src/lib/types.js'
import {referenceImages, stripes} from '../../../scripts/clip/reference-images.js'

type Rgb = [number, number, number]
const MEAN: Rgb = [0.48145466, 0.4578275, 0.40821073]
const STD: Rgb = [0.26862954, 0.26130258, 0.27577711]
const CLIP: Preprocessing = {resize: 224, crop: 224, mean: MEAN, std: STD, resample: 'bicubic'}

/**
 * Tolerances in 8-bit levels, from what was measured on this set (docs/models.md). Bicubic: 11 levels at worst on
 * the grid (15 over whole crops: an edge pixel of an enlarged image), 0.44 on average on the worst image (the zone
 * plate), 0.14 over all, channel means within 0.04; the unfiltered resize this replaced was 12 levels off on
 * average. Bilinear, which no preset uses, in one libvips step: 6 at worst, 0.83 on the worst image, channel means
 * up to 0.61 apart (the mosaic, where libvips shrinks with a box filter first).
 */
const TOLERANCE = {
  bicubic: {max: 16, meanPerImage: 0.6, meanOverall: 0.25, channelMean: 0.25},
  bilinear: {max: 16, meanPerImage: 1.0, meanOverall: 0.6, channelMean: 0.8},
}

interface Recorded {
  mean: Rgb
  grid: string
}

interface Reference {
  reference: string
  size: number
  crop: number
  grid: {start: number; stride: number}
  images: {name: string; width: number; height: number; pixels_sha256: string; resized: [number, number]; bicubic: Recorded; bilinear?: Recorded}[]
}

const reference = JSON.parse(await readFile(new URL('../../fixtures/clip-pillow-reference.json', import.meta.url), 'utf8')) as Reference
const images = new Map((await referenceImages()).map((r) => [r.name, r.image]))

/** The 8-bit crop mod's preprocessing made, HWC, read back from the normalised CHW tensor. */
function levels(tensor: Float32Array, p: Preprocessing): Uint8Array {
  const plane = p.crop * p.crop
  const out = new Uint8Array(3 * plane)
  for (let i = 0; i < plane; i++) {
    for (let c = 0; c < 3; c++) out[3 * i + c] = Math.round((tensor[c * plane + i] * p.std[c] + p.mean[c]) * 255)
  }
  return out
}

interface Difference {
  max: number
  mean: number
  /** How far the mean level of each channel over the whole crop is from Pillow's. */
  channelMeans: number[]
}

function compare(ours: Uint8Array, recorded: Recorded): Difference {
  const {start, stride} = reference.grid
  const grid = Buffer.from(recorded.grid, 'base64')
  const side = reference.crop
  let max = 0
  let sum = 0
  let k = 0
  for (let y = start; y < side; y += stride) {
    for (let x = start; x < side; x += stride) {
      for (let c = 0; c < 3; c++) {
        const d = Math.abs(ours[3 * (y * side + x) + c] - grid[k++])
        max = Math.max(max, d)
        sum += d
      }
    }
  }
  assert.is(k, grid.length, 'the grid covers the recorded values')
  const channelMeans = [0, 1, 2].map((c) => {
    let s = 0
    for (let i = c; i < ours.length; i += 3) s += ours[i]
    return Math.abs(s / (ours.length / 3) - recorded.mean[c])
  })
  return {max, mean: sum / k, channelMeans}
}

test('the recorded inputs are the pixels mod decodes or makes, and the resized sizes are torchvision\'s', () => {
  assert.is(reference.images.length, images.size)
  for (const r of reference.images) {
    const image = images.get(r.name)
    assert.ok(image, r.name)
    assert.is(createHash('sha256').update(image.data).digest('hex'), r.pixels_sha256, `${r.name}: pixels differ from those recorded`)
    const size = resizedSize(r.width, r.height, reference.size)
    assert.equal([size.width, size.height], r.resized, r.name)
  }
})

for (const resample of ['bicubic', 'bilinear'] as const) {
  test(`${resample}: every image's crop is within a few levels of Pillow's`, async () => {
    const p: Preprocessing = {...CLIP, resample}
    const tolerance = TOLERANCE[resample]
    let max = 0
    let worst = {name: '', mean: 0}
    let worstChannel = 0
    let sum = 0
    let n = 0
    for (const r of reference.images) {
      const recorded = r[resample]
      if (!recorded) continue
      const d = compare(levels(await preprocess(images.get(r.name) as RgbImage, p), p), recorded)
      assert.ok(d.max <= tolerance.max, `${r.name}: ${d.max} levels off at worst`)
      assert.ok(d.mean <= tolerance.meanPerImage, `${r.name}: ${d.mean.toFixed(3)} levels off on average`)
      for (const m of d.channelMeans) assert.ok(m <= tolerance.channelMean, `${r.name}: channel means ${d.channelMeans.map((v) => v.toFixed(3))} levels apart`)
      max = Math.max(max, d.max)
      if (d.mean > worst.mean) worst = {name: r.name, mean: d.mean}
      worstChannel = Math.max(worstChannel, ...d.channelMeans)
      sum += d.mean
      n++
    }
    const overall = sum / n
    assert.ok(overall <= tolerance.meanOverall, `${overall.toFixed(3)} levels off on average`)
    process.stdout.write(
      `clip vs Pillow ${resample}, ${n} images: max ${max} levels, mean ${overall.toFixed(3)} (worst image ${worst.mean.toFixed(3)}, ${worst.name}; ` +
        `channel means within ${worstChannel.toFixed(2)}) [${reference.reference}]\n`,
    )
  })
}

test('1-pixel stripes shrink to an even grey, where an interpolation without a filter keeps stripes', async () => {
  const img = stripes(1000, 600)
  const ours = levels(await preprocess(img, CLIP), CLIP)
  const spread = (values: Uint8Array) => values.reduce((m, v) => Math.max(m, v), 0) - values.reduce((m, v) => Math.min(m, v), 255)
  // Catmull-Rom's negative lobes leave a level either way at the two sides (the crop is the middle).
  assert.ok(spread(ours) <= 2, `spread ${spread(ours)}`)
  assert.ok(Math.abs(ours.reduce((s, v) => s + v, 0) / ours.length - 127.5) < 1)
  // What CLIP preprocessing did before (and transformers.js does in Node): sharp's affine with the bicubic
  // interpolator reads a 4 x 4 neighbourhood whatever the scale.
  const {width, height} = resizedSize(1000, 600, 224)
  const affine = await sharp(img.data, {raw: {width: 1000, height: 600, channels: 3}}).affine([width / 1000, 0, 0, height / 600], {interpolator: 'bicubic'}).raw().toBuffer()
  const left = cropOffset(width, 224)
  const row = Uint8Array.from({length: 224}, (_, x) => affine[3 * (100 * width + left + x)])
  assert.ok(spread(row) > 100, `the unfiltered resize spreads ${spread(row)} levels`)
})

test('an image enlarged to 224 keeps its edges where Pillow puts them (pixel centres, not corners)', async () => {
  // A 56-pixel-wide image, black on its left half: enlarged 4 times, the edge falls between columns 111 and 112.
  const data = Buffer.alloc(56 * 56 * 3)
  for (let y = 0; y < 56; y++) for (let x = 28; x < 56; x++) data.fill(255, 3 * (y * 56 + x), 3 * (y * 56 + x + 1))
  const ours = levels(await preprocess({data, width: 56, height: 56}, CLIP), CLIP)
  const at = (x: number) => ours[3 * (100 * 224 + x)]
  assert.is(at(111) + at(112), 255, `columns 111 and 112: ${at(111)}, ${at(112)}`)
  assert.is(at(0), 0)
  assert.is(at(223), 255)
})

test.run()
