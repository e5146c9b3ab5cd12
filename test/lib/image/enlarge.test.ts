import sharp from 'sharp'
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {enlarge} from '../../../src/lib/image/enlarge.js'
import type {RgbImage} from '../../../src/lib/image/rgb.js'
import {resampleSquare, type SquareOptions} from '../../../src/lib/image/square.js'
import {random} from '../../helpers/nsfw-images.js'

/** Noise: every level, and neighbours far apart, so that any difference in weights or rounding shows. */
function noise(width: number, height: number, seed: number): RgbImage {
  const next = random(seed)
  const data = Buffer.alloc(width * height * 3)
  for (let i = 0; i < data.length; i++) data[i] = Math.floor(next() * 256)
  return {data, width, height}
}

const raw = (img: RgbImage) => sharp(img.data, {raw: {width: img.width, height: img.height, channels: 3}})

/** The square libvips makes, as sharp is asked for it: what resampleSquare must give. */
async function libvipsSquare(frame: RgbImage, side: number, o: SquareOptions): Promise<Buffer> {
  let image = raw(frame)
  if (o.window) image = image.extract(o.window)
  image = o.letterbox
    ? image.resize(side, side, {fit: 'contain', background: {r: 0, g: 0, b: 0}, kernel: 'lanczos3'})
    : image.resize(side, side, {fit: 'fill', kernel: 'lanczos3'})
  return image.raw().toBuffer()
}

function differing(a: Buffer, b: Buffer): number {
  let n = Math.abs(a.length - b.length)
  for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) n++
  return n
}

test("enlarge gives libvips' own enlargement bit for bit: one side or both, from one pixel to hundreds", async () => {
  const next = random(7)
  const sizes = [
    [1, 1, 5, 3],
    [1, 9, 1, 20],
    [375, 448, 448, 448],
    [448, 375, 448, 448],
    [180, 180, 448, 448],
    [213, 160, 299, 299],
  ]
  for (let i = 0; i < 60; i++) {
    const w = 1 + Math.floor(next() * 300)
    const h = 1 + Math.floor(next() * 300)
    sizes.push([w, h, w + (next() < 0.3 ? 0 : Math.floor(next() * 400)), h + (next() < 0.3 ? 0 : Math.floor(next() * 400))])
  }
  let computed = 0
  for (const [w, h, width, height] of sizes) {
    const img = noise(w, h, w * 1000 + h)
    const got = enlarge(img, width, height)
    if (!got) continue
    computed++
    const expected = await raw(img).resize(width, height, {fit: 'fill', kernel: 'lanczos3'}).raw().toBuffer()
    assert.equal([got.width, got.height], [width, height])
    assert.is(differing(got.data, expected), 0, `${w}x${h} to ${width}x${height}`)
  }
  assert.ok(computed >= sizes.length - 3, `${computed} of ${sizes.length} computed`)
})

test('enlarge leaves to libvips a size where a sample lies half-way between two steps of its weights', async () => {
  // 61 rows to 128: row 5 samples 5 x 61 / 128 - 0.5, 113 half-steps past a pixel, which libvips' arithmetic rounds
  // down and exact arithmetic up.
  assert.is(enlarge(noise(97, 61, 1), 192, 128), undefined)
  assert.is(enlarge(noise(1, 61, 1), 1, 128), undefined)
  assert.ok(enlarge(noise(1, 61, 1), 1, 129))
})

test("the specialist's squares and CLIP's 224-pixel side never fall half-way: they are always computed here", () => {
  for (let w = 1; w < 448; w++) {
    assert.ok(enlarge(noise(w, 1, w), 448, 1), `${w} to 448`)
    // The other side left at its size (a wide photo's height enlarged after libvips reduced its width).
    assert.ok(enlarge(noise(w, 2, w), 448, 3, {scale: {x: 1 / (w / 448), y: 1.5}}), `${w} to 448 beside 2 to 3`)
  }
  for (let w = 1; w < 224; w++) assert.ok(enlarge(noise(w, 1, w), 224, 1, {sampling: 'centres'}), `${w} to 224 at pixel centres`)
})

test("enlarge at pixel centres gives libvips' affine transform with half-pixel offsets bit for bit (CLIP's enlargement)", async () => {
  const next = random(11)
  let computed = 0
  for (let i = 0; i < 40; i++) {
    const w = 1 + Math.floor(next() * 223)
    const h = 1 + Math.floor(next() * 223)
    const factor = 224 / Math.min(w, h)
    const width = Math.min(2000, Math.floor(w * factor))
    const height = Math.min(2000, Math.floor(h * factor))
    const img = noise(w, h, i)
    // The image padded with copies of its edges, so that libvips' transform reads none of its own outside.
    const padded = await raw(img).extend({top: 2, bottom: 2, left: 2, right: 2, extendWith: 'copy'}).raw().toBuffer()
    const out = await raw({data: padded, width: w + 4, height: h + 4})
      .affine([width / w, 0, 0, height / h], {interpolator: 'bicubic', idx: -1.5, idy: -1.5, odx: -0.5, ody: -0.5})
      .raw()
      .toBuffer({resolveWithObject: true})
    const got = enlarge(img, width, height, {sampling: 'centres'})
    if (!got) continue
    computed++
    let n = 0
    for (let y = 0; y < height; y++) {
      for (let x = 0; x < width * 3; x++) if (got.data[y * width * 3 + x] !== out.data[y * out.info.width * 3 + x]) n++
    }
    assert.is(n, 0, `${w}x${h} to ${width}x${height}`)
  }
  assert.ok(computed >= 37, `${computed} of 40 computed`)
})

test('enlarge reads the window only, and gives a window of the asked size as it is', () => {
  const img = noise(40, 30, 1)
  const window = {left: 5, top: 7, width: 20, height: 10}
  const alone = {data: Buffer.alloc(20 * 10 * 3), width: 20, height: 10}
  for (let y = 0; y < 10; y++) img.data.copy(alone.data, y * 60, ((7 + y) * 40 + 5) * 3, ((7 + y) * 40 + 25) * 3)
  const fromWindow = enlarge(img, 33, 17, {window})
  assert.ok(fromWindow)
  assert.equal(fromWindow.data, enlarge(alone, 33, 17)?.data)
  assert.equal(enlarge(img, 20, 10, {window})?.data, alone.data)
  assert.throws(() => enlarge(img, 19, 12, {window}), (e: unknown) => e instanceof RangeError && /not an enlargement/.test(e.message))
})

/** A window narrower and taller than the square, squeezed: reduced in height, then enlarged in width. */
const tallAndNarrow = (frame: RgbImage, side: number, o: SquareOptions) =>
  !o.letterbox && (o.window?.width ?? frame.width) < side && (o.window?.height ?? frame.height) > side

/** libvips' vertical reduction alone, then libvips' resize of that to the square: what a tall, narrow window gives. */
async function libvipsInTwoSteps(frame: RgbImage, side: number, o: SquareOptions): Promise<Buffer> {
  const window = o.window ?? {left: 0, top: 0, width: frame.width, height: frame.height}
  const reduced = await raw(frame).extract(window).resize(window.width, side, {fit: 'fill', kernel: 'lanczos3'}).raw().toBuffer()
  return raw({data: reduced, width: window.width, height: side}).resize(side, side, {fit: 'fill', kernel: 'lanczos3'}).raw().toBuffer()
}

test("resampleSquare gives libvips' squares bit for bit, squeezed or letterboxed, whole frames or windows; a tall, narrow window libvips' two steps", async () => {
  const next = random(3)
  const cases: {w: number; h: number; side: number; o: SquareOptions}[] = [
    {w: 500, h: 375, side: 448, o: {}}, // a wide photo: libvips reduces the width, enlarge.ts the height
    {w: 375, h: 500, side: 448, o: {}}, // a tall one: libvips reduces the height alone, enlarge.ts the width
    {w: 180, h: 180, side: 448, o: {}}, // both sides enlarged
    {w: 900, h: 600, side: 448, o: {}}, // both reduced: libvips alone
    {w: 500, h: 375, side: 448, o: {letterbox: true}},
    {w: 211, h: 161, side: 448, o: {letterbox: true}},
    {w: 500, h: 375, side: 448, o: {window: {left: 75, top: 56, width: 350, height: 263}}},
  ]
  for (let i = 0; i < 50; i++) {
    const w = 1 + Math.floor(next() * 700)
    const h = 1 + Math.floor(next() * 700)
    const width = Math.max(1, Math.floor(w * (0.3 + 0.7 * next())))
    const height = Math.max(1, Math.floor(h * (0.3 + 0.7 * next())))
    const window = next() < 0.5 ? {left: Math.floor((w - width) * next()), top: Math.floor((h - height) * next()), width, height} : undefined
    cases.push({w, h, side: next() < 0.8 ? 448 : 299, o: {window, letterbox: next() < 0.4}})
  }
  let tall = 0
  for (const {w, h, side, o} of cases) {
    const frame = noise(w, h, w * 7 + h)
    const got = await resampleSquare(frame, side, o)
    const what = `${w}x${h} ${JSON.stringify(o)} to ${side}`
    assert.equal([got.width, got.height], [side, side])
    if (!tallAndNarrow(frame, side, o)) {
      assert.is(differing(got.data, await libvipsSquare(frame, side, o)), 0, what)
      continue
    }
    tall++
    assert.is(differing(got.data, await libvipsInTwoSteps(frame, side, o)), 0, what)
    // libvips' resize in one step reduces a few rows differently: on noise, up to 3 levels on up to 3% of the values.
    const oneStep = await libvipsSquare(frame, side, o)
    let largest = 0
    for (let i = 0; i < oneStep.length; i++) largest = Math.max(largest, Math.abs(oneStep[i] - got.data[i]))
    assert.ok(largest <= 3 && differing(got.data, oneStep) <= 0.03 * oneStep.length, `${what}: ${largest} levels apart, ${differing(got.data, oneStep)} values`)
  }
  assert.ok(tall >= 5, `${tall} tall, narrow windows among the cases`)
})

test.run()
