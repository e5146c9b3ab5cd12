// The libvips work of one image on the default signals (CLIP and the NSFW specialist): its header read once, then one
// pipeline per raster made (the decode, turned as its EXIF orientation says; CLIP's centre crop; the specialist's
// square), and no other pass over the pixels.
import {join} from 'node:path'

import sharp from 'sharp'
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {DEFAULT_LIMITS} from '../../src/lib/config/settings.js'
import {SIGNALS} from '../../src/lib/signals/registry.js'
import {tempDir, TOY_MODEL} from '../helpers/cli.js'
import {sharpRuns} from '../helpers/sharp-runs.js'
import {toyEngine} from '../helpers/toy-engine.js'
import {warmCacheDir} from '../helpers/warm-cache.js'

const dir = tempDir()
test.after(() => dir.remove())

/** A 1280x720 photo-like JPEG, grey-green with noise, stored turned as a phone stores a portrait (orientation 6). */
async function phoneJpeg(): Promise<Buffer> {
  const width = 1280
  const height = 720
  const data = Buffer.alloc(width * height * 3)
  for (let i = 0; i < width * height; i++) {
    const noise = (Math.imul(i, 2_654_435_761) >>> 27) - 16
    data.set([110 + noise, 130 + noise, 100 + noise], 3 * i)
  }
  return sharp(data, {raw: {width, height, channels: 3}}).jpeg({quality: 85}).withMetadata({orientation: 6}).toBuffer()
}

test('one image on CLIP and the NSFW specialist: one header read and three libvips pipelines (decode and turn, CLIP\'s crop, the square)', async () => {
  const engine = toyEngine({cacheDir: warmCacheDir(join(dir.path, 'cache')), limits: DEFAULT_LIMITS}, TOY_MODEL, {signals: SIGNALS})
  try {
    const jpeg = await phoneJpeg()
    const first = await engine.moderateImage(jpeg, 'phone.jpg')
    assert.equal(Object.entries(engine.signals()).filter(([, state]) => state === 'loaded').map(([name]) => name).sort(), ['clip', 'nsfw'])
    // A grey-green photo: the specialist's gate stops it, so its judge's two other squares are never made.
    assert.is(first.is_safe, true)
    assert.equal(await sharpRuns(() => engine.moderateImage(jpeg, 'phone.jpg')), {pipelines: 3, headers: 1})
  } finally {
    await engine.close()
  }
})

test.run()
