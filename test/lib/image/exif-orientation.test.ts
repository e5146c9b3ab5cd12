// The readings of an EXIF orientation tag (Firefox's, Chromium's, libvips'), through probeImage as every image path
// reads them, and what decoding does with a tag they disagree on: the image's own view, then one per other reading.
import sharp from 'sharp'
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {decodedPixels, decodeImage, probeImage, type ImageLimits} from '../../../src/lib/image/decode.js'
import {boxInOrientation, reoriented} from '../../../src/lib/image/orientation.js'
import type {RgbImage} from '../../../src/lib/types.js'
import {exifTiff, LONG, orientationEntry, withApp1} from '../../helpers/exif.js'
import {pngChunk} from '../../helpers/hostile-images.js'

const LIMITS: ImageLimits = {maxBytes: 25 * 1024 * 1024, maxPixels: 100_000_000}

/** 7x5 pixels, each of its own colour: any turn or mirror shows. */
function distinctRaw(): RgbImage {
  const data = Buffer.alloc(7 * 5 * 3)
  for (let i = 0; i < 35; i++) data.set([i * 7, 255 - i * 7, (i * 53) % 256], 3 * i)
  return {data, width: 7, height: 5}
}
const lossless = () => {
  const img = distinctRaw()
  return sharp(img.data, {raw: {width: 7, height: 5, channels: 3}})
}
const baseJpeg = () => lossless().jpeg({quality: 100}).toBuffer()

async function readings(file: Buffer): Promise<[number, number[]]> {
  const probe = await probeImage(file)
  return [probe.orientation, probe.otherOrientations ?? []]
}

test('a well-formed tag (IFD0, SHORT, count 1) reads the same everywhere: one orientation, no other reading', async () => {
  for (const o of [1, 3, 6, 8]) assert.equal(await readings(withApp1(await baseJpeg(), {tiff: exifTiff([orientationEntry(o)])})), [o, []], `orientation ${o}`)
  assert.equal(await readings(await baseJpeg()), [1, []], 'no Exif at all')
  // Big-endian ("MM"), as many cameras write it: IFD0 with the orientation (6) and an Exif sub-IFD pointer.
  const mm = Buffer.from('4d4d002a00000008' + '0002' + '011200030000000100060000' + '876900040000000100000026' + '00000000' + '0001' + '9000000700000004' + '30323332' + '00000000', 'hex')
  assert.equal(await readings(withApp1(await baseJpeg(), {tiff: mm})), [6, []], 'big-endian')
})

test('a malformed tag is shown as Chromium reads it, and each other reading (Firefox, libvips) is named', async () => {
  const jpeg = await baseJpeg()
  const cases: [string, Buffer, [number, number[]]][] = [
    // Browsers take no LONG, nor a count of 2; libvips takes both.
    ['LONG 3 in IFD0', withApp1(jpeg, {tiff: exifTiff([orientationEntry(3, LONG)])}), [1, [3]]],
    ['SHORT with count 2', withApp1(jpeg, {tiff: exifTiff([orientationEntry(3, 3, 2)])}), [1, [3]]],
    // Chromium reads the Exif sub-IFD; Firefox and libvips read IFD0 alone.
    ['3 in the Exif sub-IFD only', withApp1(jpeg, {tiff: exifTiff([], [orientationEntry(3)])}), [3, [1]]],
    ['6 in IFD0, 3 in the sub-IFD', withApp1(jpeg, {tiff: exifTiff([orientationEntry(6)], [orientationEntry(3)])}), [6, []]],
    // Chromium takes the first well-formed entry in entry order, the sub-IFD read where its pointer stands.
    ['the sub-IFD pointer before IFD0 own entry', withApp1(jpeg, {tiff: exifTiff([orientationEntry(6)], [orientationEntry(3)], true)}), [3, [6]]],
    // Firefox lets IFD0's first orientation entry decide; Chromium skips one out of range.
    ['9, then 3', withApp1(jpeg, {tiff: exifTiff([orientationEntry(9), orientationEntry(3)])}), [3, [1]]],
    // Firefox reads the first APP1 segment, whatever it holds; Chromium and libvips the first Exif one.
    ['XMP first, then Exif 6', withApp1(jpeg, {raw: Buffer.from('http://ns.adobe.com/xap/1.0/\0<x/>', 'latin1')}, {tiff: exifTiff([orientationEntry(6)])}), [6, [1]]],
    ['two Exif segments, 6 then 3', withApp1(jpeg, {tiff: exifTiff([orientationEntry(6)])}, {tiff: exifTiff([orientationEntry(3)])}), [6, []]],
  ]
  for (const [what, file, expected] of cases) assert.equal(await readings(file), expected, what)
})

test("a PNG's eXIf chunk is read the same ways; a TIFF keeps libvips' reading of its own tag", async () => {
  const png = await lossless().png().toBuffer()
  // eXIf goes before the image data (browsers read none after it).
  const at = png.indexOf('IDAT', 0, 'latin1') - 4
  const tagged = (tiff: Buffer) => Buffer.concat([png.subarray(0, at), pngChunk('eXIf', tiff), png.subarray(at)])
  assert.equal(await readings(tagged(exifTiff([orientationEntry(6)]))), [6, []])
  assert.equal(await readings(tagged(exifTiff([orientationEntry(6, LONG)]))), [1, [6]])
  const tiff = await lossless().tiff().withMetadata({orientation: 6}).toBuffer()
  assert.equal(await readings(tiff), [6, []])
})

test('decoding gives the image in its own view, then in each other reading, turned back by primaryOrientation', async () => {
  const file = withApp1(await lossless().png().toBuffer().then((p) => sharp(p).jpeg({quality: 100}).toBuffer()), {tiff: exifTiff([orientationEntry(6, LONG)])})
  const views = await decodeImage(file, LIMITS)
  assert.is(views.length, 2)
  const stored = await sharp(file, {autoOrient: false}).raw().toBuffer({resolveWithObject: true})
  const turned = await sharp(file).autoOrient().raw().toBuffer({resolveWithObject: true})
  assert.equal([views[0].width, views[0].height, views[0].orientation, views[0].primaryOrientation], [7, 5, undefined, undefined])
  assert.ok(views[0].data.equals(stored.data), 'as browsers show it: as stored')
  assert.equal([views[1].width, views[1].height, views[1].orientation, views[1].primaryOrientation], [5, 7, 6, 1])
  assert.ok(views[1].data.equals(turned.data), 'as libvips reads the tag: turned a quarter')
  // The views share the still's part of the pixel limit.
  const probe = await probeImage(file)
  assert.is(decodedPixels(probe, LIMITS), 2 * 7 * 5)
})

test('reoriented turns a view from any orientation to any other exactly as decoding with that orientation does', async () => {
  const stored = distinctRaw()
  const shown = await Promise.all(
    [1, 2, 3, 4, 5, 6, 7, 8].map(async (o) => {
      const {data, info} = await lossless().png().withMetadata({orientation: o}).toBuffer().then((f) => sharp(f).autoOrient().raw().toBuffer({resolveWithObject: true}))
      return {data, width: info.width, height: info.height, ...(o === 1 ? {} : {orientation: o})} as RgbImage
    }),
  )
  for (const from of shown) {
    for (const [k, to] of shown.entries()) {
      const made = reoriented(from, k + 1)
      assert.equal([made.width, made.height, made.orientation], [to.width, to.height, to.orientation], `${from.orientation ?? 1} to ${k + 1}: size`)
      assert.ok(made.data.equals(to.data), `${from.orientation ?? 1} to ${k + 1}: pixels`)
    }
  }
  assert.ok(stored.data.equals(shown[0].data))
})

test('boxInOrientation puts a box where the same pixels are in the other orientation', () => {
  // One marked pixel and a 2x3 block, found again in every orientation by value.
  const base: RgbImage = {data: Buffer.alloc(7 * 5 * 3), width: 7, height: 5}
  for (let y = 1; y <= 3; y++) for (let x = 4; x <= 5; x++) base.data.set([255, 255, 255], 3 * (y * 7 + x))
  const found = (img: RgbImage): [number, number, number, number] => {
    const xs: number[] = []
    const ys: number[] = []
    for (let i = 0; i < img.width * img.height; i++) if (img.data[3 * i] === 255) xs.push(i % img.width), ys.push(Math.floor(i / img.width))
    return [Math.min(...xs), Math.min(...ys), Math.max(...xs) - Math.min(...xs) + 1, Math.max(...ys) - Math.min(...ys) + 1]
  }
  for (let from = 1; from <= 8; from++) {
    const a = reoriented(base, from)
    for (let to = 1; to <= 8; to++) {
      assert.equal(boxInOrientation(found(a), from, to, a.width, a.height), found(reoriented(base, to)), `${from} to ${to}`)
    }
  }
})

test.run()
