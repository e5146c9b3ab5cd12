// Extreme shapes through the engine (toy CLIP and the real NSFW specialist): every width and height from 1 to
// 10^7 px, both ways, gets a clear answer. A side over MAX_SIDE is refused from the header; any other sliver is
// scored as its centre MAX_ASPECT_RATIO : 1 part, exactly as that part sent on its own.
import {execFileSync} from 'node:child_process'
import {join} from 'node:path'

import sharp from 'sharp'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {DEFAULT_LIMITS} from '../../src/lib/config/settings.js'
import {MAX_ASPECT_RATIO} from '../../src/lib/image/aspect.js'
import {MAX_SIDE} from '../../src/lib/image/decode.js'
import {SIGNALS} from '../../src/lib/signals/registry.js'
import {tempDir, TOY_MODEL} from '../helpers/cli.js'
import {rejection} from '../helpers/errors.js'
import {greyPng, sweepShapes} from '../helpers/hostile-images.js'
import {signalStates} from '../helpers/signals.js'
import {toyEngine} from '../helpers/toy-engine.js'
import {warmCacheDir} from '../helpers/warm-cache.js'

const dir = tempDir()
test.after(() => dir.remove())

const engine = toyEngine({cacheDir: warmCacheDir(join(dir.path, 'cache')), limits: DEFAULT_LIMITS}, TOY_MODEL, {signals: SIGNALS})
test.after(() => engine.close())

test('both signals are loaded, so the sweep covers both preprocessings', async () => {
  await engine.load()
  assert.equal(engine.signals(), signalStates({clip: 'loaded', nsfw: 'loaded', nudenet: 'not_installed'}))
})

for (const {width, height} of sweepShapes()) {
  const name = `${width}x${height}.png`
  if (Math.max(width, height) > MAX_SIDE) {
    test(`${name} is refused from its header as payload_too_large`, async () => {
      const e = await rejection(engine.moderateImage(greyPng(width, height), name))
      assert.equal([e.code, e.message], ['payload_too_large', `image is ${width}x${height}; a side may be at most ${MAX_SIDE} pixels`])
    })
  } else {
    const kept = {width: Math.min(width, MAX_ASPECT_RATIO * height), height: Math.min(height, MAX_ASPECT_RATIO * width)}
    test(`${name} is scored as its centre ${kept.width}x${kept.height}`, async () => {
      const result = await engine.moderateImage(greyPng(width, height), name)
      assert.equal(result, await engine.moderateImage(greyPng(kept.width, kept.height), name))
      assert.ok(result.labels.some((l) => l.name === 'nudity'))
    })
  }
}

/** An animated GIF of `width` x `height`: frames of the given colours. */
function animatedGif(width: number, height: number, colours: [number, number, number][]): Promise<Buffer> {
  const frame = width * height * 3
  const data = Buffer.alloc(frame * colours.length)
  colours.forEach((c, i) => {
    for (let p = 0; p < width * height; p++) data.set(c, i * frame + 3 * p)
  })
  return sharp(data, {raw: {width, height: height * colours.length, channels: 3, pageHeight: height}}).gif({delay: 100}).toBuffer()
}

test('an animated sliver: each frame is scored on its centre 20 : 1 part', async () => {
  const colours: [number, number, number][] = [[0, 0, 255], [255, 0, 0], [0, 0, 255]]
  for (const [w, h] of [[3000, 2], [2, 3000]]) {
    const result = await engine.moderateImage(await animatedGif(w, h, colours), 'sliver.gif')
    const centre = await engine.moderateImage(await animatedGif(Math.min(w, 40), Math.min(h, 40), colours), 'sliver.gif')
    assert.equal(result, centre)
    assert.equal(result.violations.map((v) => v.name), ['redness'])
  }
})

test('a sliver video (4000x2, 2x4000): every frame is scored on its centre part, with a clear result', async () => {
  for (const size of ['4000x2', '2x4000']) {
    const path = join(dir.path, `${size}.mkv`)
    execFileSync('ffmpeg', ['-loglevel', 'error', '-f', 'lavfi', '-i', `color=c=red:s=${size}:d=2:r=5`, '-c:v', 'ffv1', path])
    const result = await engine.moderateVideo(path, {source: size, fps: 1, minFrames: 1, stopOnViolation: false})
    assert.equal([result.frames_analyzed, result.violations.map((v) => v.name)], [2, ['redness']], size)
  }
})

test.run()
