import sharp from 'sharp'
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {crop, findBars, findContentBox, trimBorders, type Box} from '../../../src/lib/image/trim.js'
import type {RgbImage} from '../../../src/lib/types.js'

type Rgb = [number, number, number]

/** Deterministic pseudo-random bytes (no Math.random, so failures reproduce). */
function noise(seed: number): () => number {
  let s = seed >>> 0
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0
    return s >>> 24
  }
}

/** A width x height image of `fill`, with colourful random content inside `content`. */
function framed(width: number, height: number, fill: Rgb, content: Box): RgbImage {
  const next = noise(width * 31 + height)
  const data = Buffer.alloc(width * height * 3)
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const inside = x >= content.left && x < content.left + content.width && y >= content.top && y < content.top + content.height
      data.set(inside ? [next(), next(), next()] : fill, 3 * (y * width + x))
    }
  }
  return {data, width, height}
}

function paint(img: RgbImage, box: Box, colour: Rgb): void {
  for (let y = box.top; y < box.top + box.height; y++) {
    for (let x = box.left; x < box.left + box.width; x++) img.data.set(colour, 3 * (y * img.width + x))
  }
}

const whole = (img: RgbImage): Box => ({left: 0, top: 0, width: img.width, height: img.height})

test('crops black letterbox bars', () => {
  const content = {left: 0, top: 40, width: 320, height: 160}
  assert.equal(findContentBox(framed(320, 240, [0, 0, 0], content)), content)
})

test('crops black pillarbox bars', () => {
  const content = {left: 40, top: 0, width: 240, height: 240}
  assert.equal(findContentBox(framed(320, 240, [0, 0, 0], content)), content)
})

test('crops uniform padding of any colour on all four sides, each by its own amount', () => {
  const content = {left: 30, top: 10, width: 285, height: 210}
  assert.equal(findContentBox(framed(320, 240, [30, 140, 200], content)), content)
})

test('crops padding on one side only', () => {
  const content = {left: 0, top: 0, width: 200, height: 175}
  assert.equal(findContentBox(framed(200, 200, [255, 255, 255], content)), content)
})

test('crops bars of different colours on different sides', () => {
  // Black letterbox bars, and grey pillarbox bars between them.
  const img = framed(320, 240, [0, 0, 0], {left: 20, top: 30, width: 280, height: 180})
  paint(img, {left: 0, top: 30, width: 20, height: 180}, [128, 128, 128])
  paint(img, {left: 300, top: 30, width: 20, height: 180}, [128, 128, 128])
  assert.equal(findContentBox(img), {left: 20, top: 30, width: 280, height: 180})
})

test('crops noisy bars: pixels within the tolerance of the bar colour still count as bar', () => {
  const content = {left: 0, top: 36, width: 256, height: 120}
  const img = framed(256, 192, [16, 16, 16], content)
  const next = noise(7)
  for (let y = 0; y < 192; y++) {
    if (y >= 36 && y < 156) continue
    for (let i = 3 * 256 * y; i < 3 * 256 * (y + 1); i++) img.data[i] = 16 + (next() % 21) - 10
  }
  assert.equal(findContentBox(img), content)
})

test('crops a bar holding a small logo (under 2% of its width)', () => {
  const content = {left: 0, top: 50, width: 400, height: 200}
  const img = framed(400, 300, [0, 0, 0], content)
  paint(img, {left: 370, top: 10, width: 7, height: 20}, [255, 255, 255])
  assert.equal(findContentBox(img), content)
})

test('crops JPEG-compressed letterbox bars, keeping all the content', async () => {
  // Bars of 37 rows do not line up with JPEG blocks, so the rows next to the content carry ringing.
  const img = framed(320, 240, [0, 0, 0], {left: 0, top: 37, width: 320, height: 166})
  const jpeg = await sharp(img.data, {raw: {width: 320, height: 240, channels: 3}}).jpeg({quality: 75}).toBuffer()
  const {data} = await sharp(jpeg).raw().toBuffer({resolveWithObject: true})
  const box = findContentBox({data, width: 320, height: 240})
  assert.equal([box.left, box.width], [0, 320])
  assert.ok(box.top <= 37 && box.top >= 37 - 8, `top ${box.top}: within one JPEG block of the bar's edge`)
  const bottom = box.top + box.height
  assert.ok(bottom >= 203 && bottom <= 203 + 8, `bottom ${bottom}: within one JPEG block of the bar's edge`)
})

test('leaves a fully uniform image as it is, whatever its colour', () => {
  for (const colour of [[0, 0, 0], [255, 255, 255], [12, 200, 90]] as Rgb[]) {
    const img = framed(64, 48, colour, {left: 0, top: 0, width: 0, height: 0})
    assert.equal(findContentBox(img), whole(img))
    assert.is(trimBorders(img), img)
  }
})

test('leaves the image as it is when the trim would leave less than 32 pixels', () => {
  const short = framed(320, 240, [0, 0, 0], {left: 0, top: 100, width: 320, height: 31})
  assert.equal(findContentBox(short), whole(short))
  const narrow = framed(320, 240, [0, 0, 0], {left: 100, top: 0, width: 31, height: 240})
  assert.equal(findContentBox(narrow), whole(narrow))
  const justEnough = framed(320, 240, [0, 0, 0], {left: 100, top: 100, width: 32, height: 32})
  assert.equal(findContentBox(justEnough), {left: 100, top: 100, width: 32, height: 32})
})

test('leaves an image smaller than 32 pixels as it is', () => {
  const tiny = framed(31, 64, [0, 0, 0], {left: 0, top: 10, width: 31, height: 40})
  assert.equal(findContentBox(tiny), whole(tiny))
})

test('leaves an image without borders as it is', () => {
  const img = framed(320, 240, [0, 0, 0], {left: 0, top: 0, width: 320, height: 240})
  assert.equal(findContentBox(img), whole(img))
  assert.is(trimBorders(img), img)
})

test('trimBorders returns the content pixels; full-width crops share memory', () => {
  const bars = framed(64, 96, [0, 0, 0], {left: 0, top: 16, width: 64, height: 64})
  const letterboxed = trimBorders(bars)
  assert.equal([letterboxed.width, letterboxed.height], [64, 64])
  assert.is(letterboxed.data.buffer, bars.data.buffer)
  assert.ok(letterboxed.data.equals(bars.data.subarray(3 * 64 * 16, 3 * 64 * 80)))

  const padded = framed(96, 80, [9, 9, 9], {left: 10, top: 5, width: 70, height: 60})
  const inner = trimBorders(padded)
  assert.equal([inner.width, inner.height], [70, 60])
  for (const [x, y] of [[0, 0], [69, 0], [0, 59], [69, 59], [33, 21]]) {
    const src = 3 * ((y + 5) * 96 + x + 10)
    assert.equal([...inner.data.subarray(3 * (y * 70 + x), 3 * (y * 70 + x) + 3)], [...padded.data.subarray(src, src + 3)])
  }
})

/** A width x height image of `fill` with a textured disc of `radius` centred at (cx, cy): a figure on a plain background. */
function disc(width: number, height: number, fill: Rgb, cx: number, cy: number, radius: number): RgbImage {
  const next = noise(radius)
  const data = Buffer.alloc(width * height * 3)
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) data.set((x - cx) ** 2 + (y - cy) ** 2 <= radius ** 2 ? [next(), next(), next()] : fill, 3 * (y * width + x))
  }
  return {data, width, height}
}

test('findBars cuts bars that end at a sharp edge: a picture on a canvas, on every side or some', () => {
  const canvas = framed(400, 300, [255, 255, 255], {left: 100, top: 75, width: 200, height: 150})
  assert.equal(findBars(canvas), {left: 100, top: 75, width: 200, height: 150})
  const bars = framed(320, 240, [0, 0, 0], {left: 0, top: 30, width: 320, height: 180})
  assert.equal(findBars(bars), {left: 0, top: 30, width: 320, height: 180})
})

test('a stroke round the picture, or a line of noise at its edge, does not stop the trim of the bars inside it', () => {
  const canvas = () => framed(400, 300, [255, 255, 255], {left: 100, top: 75, width: 200, height: 150})
  const stroked = canvas()
  for (const box of [{left: 0, top: 0, width: 400, height: 1}, {left: 0, top: 299, width: 400, height: 1}, {left: 0, top: 0, width: 1, height: 300}, {left: 399, top: 0, width: 1, height: 300}]) {
    paint(stroked, box, [128, 128, 128])
  }
  const noisy = canvas()
  const next = noise(7)
  for (let x = 0; x < 400; x++) noisy.data.set([next(), next(), next()], 3 * x)
  for (const img of [stroked, noisy]) {
    assert.equal(findContentBox(img), {left: 100, top: 75, width: 200, height: 150})
    assert.equal(findBars(img), {left: 100, top: 75, width: 200, height: 150})
  }
})

test('two-tone bars (a light status bar over a black band) go whole for findBars, which findContentBox stops inside', () => {
  const img = framed(300, 400, [0, 0, 0], {left: 0, top: 100, width: 300, height: 200})
  paint(img, {left: 0, top: 0, width: 300, height: 30}, [235, 235, 240])
  assert.equal(findContentBox(img).top, 30)
  assert.equal(findBars(img), {left: 0, top: 100, width: 300, height: 200})
})

test('a line of noise before a padding thinner than 4 lines is content: nothing is trimmed', () => {
  const img = framed(400, 300, [255, 255, 255], {left: 0, top: 3, width: 400, height: 297})
  const next = noise(9)
  for (let x = 0; x < 400; x++) img.data.set([next(), next(), next()], 3 * x)
  assert.equal(findContentBox(img).top, 0)
})

test('findBars keeps a plain background that goes on around a figure, which findContentBox trims', () => {
  const img = disc(400, 300, [250, 250, 250], 200, 150, 100)
  const trimmed = findContentBox(img)
  assert.ok(trimmed.width <= 201 && trimmed.height <= 201, JSON.stringify(trimmed))
  assert.equal(findBars(img), whole(img))
})

test('findBars on a figure on a plain background, letterboxed: the bars go, the background stays', () => {
  // The disc's own white background fills a 400 x 300 picture between black bars of 50 rows.
  const img = disc(400, 400, [255, 255, 255], 200, 200, 100)
  paint(img, {left: 0, top: 0, width: 400, height: 50}, [0, 0, 0])
  paint(img, {left: 0, top: 350, width: 400, height: 50}, [0, 0, 0])
  assert.equal(findBars(img), {left: 0, top: 50, width: 400, height: 300})
})

test('findBars finds a JPEG-compressed canvas within one block of its edges', async () => {
  const img = framed(320, 240, [255, 255, 255], {left: 53, top: 37, width: 200, height: 150})
  const jpeg = await sharp(img.data, {raw: {width: 320, height: 240, channels: 3}}).jpeg({quality: 75}).toBuffer()
  const {data} = await sharp(jpeg).raw().toBuffer({resolveWithObject: true})
  const box = findBars({data, width: 320, height: 240})
  for (const [found, edge] of [[box.left, 53], [box.top, 37], [box.left + box.width, 253], [box.top + box.height, 187]]) {
    assert.ok(Math.abs(found - edge) <= 8, `${found}: within one JPEG block of ${edge}`)
  }
})

test('crop copies any box', () => {
  const img = framed(8, 8, [0, 0, 0], {left: 0, top: 0, width: 8, height: 8})
  const part = crop(img, {left: 2, top: 3, width: 4, height: 2})
  assert.equal([part.width, part.height, part.data.length], [4, 2, 24])
  assert.equal([...part.data.subarray(0, 3)], [...img.data.subarray(3 * (3 * 8 + 2), 3 * (3 * 8 + 2) + 3)])
})

test.run()
