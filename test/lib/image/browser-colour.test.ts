// Colour that browsers apply and libvips would not, read here as browsers read it: an ICC profile listing a tag
// twice, of an abstract or device-link class, an RGB profile in a greyscale JPEG or PNG, a JPEG whose ICC segments
// disagree, a PNG's cICP chunk and its cHRM beside gAMA. Each file shows the stored picture in Chromium.
import sharp from 'sharp'
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {isModError} from '../../../src/lib/errors.js'
import {decodeImage, probeImage} from '../../../src/lib/image/decode.js'
import {jpegIccDiscarded} from '../../../src/lib/image/jpeg-icc.js'
import {colorants} from '../../../src/lib/image/icc.js'
import {type Curve, curveTag, DISPLAY_P3, jpegWithIccSegments, matrixShaperProfile, pngWithProfile, ramps, SRGB, SRGB_CURVE} from '../../helpers/icc-profiles.js'

const LIMITS = {maxBytes: 25 * 1024 * 1024, maxPixels: 100_000_000}

/** Curves that send stored 200..255 to the whole range and below 200 to black: a picture stored nearly white. */
const EXPAND = {table: Array.from({length: 256}, (_, i) => (i < 200 ? 0 : ((i - 200) / 55) ** 2.2))}
/** A curve that sends every value to white. */
const WHITE = {table: [1, 1]}

/** The largest difference between two images' samples. */
function farthest(a: Buffer, b: Buffer): number {
  assert.is(a.length, b.length)
  return a.reduce((most, v, i) => Math.max(most, Math.abs(v - b[i])), 0)
}

/** What libvips makes of the stored values under a well-formed display profile: what the browser shows. */
async function shown(rgb: Buffer, width: number, height: number, profile: Buffer): Promise<Buffer> {
  return sharp(pngWithProfile(width, height, rgb, profile)).toColourspace('srgb').raw().toBuffer()
}

test("a profile listing its tone curves twice is read by its first copies, as browsers read it (and Little CMS refuses it)", async () => {
  const {width, height, rgb} = ramps()
  const srgbCurve = curveTag(SRGB_CURVE)
  const twice = matrixShaperProfile({colorants: SRGB, curve: EXPAND, extra: {rTRC: srgbCurve, gTRC: srgbCurve, bTRC: srgbCurve}})
  const [image] = await decodeImage(pngWithProfile(width, height, rgb, twice), LIMITS)
  const expected = await shown(rgb, width, height, matrixShaperProfile({colorants: SRGB, curve: EXPAND}))
  assert.ok(farthest(image.data, expected) <= 2, `within ${farthest(image.data, expected)} levels`)
  assert.ok(farthest(image.data, rgb) > 100, 'not the stored values')
  // The other way round, sRGB's curves first: the stored values, as a browser shows them.
  const srgbFirst = matrixShaperProfile({colorants: SRGB, curve: SRGB_CURVE, extra: {rTRC: curveTag(EXPAND), gTRC: curveTag(EXPAND), bTRC: curveTag(EXPAND)}})
  assert.ok((await decodeImage(pngWithProfile(width, height, rgb, srgbFirst), LIMITS))[0].data.equals(rgb))
})

test('a profile of an abstract or device-link class is applied to the stored values, as browsers apply it', async () => {
  const {width, height, rgb} = ramps()
  const expected = await shown(rgb, width, height, matrixShaperProfile({colorants: DISPLAY_P3, curve: EXPAND}))
  for (const deviceClass of ['abst', 'link']) {
    const [image] = await decodeImage(pngWithProfile(width, height, rgb, matrixShaperProfile({colorants: DISPLAY_P3, curve: EXPAND, deviceClass})), LIMITS)
    assert.ok(farthest(image.data, expected) <= 2, `${deviceClass}: within ${farthest(image.data, expected)} levels`)
  }
})

test('an RGB profile in a greyscale JPEG or PNG is applied to the grey values as red, green and blue alike', async () => {
  const grey = Buffer.from(Array.from({length: 256}, (_, v) => v))
  const profile = matrixShaperProfile({colorants: SRGB, curve: EXPAND})
  const expected = await shown(Buffer.from([...grey].flatMap((v) => [v, v, v])), 256, 1, profile)
  const png = pngWithProfile(256, 1, grey, profile, {grey: true})
  const jpeg = jpegWithIccSegments(await sharp(grey, {raw: {width: 256, height: 1, channels: 1}}).jpeg({quality: 100}).toBuffer(), [{seq: 1, count: 1, bytes: profile}])
  for (const [name, file, levels] of [['PNG', png, 2], ['JPEG', jpeg, 8]] as const) {
    const [image] = await decodeImage(file, LIMITS)
    assert.ok(farthest(image.data, expected) <= levels, `${name}: within ${farthest(image.data, expected)} levels`)
  }
})

test('a profile browsers cannot read (random bytes, cut short, a foreign illuminant, nothing to convert from) is dropped: the stored values, not a refusal', async () => {
  const {width, height, rgb} = ramps()
  const good = matrixShaperProfile({colorants: DISPLAY_P3, curve: EXPAND})
  const foreignWhite = Buffer.from(good)
  foreignWhite.writeInt32BE(Math.round(0.95 * 65536), 68)
  const noColorants = matrixShaperProfile({colorants: DISPLAY_P3, curve: EXPAND, deviceClass: 'abst'})
  noColorants.write('xXYZ', 132 + 12 * 2, 'latin1')
  const unreadable: [string, Buffer][] = [
    ['random bytes', Buffer.from(Array.from({length: 3000}, (_, i) => (i * 7919) % 251))],
    ['cut short', good.subarray(0, 300)],
    ['a foreign illuminant', foreignWhite],
    ['no colorants, an abstract class', noColorants],
  ]
  const stored = await sharp(rgb, {raw: {width, height, channels: 3}}).jpeg({quality: 100}).toBuffer()
  const storedJpeg = (await decodeImage(stored, LIMITS))[0].data
  const grey = Buffer.from(Array.from({length: 256}, (_, v) => v))
  const greyJpeg = await sharp(grey, {raw: {width: 256, height: 1, channels: 1}}).jpeg({quality: 100}).toBuffer()
  for (const [name, profile] of unreadable) {
    const [png] = await decodeImage(pngWithProfile(width, height, rgb, profile), LIMITS)
    assert.ok(png.data.equals(rgb), `PNG, ${name}`)
    const [jpeg] = await decodeImage(jpegWithIccSegments(stored, [{seq: 1, count: 1, bytes: profile}]), LIMITS)
    assert.ok(jpeg.data.equals(storedJpeg), `JPEG, ${name}`)
    const [greyImage] = await decodeImage(jpegWithIccSegments(greyJpeg, [{seq: 1, count: 1, bytes: profile}]), LIMITS)
    assert.ok(farthest(greyImage.data, Buffer.from([...grey].flatMap((v) => [v, v, v]))) <= 1, `grey JPEG, ${name}`)
  }
})

test("a JPEG whose ICC segments disagree is shown as its stored values, as browsers take no profile from it", async () => {
  const {width, height, rgb} = ramps()
  const jpeg = await sharp(rgb, {raw: {width, height, channels: 3}}).jpeg({quality: 100}).toBuffer()
  const stored = await sharp(jpeg, {ignoreIcc: true}).raw().toBuffer()
  const srgb = matrixShaperProfile({colorants: SRGB, curve: SRGB_CURVE})
  const white = matrixShaperProfile({colorants: SRGB, curve: WHITE})
  // Two segments each "1 of 1": libvips applied the last, the white one.
  const twice = jpegWithIccSegments(jpeg, [{seq: 1, count: 1, bytes: srgb}, {seq: 1, count: 1, bytes: white}])
  assert.ok((await decodeImage(twice, LIMITS))[0].data.equals(stored))
  // One profile in two parts, as writers split large ones, is whole: the white one applies.
  const split = jpegWithIccSegments(jpeg, [{seq: 1, count: 2, bytes: white.subarray(0, 100)}, {seq: 2, count: 2, bytes: white.subarray(100)}])
  assert.is(jpegIccDiscarded(split), false)
  assert.ok((await decodeImage(split, LIMITS))[0].data.every((v) => v === 255))
  const segments = (list: [number, number][]) => jpegWithIccSegments(jpeg, list.map(([seq, count]) => ({seq, count, bytes: white})))
  assert.equal(
    [[[1, 1]], [[1, 2]], [[1, 2], [2, 3]], [[0, 1]], [[2, 1]], [[2, 2], [1, 2]]].map((list) => jpegIccDiscarded(segments(list as [number, number][]))),
    [false, true, true, true, true, false],
  )
})

const cicp = (codes: number[]): [string, Buffer] => ['cICP', Buffer.from(codes)]

test("a PNG's cICP chunk takes precedence over its iCCP profile: sRGB keeps the stored values, Display P3 is converted", async () => {
  const {width, height, rgb} = ramps()
  const white = matrixShaperProfile({colorants: SRGB, curve: WHITE})
  assert.ok((await decodeImage(pngWithProfile(width, height, rgb, white, {chunks: [cicp([1, 13, 0, 1])]}), LIMITS))[0].data.equals(rgb))
  const [p3] = await decodeImage(pngWithProfile(width, height, rgb, white, {chunks: [cicp([12, 13, 0, 1])]}), LIMITS)
  const expected = await shown(rgb, width, height, matrixShaperProfile({colorants: DISPLAY_P3, curve: SRGB_CURVE}))
  assert.ok(farthest(p3.data, expected) <= 2, `within ${farthest(p3.data, expected)} levels`)
  // Narrow range (video's) and primaries it does not know are refused rather than read as sRGB.
  for (const codes of [[1, 13, 0, 0], [22, 13, 0, 1], [1, 17, 0, 1]]) {
    const error = await decodeImage(pngWithProfile(width, height, rgb, undefined, {chunks: [cicp(codes)]}), LIMITS).catch((e: unknown) => e)
    assert.ok(isModError(error) && error.code === 'unsupported_media' && /cICP/.test(error.message), `${codes}: ${String(error)}`)
  }
})

test("a PNG's cICP chunk naming BT.709's transfer (or BT.601's, BT.2020's) is read as Chromium shows it: as a display's 2.4 gamma", async () => {
  const rgb = Buffer.from([128, 96, 64])
  for (const transfer of [1, 6, 14, 15]) {
    const [image] = await decodeImage(pngWithProfile(1, 1, rgb, undefined, {chunks: [cicp([1, transfer, 0, 1])]}), LIMITS)
    // Chromium 156 shows 121, 87, 54; inverting the camera curve instead gave 141, 114, 83.
    assert.ok(farthest(image.data, Buffer.from([121, 87, 54])) <= 1, `transfer ${transfer}: ${[...image.data]}`)
  }
})

test("a PNG's cICP chunk of HDR (PQ) is shown as an SDR screen shows it: HDR's reference white near white, not the grey its samples read as", async () => {
  // 148 of 255 is PQ's signal for 203 cd/m², HDR's reference white (ITU-R BT.2408); black stays black.
  const [width, height] = [2, 1]
  const rgb = Buffer.from([148, 148, 148, 0, 0, 0])
  const [image] = await decodeImage(pngWithProfile(width, height, rgb, undefined, {chunks: [cicp([9, 16, 0, 1])]}), LIMITS)
  const [r, g, b, ...black] = image.data
  assert.ok(r >= 235 && r <= 250 && Math.abs(r - g) <= 1 && Math.abs(r - b) <= 1, `reference white: ${r}, ${g}, ${b}`)
  assert.equal(black, [0, 0, 0])
})

test("a PNG's cHRM beside gAMA is applied, as browsers apply it: red and green swapped in the samples and the primaries give the picture", async () => {
  const {width, height, rgb} = ramps()
  const swapped = Buffer.from(rgb)
  for (let i = 0; i < swapped.length; i += 3) [swapped[i], swapped[i + 1]] = [rgb[i + 1], rgb[i]]
  const chrm = (points: number[][]): [string, Buffer] => {
    const data = Buffer.alloc(32)
    points.flat().forEach((v, k) => data.writeUInt32BE(Math.round(v * 100_000), 4 * k))
    return ['cHRM', data]
  }
  const gama: [string, Buffer] = ['gAMA', Buffer.from([0, 0, 0xb1, 0x8f])]
  const [white, red, green, blue] = [[0.3127, 0.329], [0.64, 0.33], [0.3, 0.6], [0.15, 0.06]]
  const [image] = await decodeImage(pngWithProfile(width, height, swapped, undefined, {chunks: [gama, chrm([white, green, red, blue])]}), LIMITS)
  // The picture under a 2.2 gamma (gAMA's 1/2.2, not sRGB's curve) with sRGB's primaries.
  const expected = await shown(rgb, width, height, matrixShaperProfile({colorants: SRGB, curve: {gamma: 2.2}}))
  assert.ok(farthest(image.data, expected) <= 2, `within ${farthest(image.data, expected)} levels of the picture`)
  // sRGB's own primaries, as many writers record them beside gAMA 1/2.2: the stored values.
  assert.ok((await decodeImage(pngWithProfile(width, height, rgb, undefined, {chunks: [gama, chrm([white, red, green, blue])]}), LIMITS))[0].data.equals(rgb))
  // cHRM alone is not applied, as browsers do not.
  assert.ok((await decodeImage(pngWithProfile(width, height, swapped, undefined, {chunks: [chrm([white, green, red, blue])]}), LIMITS))[0].data.equals(swapped))
})

test('a profile whose tone curve browsers refuse (a negative gamma, a of 0, a negative base) is shown as its stored values, also as a first copy', async () => {
  const {width, height, rgb} = ramps()
  const refused: [string, Curve][] = [
    ['negative g', {parametric: [-1]}],
    ['type 1 with a = 0', {parametric: [1, 0, 0]}],
    ['type 4 with a d + b < 0', {parametric: [1, 0, -1, 0, 2, 0, 0]}],
  ]
  for (const [name, curve] of refused) {
    for (const profile of [
      matrixShaperProfile({colorants: SRGB, curve}),
      matrixShaperProfile({colorants: SRGB, curve, deviceClass: 'abst'}),
      matrixShaperProfile({colorants: SRGB, curve, extra: {rTRC: curveTag(SRGB_CURVE), gTRC: curveTag(SRGB_CURVE), bTRC: curveTag(SRGB_CURVE)}}),
    ]) {
      const [image] = await decodeImage(pngWithProfile(width, height, rgb, profile), LIMITS)
      assert.ok(image.data.equals(rgb), name)
    }
  }
})

test('a 16-bit PNG gets the colour its 8-bit copy gets: a device-link or duplicate-tag profile, an RGB profile in grey', async () => {
  const {width, height, rgb} = ramps()
  for (const profile of [
    matrixShaperProfile({colorants: SRGB, curve: EXPAND, deviceClass: 'link'}),
    matrixShaperProfile({colorants: SRGB, curve: EXPAND, extra: {rTRC: curveTag(SRGB_CURVE), gTRC: curveTag(SRGB_CURVE), bTRC: curveTag(SRGB_CURVE)}}),
  ]) {
    const [eight] = await decodeImage(pngWithProfile(width, height, rgb, profile), LIMITS)
    const [sixteen] = await decodeImage(pngWithProfile(width, height, rgb, profile, {sixteen: true}), LIMITS)
    assert.ok(farthest(sixteen.data, eight.data) <= 1, `within ${farthest(sixteen.data, eight.data)} levels`)
    assert.ok(farthest(sixteen.data, rgb) > 100)
  }
  const grey = Buffer.from(Array.from({length: 256}, (_, v) => v))
  const profile = matrixShaperProfile({colorants: SRGB, curve: EXPAND})
  const [eight] = await decodeImage(pngWithProfile(256, 1, grey, profile, {grey: true}), LIMITS)
  const [sixteen] = await decodeImage(pngWithProfile(256, 1, grey, profile, {grey: true, sixteen: true}), LIMITS)
  assert.ok(farthest(sixteen.data, eight.data) <= 1, `grey: within ${farthest(sixteen.data, eight.data)} levels`)
})

test('a cHRM of two identical primaries is dropped with its gAMA, as browsers drop both: the stored values', async () => {
  const {width, height, rgb} = ramps()
  const data = Buffer.alloc(32)
  ;[[0.3127, 0.329], [0.64, 0.33], [0.64, 0.33], [0.64, 0.33]].flat().forEach((v, k) => data.writeUInt32BE(Math.round(v * 100_000), 4 * k))
  const file = pngWithProfile(width, height, rgb, undefined, {chunks: [['gAMA', Buffer.from([0, 0, 0x03, 0xe8])], ['cHRM', data]]})
  assert.ok((await decodeImage(file, LIMITS))[0].data.equals(rgb))
})

test("primaries and a white point give the colorants an ICC profile stores (adapted to D50): sRGB's and Display P3's", () => {
  const close = (a: number[][], b: number[][]) => a.every((col, c) => col.every((v, r) => Math.abs(v - b[c][r]) < 5e-4))
  assert.ok(close(colorants([[0.3127, 0.329], [0.64, 0.33], [0.3, 0.6], [0.15, 0.06]]) ?? [], SRGB))
  assert.ok(close(colorants([[0.3127, 0.329], [0.68, 0.32], [0.265, 0.69], [0.15, 0.06]]) ?? [], DISPLAY_P3))
  assert.is(colorants([[0.3127, 0], [0.64, 0.33], [0.3, 0.6], [0.15, 0.06]]), undefined)
})

test('the probe says how colour is read: the stored values for a duplicate-tag profile whose first curves are sRGB', async () => {
  const {width, height, rgb} = ramps()
  const probe = await probeImage(pngWithProfile(width, height, rgb, matrixShaperProfile({colorants: SRGB, curve: EXPAND, deviceClass: 'link'})))
  assert.equal([probe.profile, probe.colour === undefined], ['srgb', false])
})

test.run()
