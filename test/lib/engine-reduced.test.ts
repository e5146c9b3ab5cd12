// Reduced decoding through the engine: a large JPEG reaches the signals at twice the side they resample to, and
// scores as it does from every pixel (the parity the bench measures on photos, here on the toy model).
import {join} from 'node:path'

import sharp from 'sharp'
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {buildPolicy} from '../../src/lib/config/policy.js'
import {DEFAULT_LIMITS} from '../../src/lib/config/settings.js'
import {createEngine, type EngineOptions} from '../../src/lib/engine.js'
import type {Signal} from '../../src/lib/signals/signal.js'
import type {ModerationResult, RgbImage} from '../../src/lib/types.js'
import {tempDir, TOY_MODEL} from '../helpers/cli.js'
import {warmCacheDir} from '../helpers/warm-cache.js'

const dir = tempDir()
test.after(() => dir.remove())

const REDNESS = [{name: 'redness', prompts: ['red']}]

const options = (overrides: Partial<EngineOptions> = {}): EngineOptions => ({
  preset: 'fast',
  modelDir: TOY_MODEL,
  cacheDir: warmCacheDir(join(dir.path, 'cache')),
  policy: buildPolicy({categories: REDNESS}),
  limits: DEFAULT_LIMITS,
  ...overrides,
})

/**
 * A 1800 x 1400 photo-like JPEG: red on the left `redShare` of it, blue-green on the rest, each shading along x
 * (so that border trimming cuts the same share of it at any scale) under a little noise.
 */
async function largeJpeg(redShare: number): Promise<Buffer> {
  const width = 1800
  const height = 1400
  const data = Buffer.alloc(width * height * 3)
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const noise = ((x * 7919 + y * 104729) % 17) - 8
      const shade = Math.floor((100 * x) / width)
      data.set(x < width * redShare ? [220 + noise, 30 + shade, 30] : [20, 120 + noise, 120 + shade], 3 * (y * width + x))
    }
  }
  return sharp(data, {raw: {width, height, channels: 3}}).jpeg({quality: 88}).toBuffer()
}

/** A test signal feeding redness that notes the size of each frame it is given; `frameSide` as it declares. */
function recording(name: string, seen: string[], frameSide?: number): Signal {
  return {
    name,
    title: name,
    description: 'notes the frames it is given',
    kind: 'model',
    combine: {mode: 'mean'},
    off: () => undefined,
    weight: (category) => (category.name === 'redness' ? 1 : 0),
    open: async () => ({
      ...(frameSide === undefined ? {} : {frameSide}),
      prepare: (frame: RgbImage) => seen.push(`${name} ${frame.width}x${frame.height}`),
      infer: async (inputs: unknown[]) => inputs.map(() => 0),
      scores: () => new Map([['redness', 0]]),
      dispose: async () => {},
    }),
  }
}

async function framesSeen(signals: Signal[], seen: string[], everyPixel = false): Promise<string[]> {
  // Untrimmed: the frames as decoded.
  const engine = createEngine(options({signals, everyPixel, policy: buildPolicy({categories: REDNESS, trim_borders: false})}))
  try {
    await engine.moderateImage(await largeJpeg(0.5), 'large.jpg')
  } finally {
    await engine.close()
  }
  return seen.splice(0)
}

test('a large JPEG reaches the signals decoded at twice the side they resample to; everyPixel keeps every pixel', async () => {
  const seen: string[] = []
  const sized = recording('sized', seen, 224)
  assert.equal(await framesSeen([sized], seen), ['sized 576x448'])
  assert.equal(await framesSeen([sized], seen, true), ['sized 1800x1400'])
  // With a signal that reads every pixel (a hash, text, codes), every signal gets them (in run order: by name here).
  assert.equal((await framesSeen([sized, recording('every', seen)], seen)).sort(), ['every 1800x1400', 'sized 1800x1400'])
})

test('scores of large JPEGs decoded reduced agree with every pixel decoded (CLIP and the NSFW specialist), verdicts alike', async () => {
  const reduced = createEngine(options())
  const whole = createEngine(options({everyPixel: true}))
  const score = (r: ModerationResult) => new Map(r.labels.map((l) => [l.name, l.score]))
  try {
    for (const share of [0.2, 0.8]) {
      const image = await largeJpeg(share)
      const a = await whole.moderateImage(image, 'large.jpg')
      const b = await reduced.moderateImage(image, 'large.jpg')
      assert.is(b.is_safe, a.is_safe, `red share ${share}`)
      assert.equal(b.violations.map((v) => v.name), a.violations.map((v) => v.name))
      const sa = score(a)
      for (const [name, value] of score(b)) assert.ok(Math.abs(value - (sa.get(name) as number)) < 0.01, `${name}: ${value} reduced, ${sa.get(name)} from every pixel`)
    }
    assert.is((await whole.moderateImage(await largeJpeg(0.8), 'red.jpg')).is_safe, false, 'the mostly red image is flagged')
  } finally {
    await reduced.close()
    await whole.close()
  }
})

test.run()
