import sharp from 'sharp'
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {decodeImage, probeImage} from '../../../src/lib/image/decode.js'
import {isSrgbProfile} from '../../../src/lib/image/icc.js'
import {ADOBE_RGB, DISPLAY_P3, matrixShaperProfile, pngWithProfile, ramps, SRGB, SRGB_CURVE, type Curve} from '../../helpers/icc-profiles.js'

const LIMITS = {maxBytes: 25 * 1024 * 1024, maxPixels: 100_000_000}

/** sRGB's tone curve sampled in n entries, as many cameras' and HP's sRGB profiles store it. */
function srgbTable(n: number): Curve {
  return {table: Array.from({length: n}, (_, i) => (i / (n - 1) <= 0.04045 ? i / (n - 1) / 12.92 : ((i / (n - 1) + 0.055) / 1.055) ** 2.4))}
}

/** The profile sharp embeds as sRGB (libvips' own). */
async function libvipsSrgb(): Promise<Buffer> {
  const file = await sharp(Buffer.alloc(4 * 4 * 3, 90), {raw: {width: 4, height: 4, channels: 3}}).withIccProfile('srgb').png().toBuffer()
  return (await sharp(file).metadata()).icc as Buffer
}

test('recognises sRGB profiles by their colorants and curves: parametric, tabulated, and libvips\' own', async () => {
  assert.ok(isSrgbProfile(matrixShaperProfile({colorants: SRGB, curve: SRGB_CURVE})))
  assert.ok(isSrgbProfile(matrixShaperProfile({colorants: SRGB, curve: srgbTable(1024)})))
  assert.ok(isSrgbProfile(matrixShaperProfile({colorants: SRGB, curve: srgbTable(4096)})))
  assert.ok(isSrgbProfile(await libvipsSrgb()))
})

test('other profiles are not sRGB, whatever their name: Display P3, Adobe RGB, sRGB primaries with a 2.2 gamma', () => {
  assert.not.ok(isSrgbProfile(matrixShaperProfile({colorants: DISPLAY_P3, curve: SRGB_CURVE, name: 'sRGB IEC61966-2.1'})))
  assert.not.ok(isSrgbProfile(matrixShaperProfile({colorants: ADOBE_RGB, curve: {gamma: 563 / 256}, name: 'sRGB IEC61966-2.1'})))
  assert.not.ok(isSrgbProfile(matrixShaperProfile({colorants: SRGB, curve: {gamma: 2.2}, name: 'sRGB Profile'})))
  // A transform would use the lookup table, whatever the matrix says.
  const lut = Buffer.concat([Buffer.from('mft1\0\0\0\0', 'latin1'), Buffer.alloc(48)])
  assert.not.ok(isSrgbProfile(matrixShaperProfile({colorants: SRGB, curve: SRGB_CURVE, extra: {A2B0: lut}})))
})

test('a profile that cannot be read is not sRGB', () => {
  const good = matrixShaperProfile({colorants: SRGB, curve: SRGB_CURVE})
  assert.not.ok(isSrgbProfile(Buffer.alloc(0)))
  assert.not.ok(isSrgbProfile(good.subarray(0, 200)))
  assert.not.ok(isSrgbProfile(Buffer.alloc(good.length, 0xff)))
  const cmyk = Buffer.from(good)
  cmyk.write('CMYK', 16, 'latin1')
  assert.not.ok(isSrgbProfile(cmyk))
})

test('an image with an embedded sRGB profile decodes to its stored values, which a conversion would round', async () => {
  const {width, height, rgb} = ramps()
  const file = pngWithProfile(width, height, rgb, matrixShaperProfile({colorants: SRGB, curve: SRGB_CURVE}))
  assert.is((await probeImage(file)).profile, 'srgb')
  const [image] = await decodeImage(file, LIMITS)
  assert.ok(image.data.equals(rgb), 'the stored values')
  // What the decode no longer does: the colour engine's round trip moves some values by one level.
  const converted = await sharp(file).toColourspace('srgb').raw().toBuffer()
  assert.not.ok(converted.equals(rgb))
})

for (const [name, profile] of [
  ['Display P3', matrixShaperProfile({colorants: DISPLAY_P3, curve: SRGB_CURVE})],
  ['Adobe RGB', matrixShaperProfile({colorants: ADOBE_RGB, curve: {gamma: 563 / 256}})],
] as const) {
  test(`an image with a ${name} profile is still converted to sRGB`, async () => {
    const {width, height, rgb} = ramps()
    const file = pngWithProfile(width, height, rgb, profile)
    assert.is((await probeImage(file)).profile, 'other')
    const [image] = await decodeImage(file, LIMITS)
    assert.ok(image.data.equals(await sharp(file).toColourspace('srgb').raw().toBuffer()), 'as libvips converts it')
    const moved = image.data.reduce((most, v, i) => Math.max(most, Math.abs(v - rgb[i])), 0)
    assert.ok(moved > 20, `values moved by up to ${moved}`)
  })
}

test('an image without a profile has none in its probe, and decodes to its stored values', async () => {
  const {width, height, rgb} = ramps()
  const file = await sharp(rgb, {raw: {width, height, channels: 3}}).png().toBuffer()
  assert.is((await probeImage(file)).profile, undefined)
  assert.ok((await decodeImage(file, LIMITS))[0].data.equals(rgb))
})

test.run()
