import sharp from 'sharp'
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {DEFAULT_LIMITS} from '../../../src/lib/config/settings.js'
import {thumbnail} from '../../../src/lib/image/thumbnail.js'
import {exifTiff, orientationEntry, withApp1} from '../../helpers/exif.js'

/** The mean colour of a thumbnail's JPEG. */
async function mean(jpeg: Buffer): Promise<number[]> {
  const {channels} = await sharp(jpeg).stats()
  return channels.slice(0, 3).map((c) => Math.round(c.mean))
}

test("an animation's thumbnail is its frame on screen longest, not a blank first frame", async () => {
  const side = 32
  const frames = Buffer.alloc(side * side * 3 * 2, 255)
  for (let i = side * side; i < 2 * side * side; i++) frames.set([220, 20, 20], 3 * i)
  const gif = await sharp(frames, {raw: {width: side, height: side * 2, channels: 3, pageHeight: side}})
    .gif({delay: [100, 5000]})
    .toBuffer()
  const thumb = await thumbnail(gif, DEFAULT_LIMITS)
  const [r, g, b] = await mean(thumb?.jpeg as Buffer)
  assert.ok(r > 180 && g < 80 && b < 80, `mean ${r},${g},${b}`)
  assert.equal([thumb?.width, thumb?.height], [side, side])
})

test('an image with transparency is drawn on grey: a picture in the alpha of white pixels shows, as it would on a dark page', async () => {
  const side = 32
  // White pixels, opaque on the left half, transparent on the right.
  const rgba = Buffer.alloc(side * side * 4, 255)
  for (let i = 0; i < side * side; i++) if (i % side >= side / 2) rgba[4 * i + 3] = 0
  const png = await sharp(rgba, {raw: {width: side, height: side, channels: 4}}).png().toBuffer()
  const jpeg = (await thumbnail(png, DEFAULT_LIMITS))?.jpeg as Buffer
  const {data} = await sharp(jpeg).raw().toBuffer({resolveWithObject: true})
  const at = (x: number) => data[3 * (16 * side + x)]
  assert.ok(at(4) > 240 && Math.abs(at(28) - 128) < 10, `left ${at(4)}, right ${at(28)}`)
})

test('a thumbnail is turned as the image is shown and scored: a tag in the Exif sub-IFD, which Chromium reads and libvips does not', async () => {
  // 60 x 20: red on the left third, white elsewhere; the tag turns it a quarter clockwise.
  const raw = Buffer.alloc(60 * 20 * 3, 255)
  for (let i = 0; i < 60 * 20; i++) if (i % 60 < 20) raw.set([220, 20, 20], 3 * i)
  const jpeg = await sharp(raw, {raw: {width: 60, height: 20, channels: 3}}).jpeg({quality: 95}).toBuffer()
  const thumb = await thumbnail(withApp1(jpeg, {tiff: exifTiff([], [orientationEntry(6)])}), DEFAULT_LIMITS)
  assert.equal([thumb?.width, thumb?.height], [20, 60])
  const {data, info} = await sharp(thumb?.jpeg as Buffer).raw().toBuffer({resolveWithObject: true})
  assert.equal([info.width, info.height], [20, 60])
  // Turned clockwise, the red third is on top.
  const red = (y: number) => data[3 * (y * 20 + 10)] > 180 && data[3 * (y * 20 + 10) + 1] < 80
  assert.ok(red(5) && !red(55), 'red on top, white below')
})

test.run()
