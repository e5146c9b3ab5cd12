import sharp, {type Sharp} from 'sharp'
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {readFile} from 'node:fs/promises'

import {DEFAULT_LIMITS} from '../../../src/lib/config/settings.js'
import {frameIndices, MAX_FRAMES, MAX_OTHER_FRAMES, MAX_PAGES} from '../../../src/lib/image/animation-frames.js'
import {decodeBound, decodedPixels, decodeImage, disableDecodeCache, MAX_SIDE, MIN_FRAME_PIXELS, planDecode, probeImage, type ImageLimits} from '../../../src/lib/image/decode.js'
import type {RgbImage} from '../../../src/lib/types.js'
import {storedLayout} from '../../../src/lib/image/orientation.js'
import {rejection} from '../../helpers/errors.js'
import {greyPng, hiddenFrameApng, manyFrameGif, pngChunk, pngClaiming, PNG_SIGNATURE} from '../../helpers/hostile-images.js'
import {sharpRuns} from '../../helpers/sharp-runs.js'
import {slideshowWebp} from '../../helpers/slideshow.js'

const LIMITS: ImageLimits = {maxBytes: 25 * 1024 * 1024, maxPixels: 100_000_000}
const RED = [255, 0, 0]
const BLUE = [0, 0, 255]
const WHITE = [255, 255, 255]

/** 40x30, left half red, right half blue. */
function halves(): Buffer {
  const w = 40
  const h = 30
  const data = Buffer.alloc(w * h * 3)
  for (let i = 0; i < w * h; i++) data.set(i % w < w / 2 ? RED : BLUE, 3 * i)
  return data
}
const raw = (data: Buffer, width: number, height: number, channels: 1 | 2 | 3 | 4 = 3) =>
  sharp(data, {raw: {width, height, channels}})

function pixel(img: RgbImage, x: number, y: number): number[] {
  const i = 3 * (y * img.width + x)
  return [img.data[i], img.data[i + 1], img.data[i + 2]]
}

function near(actual: number[], expected: number[], tolerance: number, what: string): void {
  const ok = actual.every((v, c) => Math.abs(v - expected[c]) <= tolerance)
  assert.ok(ok, `${what}: got ${actual}, expected ${expected} ± ${tolerance}`)
}

/** An animated GIF (or WebP) whose frame i is a flat colour: red = 10 * i; `delay`: each frame's, in milliseconds. */
async function animatedGif(frames: number, width = 16, height = 12, delay?: number[], format: 'gif' | 'webp' = 'gif'): Promise<Buffer> {
  const data = Buffer.alloc(width * height * frames * 3)
  for (let f = 0; f < frames; f++) {
    for (let p = 0; p < width * height; p++) data.set([10 * f, 100, 200], 3 * (f * width * height + p))
  }
  const image = sharp(data, {raw: {width, height: height * frames, channels: 3, pageHeight: height}})
  return (format === 'gif' ? image.gif({...(delay ? {delay} : {})}) : image.webp({lossless: true, ...(delay ? {delay} : {})})).toBuffer()
}

const encoders: Record<string, {encode: (s: Sharp) => Sharp; tolerance: number}> = {
  jpeg: {encode: (s) => s.jpeg({quality: 90}), tolerance: 12},
  png: {encode: (s) => s.png(), tolerance: 0},
  webp: {encode: (s) => s.webp({lossless: true}), tolerance: 0},
  gif: {encode: (s) => s.gif(), tolerance: 0},
  avif: {encode: (s) => s.avif({quality: 90, effort: 0}), tolerance: 16},
  tiff: {encode: (s) => s.tiff({compression: 'lzw'}), tolerance: 0},
}

for (const [format, {encode, tolerance}] of Object.entries(encoders)) {
  test(`decodes ${format} to one 8-bit RGB image`, async () => {
    const file = await encode(raw(halves(), 40, 30)).toBuffer()
    assert.is((await probeImage(file)).format, format)
    const images = await decodeImage(file, LIMITS)
    assert.is(images.length, 1)
    const [img] = images
    assert.is(img.width, 40)
    assert.is(img.height, 30)
    assert.is(img.data.length, 40 * 30 * 3)
    near(pixel(img, 5, 15), RED, tolerance, 'left half')
    near(pixel(img, 34, 15), BLUE, tolerance, 'right half')
  })
}

test('applies EXIF orientation: orientation 6 turns the stored image a quarter clockwise', async () => {
  // Stored 60x40, white with a red 10x10 patch in the top-left corner; displayed it is 40x60 with the patch top-right.
  const w = 60
  const h = 40
  const data = Buffer.alloc(w * h * 3, 255)
  for (let y = 0; y < 10; y++) for (let x = 0; x < 10; x++) data.set(RED, 3 * (y * w + x))
  const file = await raw(data, w, h).jpeg({quality: 95}).withMetadata({orientation: 6}).toBuffer()
  assert.is((await sharp(file).metadata()).orientation, 6)
  const [img] = await decodeImage(file, LIMITS)
  assert.is(img.width, 40)
  assert.is(img.height, 60)
  near(pixel(img, 35, 4), RED, 12, 'top-right corner')
  near(pixel(img, 4, 4), WHITE, 12, 'top-left corner')
  near(pixel(img, 35, 55), WHITE, 12, 'bottom-right corner')
})

/** 7x5, every pixel a different colour, so that any wrong turn or mirror shows. */
function distinct(channels: 3 | 4, depth16 = false): Sharp {
  const data = Buffer.alloc(7 * 5 * channels)
  for (let i = 0; i < 7 * 5; i++) data.set([(i * 37) % 256, (i * 91) % 256, (i * 13) % 256, 255 - i * 5].slice(0, channels), channels * i)
  const image = raw(data, 7, 5, channels)
  return depth16 ? image.toColourspace('rgb16') : image
}

test('applies each EXIF orientation 1-8 exactly as libvips does, for an 8-bit JPEG and a 16-bit RGBA PNG', async () => {
  const files = {jpeg: (o: number) => distinct(3).jpeg({quality: 100}).withMetadata({orientation: o}), png16: (o: number) => distinct(4, true).png().withMetadata({orientation: o})}
  for (const [kind, make] of Object.entries(files)) {
    for (let o = 1; o <= 8; o++) {
      const file = await make(o).toBuffer()
      assert.is((await probeImage(file)).orientation, o)
      // What decoding did in one libvips pipeline: orient the stored pixels, then flatten and cast; the PNG, whose
      // alpha is not opaque, onto white and onto black (flattened after the cast to 8 bits: within 2 of libvips', which
      // flattens the 16-bit values).
      const flattened = (background: string) => sharp(file).autoOrient().flatten({background}).toColourspace('srgb').raw({depth: 'uchar'}).toBuffer({resolveWithObject: true})
      const expected = await Promise.all((kind === 'jpeg' ? ['#ffffff'] : ['#ffffff', '#000000']).map(flattened))
      const images = await decodeImage(file, LIMITS)
      assert.is(images.length, expected.length, `${kind} orientation ${o}: views`)
      for (const [k, img] of images.entries()) {
        assert.equal([img.width, img.height], [expected[k].info.width, expected[k].info.height], `${kind} orientation ${o}: size`)
        const off = img.data.reduce((worst, v, i) => Math.max(worst, Math.abs(v - expected[k].data[i])), 0)
        assert.ok(off <= (kind === 'jpeg' ? 0 : 2), `${kind} orientation ${o}: pixels off by ${off}`)
        assert.is(img.orientation, o === 1 ? undefined : o, `${kind} orientation ${o}: named only when applied`)
      }
    }
  }
})

test('storedLayout reads back the stored pixels of an image decoded with each EXIF orientation 2-8, exactly', async () => {
  for (let o = 1; o <= 8; o++) {
    const file = await distinct(3).png().withMetadata({orientation: o}).toBuffer()
    const [img] = await decodeImage(file, LIMITS)
    const layout = storedLayout(img)
    if (o === 1) {
      assert.is(layout, undefined, 'no orientation, nothing to undo')
      continue
    }
    const stored = await sharp(file, {autoOrient: false}).raw().toBuffer({resolveWithObject: true})
    assert.equal([layout?.width, layout?.height], [7, 5], `orientation ${o}: size`)
    const {start, stepX, stepY} = layout as NonNullable<typeof layout>
    const read = Buffer.alloc(7 * 5 * 3)
    for (let y = 0; y < 5; y++) for (let x = 0; x < 7; x++) img.data.copy(read, 3 * (y * 7 + x), 3 * (start + x * stepX + y * stepY), 3 * (start + x * stepX + y * stepY) + 3)
    assert.ok(read.equals(stored.data), `orientation ${o}: pixels`)
  }
})

test('plans a still over half the pixel limit at half of it, one within it at full size', () => {
  assert.equal(planDecode({width: 40, height: 30}, {maxPixels: 2400}), {width: 40, height: 30})
  assert.equal(planDecode({width: 40, height: 30}, {maxPixels: 2000}), {width: 36, height: 27})
  // The defaults: a 10 000 x 10 000 image is decoded at 7071 x 7071 (50 million pixels).
  assert.equal(planDecode({width: 10_000, height: 10_000}, DEFAULT_LIMITS), {width: 7071, height: 7071})
})

test('decodes a still over half the pixel limit smaller, turned as its orientation says, with its scale', async () => {
  const limits = {...LIMITS, maxPixels: 2000}
  const [img] = await decodeImage(await raw(halves(), 40, 30).png().withMetadata({orientation: 6}).toBuffer(), limits)
  assert.equal([img.width, img.height], [27, 36])
  assert.is(img.scale, 40 / 36, 'the file has 40/36 pixels per pixel decoded')
  // Turned a quarter clockwise: the red left half is now on top.
  near(pixel(img, 13, 4), RED, 0, 'top')
  near(pixel(img, 13, 31), BLUE, 0, 'bottom')
  const [upright] = await decodeImage(await raw(halves(), 40, 30).png().toBuffer(), limits)
  assert.equal([upright.width, upright.height, upright.scale], [36, 27, 40 / 36])
  const [whole] = await decodeImage(await raw(halves(), 40, 30).png().toBuffer(), {...LIMITS, maxPixels: 2400})
  assert.equal([whole.width, whole.height, whole.scale], [40, 30, undefined])
})

test('plans a large JPEG or WebP reduced to twice the side the signals resample to, from 3 times that; nothing else', () => {
  const side = 224
  // 1 344 = 3 x 2 x 224: the smallest shorter side decoded reduced, to a shorter side of 448.
  assert.equal(planDecode({width: 4032, height: 3024, format: 'jpeg'}, DEFAULT_LIMITS, side), {width: 597, height: 448, reduced: true})
  assert.equal(planDecode({width: 1344, height: 2000, format: 'webp'}, DEFAULT_LIMITS, side), {width: 448, height: 667, reduced: true})
  assert.equal(planDecode({width: 2000, height: 1343, format: 'jpeg'}, DEFAULT_LIMITS, side), {width: 2000, height: 1343})
  // Other formats have no reduced decoding: resizing after a full decode would only add work.
  assert.equal(planDecode({width: 4032, height: 3024, format: 'png'}, DEFAULT_LIMITS, side), {width: 4032, height: 3024})
  // A signal reading every pixel (no side) keeps every pixel.
  assert.equal(planDecode({width: 4032, height: 3024, format: 'jpeg'}, DEFAULT_LIMITS), {width: 4032, height: 3024})
  // A sliver whose reduced size would still be over the limit's share is planned by the limit, as before.
  assert.equal(planDecode({width: 60_000, height: 1400, format: 'jpeg'}, {maxPixels: 10_000_000}, side), planDecode({width: 60_000, height: 1400}, {maxPixels: 10_000_000}))
})

test('decodes a large JPEG reduced, turned as its orientation says, with its scale; the same content as every pixel', async () => {
  // Smooth content (halves and a gradient): reduced and whole decodes agree closely once brought to one size.
  const width = 1800
  const height = 1400
  const data = Buffer.alloc(width * height * 3)
  for (let y = 0; y < height; y++) for (let x = 0; x < width; x++) data.set(x < width / 2 ? [255, 0, 0] : [0, Math.floor((y * 255) / height), 255], 3 * (y * width + x))
  const jpeg = await raw(data, width, height).jpeg({quality: 90}).withMetadata({orientation: 6}).toBuffer()
  const [reduced] = await decodeImage(jpeg, LIMITS, undefined, 224)
  assert.equal([reduced.width, reduced.height, reduced.scale], [448, 576, width / 576])
  const [whole] = await decodeImage(jpeg, LIMITS)
  assert.equal([whole.width, whole.height, whole.scale], [1400, 1800, undefined])
  const {data: small} = await sharp(whole.data, {raw: {width: 1400, height: 1800, channels: 3}}).resize(448, 576, {fit: 'fill'}).raw().toBuffer({resolveWithObject: true})
  // Apart only at the edge between the halves (a pixel or two of each row) and by rounding elsewhere.
  let off = 0
  for (let i = 0; i < small.length; i++) if (Math.abs(small[i] - reduced.data[i]) > 8) off++
  assert.ok(off < small.length / 100, `${off} of ${small.length} values differ by more than 8`)
  // Turned a quarter clockwise: the red left half is now on top.
  near(pixel(reduced, 224, 100), RED, 8, 'top')
  const [r, , b] = pixel(reduced, 224, 500)
  assert.ok(r < 8 && b > 247, `bottom ${pixel(reduced, 224, 500)}`)
})

test('a JPEG or WebP is decoded, scaled and turned in one libvips pipeline; a 16-bit PNG is turned in a second, on 8-bit pixels', async () => {
  const jpeg = await distinct(3).jpeg({quality: 100}).withMetadata({orientation: 6}).toBuffer()
  const webp = await distinct(3).webp({lossless: true}).withMetadata({orientation: 5}).toBuffer()
  const png16 = await distinct(4, true).png().withMetadata({orientation: 6}).toBuffer()
  const probed = await Promise.all([jpeg, webp, png16].map((f) => probeImage(f)))
  assert.is((await sharpRuns(() => decodeImage(jpeg, LIMITS, probed[0]))).pipelines, 1, 'jpeg')
  assert.is((await sharpRuns(() => decodeImage(webp, LIMITS, probed[1]))).pipelines, 1, 'webp')
  assert.is((await sharpRuns(() => decodeImage(png16, LIMITS, probed[2]))).pipelines, 2, 'png16')
})

test('a large JPEG decoded reduced and turned in one pipeline has the pixels of its reduced decode turned afterwards', async () => {
  const width = 1500
  const height = 1400
  const data = Buffer.alloc(width * height * 3)
  for (let i = 0; i < data.length; i++) data[i] = (i * 2_654_435_761) >>> 24
  for (const orientation of [3, 6, 7]) {
    const jpeg = await raw(data, width, height).jpeg({quality: 90}).withMetadata({orientation}).toBuffer()
    const [reduced] = await decodeImage(jpeg, LIMITS, undefined, 224)
    const plan = planDecode({width, height, format: 'jpeg'}, LIMITS, 224)
    assert.ok(plan.reduced)
    // The two steps decoding took before: the stored image reduced, then turned (6: a quarter clockwise; 7: mirrored, then so).
    const stored = await sharp(jpeg, {autoOrient: false}).resize(plan.width, plan.height, {fit: 'fill', kernel: 'cubic'}).raw().toBuffer({resolveWithObject: true})
    const expected = await sharp(stored.data, {raw: {width: stored.info.width, height: stored.info.height, channels: 3}})
      .rotate(orientation === 3 ? 180 : 90)
      .flop(orientation === 7)
      .raw()
      .toBuffer()
    assert.ok(reduced.data.equals(expected), `orientation ${orientation}: pixels`)
  }
})

test('decodedPixels: the frames scored of an animation, a still at its planned size', () => {
  const still = {format: 'png', width: 10_000, height: 10_000, frames: 1, orientation: 6, animated: false, cost: 1} as const
  assert.is(decodedPixels(still, DEFAULT_LIMITS), 7071 * 7071)
  assert.is(decodedPixels({...still, width: 400, height: 300}, DEFAULT_LIMITS), 120_000)
  // An animation: its frames chosen by display time and up to MAX_OTHER_FRAMES more of other pictures.
  const gif = {...still, format: 'gif', width: 16, height: 12, animated: true, cost: 3} as const
  assert.is(decodedPixels({...gif, frames: 20}, DEFAULT_LIMITS), 20 * 16 * 12)
  assert.is(decodedPixels({...gif, frames: 100}, DEFAULT_LIMITS), (MAX_FRAMES + MAX_OTHER_FRAMES) * 16 * 12)
  // With alpha, two views (light and dark page) of a still planned at a quarter of the limit.
  assert.equal(planDecode({width: 10_000, height: 10_000, alpha: true}, DEFAULT_LIMITS), {width: 5000, height: 5000})
  assert.is(decodedPixels({...still, alpha: true}, DEFAULT_LIMITS), 2 * 5000 * 5000)
  assert.is(decodedPixels({...still, width: 400, height: 300, alpha: true}, DEFAULT_LIMITS), 240_000)
})

test('the memory bound docs/operations.md states is the one computed from the pixel limit', async () => {
  const bound = decodeBound(DEFAULT_LIMITS)
  assert.is(bound.bytes, (3 * 3 * 100_000_000) / 2)
  const docs = await readFile(new URL('../../../docs/operations.md', import.meta.url), 'utf8')
  assert.ok(docs.includes(`${Math.round(bound.bytes / 1024 / 1024)} MiB`), 'docs/operations.md names the bound in MiB')
})

test('an image with transparency is decoded as a light page shows it and as a dark one does: flattened onto white, then black', async () => {
  // Transparent red, black at alpha 128 (255 * 127/255 of white shows through), white at alpha 100, opaque blue.
  const data = Buffer.from([255, 0, 0, 0, 0, 0, 0, 128, 255, 255, 255, 100, 0, 0, 255, 255])
  const file = await raw(data, 4, 1, 4).png().toBuffer()
  const [light, dark, ...more] = await decodeImage(file, LIMITS)
  assert.equal([...light.data], [255, 255, 255, 127, 127, 127, 255, 255, 255, 0, 0, 255])
  assert.equal([...dark.data], [0, 0, 0, 0, 0, 0, 100, 100, 100, 0, 0, 255])
  assert.equal([light.onBlack, dark.onBlack, more.length], [undefined, true, 0])
})

test('a picture drawn in the alpha of white pixels, blank on a light page, is decoded as a dark page shows it too', async () => {
  // The two halves of halves() as alpha: red's luminance (76) on the left, blue's (29) on the right.
  const rgb = halves()
  const data = Buffer.alloc(40 * 30 * 4, 255)
  for (let i = 0; i < 40 * 30; i++) data[4 * i + 3] = Math.round(0.299 * rgb[3 * i] + 0.114 * rgb[3 * i + 2])
  const views = await decodeImage(await raw(data, 40, 30, 4).png().toBuffer(), LIMITS)
  assert.is(views.length, 2)
  assert.ok(views[0].data.every((v) => v === 255), 'blank on white')
  assert.equal([pixel(views[1], 5, 5), pixel(views[1], 35, 5)], [[76, 76, 76], [29, 29, 29]])
})

test('the dark view of a large image with transparency is at most 2048 pixels on its longer side, its scale to the file kept', async () => {
  const [w, h] = [3000, 1000]
  const rgba = Buffer.alloc(w * h * 4, 255)
  for (let i = 0; i < w * h; i++) rgba[4 * i + 3] = i % w < w / 2 ? 200 : 0
  const [light, dark] = await decodeImage(await raw(rgba, w, h, 4).png().toBuffer(), LIMITS)
  assert.equal([light.width, light.height, light.scale], [3000, 1000, undefined])
  assert.equal([dark.width, dark.height, dark.onBlack, dark.scale], [2048, 683, true, 3000 / 2048])
  assert.equal([pixel(dark, 100, 300), pixel(dark, 1900, 300)], [[200, 200, 200], [0, 0, 0]])
})

/** A lossless animated WebP of 16 x 16 grey frames of these levels, each shown 1 s (a GIF's palette merges near greys). */
async function levelsWebp(levels: number[]): Promise<Buffer> {
  const data = Buffer.concat(levels.map((v) => Buffer.alloc(16 * 16, v)))
  return sharp(data, {raw: {width: 16, height: 16 * levels.length, channels: 1, pageHeight: 16}})
    .webp({lossless: true, delay: levels.map(() => 1000)})
    .toBuffer()
}

test('an animation of more than 8 frames adds the frames left out that are other pictures than every one scored', async () => {
  // 16 frames of 1 s, a slow fade of grey (each frame its own, so that the encoder merges none): those chosen by
  // display time are 0, 2, 4, 6, 9, 11, 13 and 15. Of those left out, 7 and 8 are white (8 is no other picture than 7
  // once 7 is scored), 10 is black.
  const fade = Array.from({length: 16}, (_, i) => 60 + 3 * i)
  const levels = fade.map((v, i) => (i === 7 ? 255 : i === 8 ? 254 : i === 10 ? 0 : v))
  const frames = await decodeImage(await levelsWebp(levels), LIMITS)
  assert.equal(frames.map((f) => f.data[0]), [60, 66, 72, 78, 255, 87, 0, 93, 99, 105])
  // Frames that differ by a little (motion, a fade) add nothing.
  assert.is((await decodeImage(await levelsWebp(fade), LIMITS)).length, 8)
})

test('a slideshow: every picture is scored up to MAX_FRAMES + MAX_OTHER_FRAMES, and no more', async () => {
  // With 8 frames beyond those chosen by display time, a flagged picture in a slideshow of 40 went unscored half the time.
  assert.is(MAX_FRAMES + MAX_OTHER_FRAMES, 64)
  const forty = await decodeImage(await slideshowWebp(40), LIMITS)
  assert.is(forty.length, 40)
  assert.is(new Set(forty.map((f) => f.data.toString('hex'))).size, 40)
  assert.ok(forty.every((f) => f.picturesLeftOut === undefined))
  // Past them, the frames say that pictures were left out.
  const seventy = await decodeImage(await slideshowWebp(70), LIMITS)
  assert.is(seventy.length, 64)
  assert.ok(seventy.every((f) => f.picturesLeftOut === true))
  assert.ok((await decodeImage(await slideshowWebp(64), LIMITS)).every((f) => f.picturesLeftOut === undefined))
})

test('a frame is another picture when its 8 x 8 blocks differ by more than 16 levels on average from every frame scored', async () => {
  // 9 frames of a fade from 60 to 68: those chosen by display time leave out frame 4 alone. At 88 it is 20 levels or
  // more from every frame scored, so it is scored too; at 80 it is 12 from the last, so it is not.
  const fade = [60, 61, 62, 63, 64, 65, 66, 67, 68]
  const brighter = await decodeImage(await levelsWebp(fade.map((v, i) => (i === 4 ? 88 : v))), LIMITS)
  assert.equal(brighter.map((f) => f.data[0]), [60, 61, 62, 63, 88, 65, 66, 67, 68])
  const near = await decodeImage(await levelsWebp(fade.map((v, i) => (i === 4 ? 80 : v))), LIMITS)
  assert.equal(near.map((f) => f.data[0]), [60, 61, 62, 63, 65, 66, 67, 68])
})

test("an animation's frames with transparency give their views on a light and a dark page too; opaque frames one", async () => {
  // A 2-frame WebP: opaque red, then white pixels whose alpha draws a square (blank on white).
  const side = 16
  const data = Buffer.alloc(side * side * 4 * 2, 255)
  for (let i = 0; i < side * side; i++) data.set([200, 30, 30, 255], 4 * i)
  for (let i = 0; i < side * side; i++) data[4 * (side * side + i) + 3] = i % side < side / 2 ? 180 : 0
  const webp = await sharp(data, {raw: {width: side, height: side * 2, channels: 4, pageHeight: side}})
    .webp({lossless: true, delay: [500, 500]})
    .toBuffer()
  const frames = await decodeImage(webp, LIMITS)
  assert.equal(frames.map((f) => [f.onBlack ?? false, f.shown]), [[false, 500], [false, 500], [true, 500]])
  assert.equal(pixel(frames[0], 4, 4), [200, 30, 30])
  assert.ok(frames[1].data.every((v) => v === 255), 'blank on white')
  assert.equal([pixel(frames[2], 2, 4), pixel(frames[2], 12, 4)], [[180, 180, 180], [0, 0, 0]])
})

test('an image with an alpha channel whose every pixel is opaque is one view, the same as without alpha', async () => {
  const rgb = halves()
  const data = Buffer.alloc(40 * 30 * 4, 255)
  for (let i = 0; i < 40 * 30; i++) rgb.copy(data, 4 * i, 3 * i, 3 * i + 3)
  const views = await decodeImage(await raw(data, 40, 30, 4).png().toBuffer(), LIMITS)
  assert.is(views.length, 1)
  assert.ok(views[0].data.equals(rgb))
})

/** A PNG with these chunks inserted after its header (IHDR), each given as type and data. */
function withChunks(png: Buffer, chunks: [string, Buffer][]): Buffer {
  const afterHeader = 8 + 12 + png.readUInt32BE(8)
  return Buffer.concat([png.subarray(0, afterHeader), ...chunks.map(([type, data]) => pngChunk(type, data)), png.subarray(afterHeader)])
}

const gAMA = (gamma: number): [string, Buffer] => {
  const data = Buffer.alloc(4)
  data.writeUInt32BE(Math.round(gamma * 100_000))
  return ['gAMA', data]
}

test("a PNG's gAMA chunk is applied as browsers apply it: samples stored nearly white under a tiny gamma decode to the picture", async () => {
  // Stored as value^0.05 (nearly white to a decoder that ignores gAMA), with the gamma that undoes it: 0.05 / 2.2.
  const shown = [0, 40, 90, 128, 200, 255]
  const stored = Buffer.from(shown.flatMap((v) => [v, v, v]).map((v) => Math.round(255 * (v / 255) ** 0.05)))
  const png = await raw(stored, 6, 1).png().toBuffer()
  const [img] = await decodeImage(withChunks(png, [gAMA(0.05 / 2.2)]), LIMITS)
  // Undone to within a level or two of what was shown (8-bit rounding of the stored samples), as sRGB for a 2.2 display.
  const decoded = [0, 1, 2, 3, 4, 5].map((x) => pixel(img, x, 0)[0])
  assert.ok(decoded.every((v, i) => Math.abs(v - shown[i]) <= 12), `decoded ${decoded.join(' ')} against ${shown.join(' ')}`)
  // The same samples with an sRGB chunk as well, which takes precedence, or the writers' usual 1/2.2: kept as stored.
  const srgb: [string, Buffer] = ['sRGB', Buffer.from([0])]
  assert.ok((await decodeImage(withChunks(png, [gAMA(0.05 / 2.2), srgb]), LIMITS))[0].data.equals(stored))
  assert.ok((await decodeImage(withChunks(png, [gAMA(0.45455)]), LIMITS))[0].data.equals(stored))
})

test('a gAMA chunk applies to the colour of a PNG with alpha before it is flattened, onto white and onto black', async () => {
  const png = await raw(Buffer.from([128, 128, 128, 255, 128, 128, 128, 0]), 2, 1, 4).png().toBuffer()
  const [light, dark] = await decodeImage(withChunks(png, [gAMA(1)]), LIMITS)
  // Linear 128 shown in sRGB: 188; the transparent pixel stays white and black.
  assert.equal([[...light.data], [...dark.data]], [[188, 188, 188, 255, 255, 255], [188, 188, 188, 0, 0, 0]])
})

test('expands grey and grey+alpha to three equal channels', async () => {
  const grey = await raw(Buffer.from([0, 90, 200]), 3, 1, 1).png().toBuffer()
  assert.equal([...(await decodeImage(grey, LIMITS))[0].data], [0, 0, 0, 90, 90, 90, 200, 200, 200])
  const greyAlpha = await raw(Buffer.from([90, 255, 0, 0]), 2, 1, 2).png().toBuffer()
  assert.equal([...(await decodeImage(greyAlpha, LIMITS))[0].data], [90, 90, 90, 255, 255, 255])
})

test('reduces 16-bit images to 8 bits per channel', async () => {
  const file = await raw(Buffer.from([255, 0, 128]), 1, 1).toColourspace('rgb16').png().toBuffer()
  assert.is((await sharp(file).metadata()).depth, 'ushort')
  const [img] = await decodeImage(file, LIMITS)
  assert.equal([...img.data], [255, 0, 128])
})

test('decodes 8 evenly spaced frames of a 20-frame animated GIF of equal delays', async () => {
  const file = await animatedGif(20)
  const delays = Array<number>(20).fill(0)
  assert.equal(await probeImage(file), {format: 'gif', width: 16, height: 12, frames: 20, orientation: 1, animated: true, delays, cost: 3, costly: 'a GIF', alpha: true})
  const frames = await decodeImage(file, LIMITS)
  assert.is(frames.length, 8)
  for (const f of frames) {
    assert.is(f.width, 16)
    assert.is(f.height, 12)
  }
  assert.equal(
    frames.map((f) => pixel(f, 8, 6)),
    [0, 3, 5, 8, 11, 14, 16, 19].map((i) => [10 * i, 100, 200]),
  )
  // Every pixel of a frame, not just one, comes from that frame.
  assert.ok(frames[7].data.every((v, i) => v === [190, 100, 200][i % 3]))
})

/** The red of each frame decoded: 10 x its index in the animation (animatedGif). */
const frameNumbers = (images: RgbImage[]) => images.map((f) => pixel(f, 8, 6)[0] / 10)

for (const format of ['gif', 'webp'] as const) {
  test(`a 9-frame ${format} with a 10 s frame at index 4 and eight of 40 ms: the 10 s frame is decoded (chosen by display time)`, async () => {
    const file = await animatedGif(9, 16, 12, [40, 40, 40, 40, 10_000, 40, 40, 40, 40], format)
    assert.equal((await probeImage(file)).delays, [40, 40, 40, 40, 10_000, 40, 40, 40, 40])
    const frames = await decodeImage(file, LIMITS)
    assert.equal(frameNumbers(frames), [0, 1, 2, 4, 5, 6, 7, 8])
    // How long each is on screen (what the text signal reads by).
    assert.equal(frames.map((f) => f.shown), [40, 40, 40, 10_000, 40, 40, 40, 40])
  })
}

test('a 16-frame GIF of equal delays keeps the even spacing by index', async () => {
  const file = await animatedGif(16, 16, 12, Array<number>(16).fill(40))
  assert.equal(frameNumbers(await decodeImage(file, LIMITS)), [0, 2, 4, 6, 9, 11, 13, 15])
})

test('a GIF frame of delay 0 among 20 ms frames counts as shown 100 ms, as browsers show it: the longest, decoded', async () => {
  const delay = Array<number>(12).fill(20)
  delay[4] = 0
  const file = await animatedGif(12, 16, 12, delay)
  assert.is((await probeImage(file)).delays?.[4], 0)
  assert.not.ok(frameIndices(12).includes(4))
  assert.ok(frameNumbers(await decodeImage(file, LIMITS)).includes(4))
})

test('decodes every frame of a short animated WebP', async () => {
  const width = 10
  const height = 10
  const data = Buffer.alloc(width * height * 3 * 3)
  for (let f = 0; f < 3; f++) data.fill(60 * (f + 1), f * width * height * 3, (f + 1) * width * height * 3)
  const file = await sharp(data, {raw: {width, height: height * 3, channels: 3, pageHeight: height}}).webp({lossless: true}).toBuffer()
  assert.is((await probeImage(file)).animated, true)
  const frames = await decodeImage(file, LIMITS)
  assert.equal(frames.map((f) => pixel(f, 5, 5)), [[60, 60, 60], [120, 120, 120], [180, 180, 180]])
})

/**
 * An uncompressed little-endian TIFF of 32-bit IEEE floats (SampleFormat 3), one strip: grey (photometric 1) or
 * RGB (2) of `bands` samples a pixel, the last one alpha (ExtraSamples 2, unassociated) when there are 2 or 4.
 */
function floatTiff(values: number[], width: number, height: number, bands: 1 | 2 | 3 | 4, orientation = 1): Buffer {
  const data = Buffer.alloc(values.length * 4)
  values.forEach((v, i) => data.writeFloatLE(v, i * 4))
  // Tag, type (3 short, 4 long), value; BitsPerSample and SampleFormat of several bands point to their values.
  const perBand = 8 + 2 + 14 * 12 + 4
  const entries: [number, number, number][] = [
    [256, 3, width],
    [257, 3, height],
    [258, 3, bands === 1 ? 32 : perBand],
    [259, 3, 1],
    [262, 3, bands <= 2 ? 1 : 2],
    [273, 4, perBand + 4 * bands],
    [274, 3, orientation],
    [277, 3, bands],
    [278, 3, height],
    [279, 4, data.length],
    [284, 3, 1],
    [338, 3, bands % 2 === 0 ? 2 : 0],
    [339, 3, bands === 1 ? 3 : perBand + 2 * bands],
  ]
  if (bands % 2 !== 0) entries.splice(11, 1)
  const head = Buffer.alloc(perBand + 4 * bands)
  head.write('II*\0', 0, 'latin1')
  head.writeUInt32LE(8, 4)
  head.writeUInt16LE(entries.length, 8)
  entries.forEach(([tag, type, value], i) => {
    const at = 10 + i * 12
    head.writeUInt16LE(tag, at)
    head.writeUInt16LE(type, at + 2)
    const perSample = tag === 258 || tag === 339
    head.writeUInt32LE(perSample ? bands : 1, at + 4)
    // Values of up to 4 bytes are held in the entry itself.
    if (perSample && bands === 2) head.writeUInt32LE(tag === 258 ? 32 * 0x10001 : 3 * 0x10001, at + 8)
    else if (perSample && bands > 2) head.writeUInt32LE(value, at + 8)
    else if (type === 3) head.writeUInt16LE(value, at + 8)
    else head.writeUInt32LE(value, at + 8)
  })
  for (let b = 0; b < bands; b++) {
    head.writeUInt16LE(32, perBand + 2 * b)
    head.writeUInt16LE(3, perBand + 2 * bands + 2 * b)
  }
  return Buffer.concat([head, data])
}

test('a float grey TIFF in 0..1 (as image tools write it) decodes to 0..255; one in 0..255 as it is', async () => {
  const unit = floatTiff([0, 0.1, 0.25, 0.5, 1], 5, 1, 1)
  const meta = await sharp(unit).metadata()
  assert.equal([meta.format, meta.depth, meta.space, meta.channels], ['tiff', 'float', 'b-w', 1])
  const grey = (img: RgbImage) => [...img.data].filter((_, i) => i % 3 === 0)
  assert.equal(grey((await decodeImage(unit, LIMITS))[0]), [0, 26, 64, 128, 255])
  assert.equal(grey((await decodeImage(floatTiff([0, 26, 64, 128, 255], 5, 1, 1), LIMITS))[0]), [0, 26, 64, 128, 255])
  // A value over 1 anywhere: the file is in 0..255.
  assert.equal(grey((await decodeImage(floatTiff([0, 0.5, 1, 2, 255], 5, 1, 1), LIMITS))[0]), [0, 0, 1, 2, 255])
})

test('a float TIFF with alpha in 0..1 is flattened onto white by its alpha: grey, and RGB (scRGB to sRGB)', async () => {
  // Grey 0 and 0.5 at alpha 0.5 and 1.
  const [grey] = await decodeImage(floatTiff([0, 0.5, 0.5, 1], 2, 1, 2), LIMITS)
  near(pixel(grey, 0, 0), [128, 128, 128], 1, 'black at half alpha')
  near(pixel(grey, 1, 0), [128, 128, 128], 1, 'opaque mid grey')
  // Red at alpha 0.9, blue opaque: libvips reads float RGB as linear light and converts it to sRGB.
  const [rgb] = await decodeImage(floatTiff([1, 0, 0, 0.9, 0, 0, 1, 1], 2, 1, 4), LIMITS)
  near(pixel(rgb, 0, 0), [255, 25, 25], 1, 'red at alpha 0.9')
  assert.equal(pixel(rgb, 1, 0), BLUE)
  // Turned as its orientation says (6: a quarter clockwise), from the 8-bit pixels.
  const [turned] = await decodeImage(floatTiff([1, 0, 0, 0.9, 0, 0, 1, 1], 2, 1, 4, 6), LIMITS)
  assert.equal([turned.width, turned.height, turned.orientation], [1, 2, 6])
  near(pixel(turned, 0, 0), [255, 25, 25], 1, 'red on top')
  assert.equal(pixel(turned, 0, 1), BLUE)
})

/**
 * An uncompressed little-endian TIFF of 8-bit grey pages, each uniform at `level`, with its own size and EXIF
 * orientation: one IFD a page, chained.
 */
function greyTiffPages(pages: {width: number; height: number; level: number; orientation?: number}[]): Buffer {
  const ifdBytes = 2 + 10 * 12 + 4
  const parts: Buffer[] = [Buffer.from('II*\0\x08\0\0\0', 'latin1')]
  let at = 8
  pages.forEach((page, i) => {
    const data = Buffer.alloc(page.width * page.height, page.level)
    const dataAt = at + ifdBytes
    const next = i + 1 < pages.length ? dataAt + data.length : 0
    const entries: [number, number, number][] = [
      [256, 4, page.width], [257, 4, page.height], [258, 3, 8], [259, 3, 1], [262, 3, 1],
      [273, 4, dataAt], [274, 3, page.orientation ?? 1], [277, 3, 1], [278, 4, page.height], [279, 4, data.length],
    ]
    const ifd = Buffer.alloc(ifdBytes)
    ifd.writeUInt16LE(entries.length, 0)
    entries.forEach(([tag, type, value], k) => {
      ifd.writeUInt16LE(tag, 2 + k * 12)
      ifd.writeUInt16LE(type, 4 + k * 12)
      ifd.writeUInt32LE(1, 6 + k * 12)
      if (type === 3) ifd.writeUInt16LE(value, 10 + k * 12)
      else ifd.writeUInt32LE(value, 10 + k * 12)
    })
    ifd.writeUInt32LE(next, 2 + entries.length * 12)
    parts.push(ifd, data)
    at = dataAt + data.length
  })
  return Buffer.concat(parts)
}

test('scores every page of a multi-page TIFF, each as a still', async () => {
  const data = Buffer.concat([Buffer.alloc(8 * 8 * 3, 30), Buffer.alloc(8 * 8 * 3, 220)])
  const file = await sharp(data, {raw: {width: 8, height: 16, channels: 3, pageHeight: 8}}).tiff().toBuffer()
  const probe = await probeImage(file)
  assert.equal([probe.frames, probe.animated, probe.width, probe.height], [2, false, 8, 8])
  const images = await decodeImage(file, LIMITS)
  assert.equal(images.map((img) => [img.width, img.height, ...pixel(img, 4, 4)]), [[8, 8, 30, 30, 30], [8, 8, 220, 220, 220]])
})

test('pages of a TIFF may differ in size and orientation: each is decoded from its own header', async () => {
  const file = greyTiffPages([
    {width: 4, height: 4, level: 10},
    {width: 6, height: 2, level: 90, orientation: 6},
    {width: 3, height: 5, level: 200},
  ])
  const images = await decodeImage(file, LIMITS)
  assert.equal(images.map((img) => [img.width, img.height, img.orientation ?? 1, img.data[0]]), [[4, 4, 1, 10], [2, 6, 6, 90], [3, 5, 1, 200]])
})

test('scores every page of a 20-page TIFF, and refuses a TIFF of more pages than it scores', async () => {
  const file = greyTiffPages(Array.from({length: 20}, (_, i) => ({width: 4, height: 4, level: 10 * i})))
  const images = await decodeImage(file, LIMITS)
  assert.equal(images.map((img) => img.data[0]), Array.from({length: 20}, (_, i) => 10 * i))
  assert.is(decodedPixels(await probeImage(file), LIMITS), 20 * 16)
  const long = greyTiffPages(Array.from({length: MAX_PAGES + 1}, () => ({width: 2, height: 2, level: 0})))
  const e = await rejection(decodeImage(long, LIMITS))
  assert.equal([e.code, e.message], ['payload_too_large', `image has ${MAX_PAGES + 1} pages; at most ${MAX_PAGES} can be scored, and a page left out would pass unseen`])
})

test('the pages of a TIFF scored count against the pixel limit together, from their headers', async () => {
  const file = greyTiffPages([{width: 10, height: 10, level: 0}, {width: 20, height: 5, level: 255}, {width: 1, height: 1, level: 9}])
  const e = await rejection(decodeImage(file, {maxBytes: LIMITS.maxBytes, maxPixels: 200}))
  assert.equal([e.code, e.message], ['payload_too_large', 'image has 3 pages, 10x10 + 20x5 + 1x1 = 201 pixels; the limit is 200 pixels'])
  // Within it, each page is decoded within its part of one still's share (DECODED_SHARE): 201 / 3 / 2 pixels at most.
  const images = await decodeImage(file, {maxBytes: LIMITS.maxBytes, maxPixels: 201})
  assert.equal(images.map((img) => [img.width, img.height]), [[5, 5], [11, 2], [1, 1]])
  const long = greyTiffPages([{width: 1, height: 1, level: 0}, {width: MAX_SIDE + 1, height: 1, level: 0}])
  const side = await rejection(decodeImage(long, LIMITS))
  assert.equal([side.code, side.message], ['payload_too_large', `page 2 is ${MAX_SIDE + 1}x1; a side may be at most ${MAX_SIDE} pixels`])
})

test('refuses a PNG that claims 50000 x 50000 pixels without decoding it', async () => {
  const file = pngClaiming(50_000, 50_000)
  assert.ok(file.length < 2048)
  const started = performance.now()
  const e = await rejection(decodeImage(file, LIMITS))
  assert.is(e.code, 'payload_too_large')
  assert.match(e.message, '50000x50000')
  assert.match(e.message, 'the limit is 100000000 pixels')
  // Decoding 2.5 gigapixels would take minutes and 7.5 GB; the bound is loose so a loaded machine cannot flake it.
  assert.ok(performance.now() - started < 5000, 'refused from the header, not after decoding')
})

test('refuses a side over MAX_SIDE from the header, within the pixel limit; MAX_SIDE itself decodes', async () => {
  for (const [w, h] of [[MAX_SIDE + 1, 1], [1, MAX_SIDE + 1], [1, 10_000_000]]) {
    const e = await rejection(decodeImage(pngClaiming(w, h), LIMITS))
    assert.equal([e.code, e.message], ['payload_too_large', `image is ${w}x${h}; a side may be at most 65535 pixels`])
  }
  const [tall] = await decodeImage(greyPng(1, MAX_SIDE), LIMITS)
  assert.equal([tall.width, tall.height, tall.data.length], [1, MAX_SIDE, 3 * MAX_SIDE])
})

test('counts every frame of an animation against the pixel limit', async () => {
  const file = await animatedGif(20, 80, 60) // 80 x 60 x 20 = 96000 pixels decoded
  const e = await rejection(decodeImage(file, {maxBytes: LIMITS.maxBytes, maxPixels: 3 * 96_000 - 1}))
  assert.is(e.code, 'payload_too_large')
  assert.match(e.message, '80x60 x 20 frames = 96000 pixels; the limit is 95999 pixels for a GIF')
  assert.match(e.message, /; an animation this long can be scored as a video \(mod scan-video, POST \/v1\/moderate\/video\)$/)
  assert.is((await decodeImage(file, {maxBytes: LIMITS.maxBytes, maxPixels: 3 * 96_000})).length, 8)
})

test('a frame smaller than 64x64 counts as MIN_FRAME_PIXELS: a million 1x1 frames (23 MB) are refused from the header', async () => {
  const few = manyFrameGif(20)
  const e = await rejection(decodeImage(few, {maxBytes: LIMITS.maxBytes, maxPixels: 3 * 20 * MIN_FRAME_PIXELS - 1}))
  assert.match(e.message, `1x1 x 20 frames (each counted as 4096 pixels) = 81920 pixels; the limit is 81919 pixels for a GIF`)
  const frames = await decodeImage(few, {maxBytes: LIMITS.maxBytes, maxPixels: 3 * 20 * MIN_FRAME_PIXELS})
  assert.equal(frames.map((f) => [...f.data]), [0, 3, 5, 8, 11, 14, 16, 19].map((i) => (i % 2 ? BLUE : RED)))
  const million = await rejection(decodeImage(manyFrameGif(1_000_000), LIMITS))
  assert.equal([million.code, million.message.split(';')[0]], ['payload_too_large', 'image is 1x1 x 1000000 frames (each counted as 4096 pixels) = 4096000000 pixels'])
})

const solid = (channels: 3 | 4 = 3) => sharp({create: {width: 100, height: 100, channels, background: {r: 200, g: 40, b: 40, alpha: 0.5}}})
const costly: [string, () => Promise<Buffer>, number, string | undefined][] = [
  ['baseline JPEG', () => solid().jpeg().toBuffer(), 1, undefined],
  ['16-bit RGBA PNG', () => solid(4).toColourspace('rgb16').png().toBuffer(), 1, undefined],
  ['TIFF', () => solid().tiff().toBuffer(), 1, undefined],
  ['progressive JPEG', () => solid().jpeg({progressive: true}).toBuffer(), 4, 'a progressive JPEG'],
  ['CMYK JPEG', () => solid().toColourspace('cmyk').jpeg().toBuffer(), 8, 'a CMYK JPEG'],
  ['progressive CMYK JPEG', () => solid().toColourspace('cmyk').jpeg({progressive: true}).toBuffer(), 8, 'a CMYK JPEG'],
  ['interlaced PNG', () => solid().png({progressive: true}).toBuffer(), 4, 'an interlaced PNG'],
  ['GIF', () => solid().gif().toBuffer(), 3, 'a GIF'],
  ['WebP', () => solid().webp().toBuffer(), 4, 'a WebP'],
  ['AVIF', () => solid().avif({effort: 0}).toBuffer(), 6, 'an AVIF'],
]

for (const [kind, make, cost, name] of costly) {
  test(`a 100x100 ${kind} counts ${cost} pixel(s) per pixel against the pixel limit`, async () => {
    const file = await make()
    const limits = (maxPixels: number) => ({maxBytes: LIMITS.maxBytes, maxPixels})
    const e = await rejection(decodeImage(file, limits(cost * 10_000 - 1)))
    const why = name ? ` for ${name} (1/${cost} of ${cost * 10_000 - 1}: it takes ${cost} times the memory or time to decode)` : ''
    assert.equal([e.code, e.message], ['payload_too_large', `image is 100x100 = 10000 pixels; the limit is ${Math.floor((cost * 10_000 - 1) / cost)} pixels${why}`])
    const [image] = await decodeImage(file, limits(cost * 10_000))
    // At the limit it decodes, scaled to half of it when that is fewer pixels than the file's (cost 1), to a quarter
    // with alpha (two views: the PNG, and a GIF, which libvips always reads with alpha).
    const {alpha} = await probeImage(file)
    const side = Math.floor(Math.sqrt((cost * 10_000) / (alpha ? 4 : 2)))
    assert.equal([image.width, image.height], side < 100 ? [side, side] : [100, 100])
  })
}

test('an AVIF whose major brand is mif1 (its compatible brands saying avif), which libvips reports as HEVC, is read as the AVIF it is', async () => {
  const file = await raw(halves(), 40, 30).avif({effort: 0, lossless: true}).toBuffer()
  const mif1 = Buffer.from(file)
  mif1.write('mif1', 8, 'latin1')
  assert.is((await sharp(mif1).metadata()).compression, 'hevc', "libvips' reading of it")
  assert.is((await probeImage(mif1)).format, 'avif')
  const [image] = await decodeImage(mif1, LIMITS)
  assert.ok(image.data.equals((await decodeImage(file, LIMITS))[0].data))
})

test('an animated AVIF (an image sequence, brand avis) that the image decoder cannot read is refused pointing to the video path', async () => {
  // An ftyp box of brand avis and nothing the decoder can read after it.
  const sequence = Buffer.concat([Buffer.from([0, 0, 0, 24]), Buffer.from('ftypavis\0\0\0\0avismif1', 'latin1'), Buffer.alloc(64)])
  const e = await rejection(decodeImage(sequence, LIMITS))
  assert.equal([e.code, e.message], ['unsupported_media', 'an animated AVIF (image sequence) is not read as an image: score it as a video (mod scan-video, POST /v1/moderate/video), or send it as an animated GIF or WebP'])
})

test('refuses an image over the byte limit before reading it', async () => {
  const file = await raw(halves(), 40, 30).png().toBuffer()
  const e = await rejection(decodeImage(file, {maxBytes: file.length - 1, maxPixels: LIMITS.maxPixels}))
  assert.is(e.code, 'payload_too_large')
  assert.is(e.message, `the image is larger than ${file.length - 1} bytes`)
  assert.is((await decodeImage(file, {maxBytes: file.length, maxPixels: LIMITS.maxPixels})).length, 1)
})

test('calls random bytes, text, an empty buffer, SVG, PDF and JPEG 2000 unsupported media, naming SVG and JPEG 2000', async () => {
  const random = Buffer.alloc(4096)
  for (let i = 0; i < random.length; i++) random[i] = (i * 2654435761) >>> 24
  const inputs = [
    random,
    Buffer.from('just some text, not an image'),
    Buffer.alloc(0),
    Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" width="8" height="8"><rect width="8" height="8"/></svg>'),
    Buffer.from('%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n'),
  ]
  for (const input of inputs) {
    const e = await rejection(decodeImage(input, LIMITS))
    assert.is(e.code, 'unsupported_media', input.subarray(0, 16).toString('latin1'))
  }
  const svg = await rejection(decodeImage(inputs[3], LIMITS))
  assert.match(svg.message, 'SVG images are not supported')
  // A JPEG 2000 file (its JP2 signature and file type boxes), which libvips here does not read: named too.
  const jp2 = await rejection(decodeImage(Buffer.from('0000000c6a5020200d0a870a00000014667479706a703220' + '00'.repeat(40), 'hex'), LIMITS))
  assert.equal([jp2.code, jp2.message], ['unsupported_media', 'JPEG 2000 images are not supported; send JPEG, PNG, WebP, GIF, AVIF or TIFF'])
})

test('refuses an animated PNG: libvips would score its default image, not the frames a browser shows', async () => {
  const apng = hiddenFrameApng()
  // What the bypass relies on: sharp reads it as a still PNG of its (white) default image.
  assert.equal([...(await sharp(apng).raw().toBuffer()).subarray(0, 2)], [255, 255])
  for (const e of [await rejection(probeImage(apng)), await rejection(decodeImage(apng, LIMITS))]) {
    assert.equal([e.code, e.message], [
      'unsupported_media',
      'animated PNG (APNG) is not supported: only its default image could be scored, not the frames it shows; send the animation as GIF or WebP',
    ])
  }
})

test('a still PNG with ancillary chunks before its image data is not taken for an animated one', async () => {
  const still = greyPng(8, 8)
  const ihdrEnd = 8 + 12 + 13
  // A text chunk before IDAT, and an acTL after it (where the APNG specification does not allow one: not animated).
  const text = pngChunk('tEXt', Buffer.from('Comment\0acTL', 'latin1'))
  const late = pngChunk('acTL', Buffer.alloc(8))
  const iend = still.length - 12
  const file = Buffer.concat([still.subarray(0, ihdrEnd), text, still.subarray(ihdrEnd, iend), late, still.subarray(iend)])
  assert.ok(file.subarray(0, 8).equals(PNG_SIGNATURE))
  assert.is((await decodeImage(file, LIMITS))[0].data[0], 128)
})

test('calls a truncated JPEG or PNG unreadable when its header is intact', async () => {
  const noise = Buffer.alloc(64 * 64 * 3)
  for (let i = 0; i < noise.length; i++) noise[i] = (i * 2654435761) >>> 24
  for (const file of [await raw(noise, 64, 64).jpeg().toBuffer(), await raw(noise, 64, 64).png().toBuffer()]) {
    const half = file.subarray(0, file.length >> 1)
    assert.is((await probeImage(half)).width, 64)
    const e = await rejection(decodeImage(half, LIMITS))
    assert.is(e.code, 'unreadable_image')
    // In our words; the decoder's own line (libvips' wording) is kept for a log only.
    assert.is(e.message, 'the image data is corrupt or truncated')
    assert.type(e.context?.decoder, 'string')
  }
})

test('calls a file cut inside its header unsupported media: the decoder cannot tell it is an image', async () => {
  const file = await raw(halves(), 40, 30).jpeg().toBuffer()
  const e = await rejection(decodeImage(file.subarray(0, 100), LIMITS))
  assert.is(e.code, 'unsupported_media')
})

test('calls an animated GIF with corrupt frame data unreadable', async () => {
  const noise = Buffer.alloc(32 * 32 * 10 * 3)
  for (let i = 0; i < noise.length; i++) noise[i] = (i * 2654435761) >>> 24
  const file = await sharp(noise, {raw: {width: 32, height: 320, channels: 3, pageHeight: 32}}).gif().toBuffer()
  const corrupt = Buffer.from(file).fill(0xff, file.length >> 1, (file.length >> 1) + 64)
  assert.is((await probeImage(corrupt)).frames, 10)
  const e = await rejection(decodeImage(corrupt, LIMITS))
  assert.is(e.code, 'unreadable_image')
})

// Last: it changes the process's libvips settings.
test('disableDecodeCache: libvips keeps no operation and no pixels of a decode', async () => {
  const jpeg = await sharp({create: {width: 64, height: 48, channels: 3, background: {r: 10, g: 200, b: 90}}}).jpeg().toBuffer()
  await decodeImage(jpeg, DEFAULT_LIMITS)
  assert.ok(sharp.cache().items.current > 0, 'cached by default')
  disableDecodeCache()
  await decodeImage(jpeg, DEFAULT_LIMITS)
  const {items, memory} = sharp.cache()
  assert.equal([items.current, items.max, memory.current], [0, 0, 0])
})

test.run()
