import {join} from 'node:path'

import sharp from 'sharp'
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {hashToHex} from '../../../../src/lib/signals/pdq/hash256.js'
import {hashImage, hashVideo, type MediaHash} from '../../../../src/lib/signals/pdq/hash-media.js'
import {pdqHash} from '../../../../src/lib/signals/pdq/pdq.js'
import {decodeOptions, ffmpeg, tempDir} from '../../video/helpers.js'
import {exifTiff, LONG, orientationEntry, withApp1} from '../../../helpers/exif.js'

const LIMITS = {maxBytes: 25 * 1024 * 1024, maxPixels: 100_000_000}
const SIDE = 64

/** A 9-frame GIF of grey patterns, a different one per frame, with these delays (ms). */
async function patternGif(delay: number[]): Promise<Buffer> {
  const frames = delay.length
  const data = Buffer.alloc(SIDE * SIDE * frames)
  for (let f = 0; f < frames; f++) {
    for (let y = 0; y < SIDE; y++) {
      for (let x = 0; x < SIDE; x++) data[(f * SIDE + y) * SIDE + x] = (Math.floor(x / (2 + f)) * 67 + Math.floor(y / (3 + (f % 4))) * 41) % 256
    }
  }
  return sharp(data, {raw: {width: SIDE, height: SIDE * frames, channels: 1, pageHeight: SIDE}})
    .gif({delay})
    .toBuffer()
}

/** The PDQ hash of frame `page` of a file, decoded on its own. */
async function pageHash(file: Buffer, page: number): Promise<string> {
  const {data, info} = await sharp(file, {page}).flatten({background: '#ffffff'}).toColourspace('srgb').raw().toBuffer({resolveWithObject: true})
  return hashToHex(pdqHash({data, width: info.width, height: info.height}).hash)
}

test('mod hash hashes the frames scan scores: chosen by display time (a 10 s frame at index 4 of 9), and the one left out, another picture', async () => {
  const file = await patternGif([40, 40, 40, 40, 10_000, 40, 40, 40, 40])
  const hashes = await hashImage(file, LIMITS)
  const expected = await Promise.all([0, 1, 2, 3, 4, 5, 6, 7, 8].map((page) => pageHash(file, page)))
  assert.equal(new Set(expected).size, 9)
  assert.equal(
    hashes.map((h) => [h.frame, h.hash]),
    expected.map((hash, frame) => [frame, hash]),
  )
})

test('mod hash of a still whose orientation tag viewers read differently hashes it as shown (as Chromium reads the tag), once', async () => {
  const data = Buffer.alloc(SIDE * SIDE * 3)
  for (let i = 0; i < data.length; i++) data[i] = ((i % (SIDE * 3)) * 7 + Math.floor(i / (SIDE * 3)) * 13) % 256
  const jpeg = await sharp(data, {raw: {width: SIDE, height: SIDE, channels: 3}}).jpeg({quality: 95}).toBuffer()
  const asStored = await hashImage(jpeg, LIMITS)
  // A LONG tag, which browsers ignore and libvips reads: the file is shown as stored, also scored turned.
  const hashes = await hashImage(withApp1(jpeg, {tiff: exifTiff([orientationEntry(3, LONG)])}), LIMITS)
  assert.equal(hashes, asStored)
  assert.is(hashes.length, 1)
})

test("mod hash of a video with transparency hashes each instant's frame as a light page shows it, as lists are made", async () => {
  const tmp = tempDir()
  try {
    const still = join(tmp.dir, 'pattern.png')
    const pattern = await patternGif([40])
    // The pattern in the alpha of white pixels: a light page shows blank white, a dark page the pattern.
    const {data} = await sharp(pattern).greyscale().raw().toBuffer({resolveWithObject: true})
    const rgba = Buffer.alloc(SIDE * SIDE * 4, 255)
    for (let i = 0; i < SIDE * SIDE; i++) rgba[4 * i + 3] = data[i]
    await sharp(rgba, {raw: {width: SIDE, height: SIDE, channels: 4}}).png().toFile(still)
    const clip = join(tmp.dir, 'pattern.mov')
    await ffmpeg('-loop', '1', '-i', still, '-t', '1', '-r', '10', '-c:v', 'qtrle', clip)
    const hashes: MediaHash[] = []
    for await (const h of hashVideo(clip, decodeOptions({fps: 2}))) hashes.push(h)
    const white = hashToHex(pdqHash({data: Buffer.alloc(SIDE * SIDE * 3, 255), width: SIDE, height: SIDE}).hash)
    assert.equal(
      hashes.map((h) => [h.time, h.hash]),
      [
        [0, white],
        [0.5, white],
      ],
    )
  } finally {
    tmp.remove()
  }
})

test.run()
