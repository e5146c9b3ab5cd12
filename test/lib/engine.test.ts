import {writeFileSync} from 'node:fs'
import {join} from 'node:path'

import sharp, {type Sharp} from 'sharp'
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {buildPolicy, validatePolicyText} from '../../src/lib/config/policy.js'
import {DEFAULT_LIMITS} from '../../src/lib/config/settings.js'
import {createEngine, type Engine, type EngineOptions} from '../../src/lib/engine.js'
import type {ModerationResult} from '../../src/lib/types.js'
import {solidPng, tempDir, TOY_MODEL} from '../helpers/cli.js'
import {warmCacheDir} from '../helpers/warm-cache.js'

const dir = tempDir()
test.after(() => dir.remove())

function policyFrom(yaml: string) {
  const {problems, file} = validatePolicyText(yaml)
  assert.equal(problems, [])
  return buildPolicy(file)
}

const REDNESS = 'categories:\n  redness:\n    prompts: ["red"]\n'

function engine(overrides: Partial<EngineOptions> = {}): Engine {
  return createEngine({
    preset: 'fast',
    modelDir: TOY_MODEL,
    cacheDir: warmCacheDir(join(dir.path, 'cache')),
    policy: policyFrom(REDNESS),
    limits: DEFAULT_LIMITS,
    ...overrides,
  })
}

const score = (r: ModerationResult, name: string): number => r.labels.find((l) => l.name === name)?.score ?? NaN

/** A small red square inside wide blue padding: blue dominates the channel means unless the padding is trimmed. */
async function paddedRed(): Promise<Buffer> {
  const red = await sharp({create: {width: 40, height: 40, channels: 3, background: {r: 255, g: 0, b: 0}}}).png().toBuffer()
  return sharp({create: {width: 200, height: 200, channels: 3, background: {r: 0, g: 0, b: 255}}})
    .composite([{input: red, left: 80, top: 80}])
    .png()
    .toBuffer()
}

test('trim_borders (default) crops uniform padding before scoring; trim_borders: false keeps it', async () => {
  const image = await paddedRed()
  const trimmed = engine()
  const kept = engine({policy: policyFrom(`trim_borders: false\n${REDNESS}`)})
  try {
    const a = await trimmed.moderateImage(image, 'padded.png')
    const b = await kept.moderateImage(image, 'padded.png')
    assert.ok(score(a, 'redness') > 0.99, String(score(a, 'redness')))
    assert.is(a.is_safe, false)
    assert.ok(score(b, 'redness') < 0.01, String(score(b, 'redness')))
    assert.is(b.is_safe, true)
  } finally {
    await trimmed.close()
    await kept.close()
  }
})

/** 32x32 frames of solid colours, stacked as libvips writes an animation or a multi-page file. */
function stacked(colours: number[][]): Sharp {
  const raw = Buffer.concat(colours.map(([r, g, b]) => Buffer.alloc(32 * 32 * 3).map((_, i) => [r, g, b][i % 3])))
  return sharp(raw, {raw: {width: 32, height: 32 * colours.length, channels: 3, pageHeight: 32}})
}

/** A file whose only red frame or page must make it a redness violation. */
async function assertRedSomewhere(file: Buffer, name: string): Promise<void> {
  const e = engine()
  try {
    const r = await e.moderateImage(file, name)
    assert.equal(r.violations.map((v) => v.name), ['redness'])
    assert.ok(score(r, 'redness') > 0.99)
  } finally {
    await e.close()
  }
}

test('an animated GIF is scored on its frames and each label keeps its maximum', async () => {
  const gif = await stacked([[0, 0, 255], [0, 0, 255], [255, 0, 0], [0, 0, 255]])
    .gif({delay: [100, 100, 100, 100], loop: 0})
    .toBuffer()
  await assertRedSomewhere(gif, 'anim.gif')
})

test('a slideshow of 40 other pictures is scored on every one: a red picture where display time does not look is found', async () => {
  // Blue and cyan blocks (never red to the toy model), a seeded pattern per frame, so that every frame is another
  // picture; frame 13 is not among the 8 chosen by display time, and with 8 more frames scored it was left out.
  let seed = 11
  const cyan = (): boolean => ((seed = (seed * 1103515245 + 12345) % 2147483648) >> 16) % 2 === 1
  const frames = Array.from({length: 40}, (_, f) => {
    const blocks = Array.from({length: 64}, () => (f === 13 ? [255, 0, 0] : cyan() ? [0, 255, 255] : [0, 0, 255]))
    return Buffer.concat(Array.from({length: 32 * 32}, (_, i) => Buffer.from(blocks[Math.floor(i / 128) * 8 + Math.floor((i % 32) / 4)])))
  })
  const gif = await sharp(Buffer.concat(frames), {raw: {width: 32, height: 32 * 40, channels: 3, pageHeight: 32}})
    .gif({delay: frames.map(() => 500), loop: 0})
    .toBuffer()
  await assertRedSomewhere(gif, 'slideshow.gif')
})

test('a multi-page TIFF is scored on its pages: a harmless first page does not hide the second', async () => {
  await assertRedSomewhere(await stacked([[0, 0, 255], [255, 0, 0]]).tiff().toBuffer(), 'pages.tif')
})

test('moderateMany keeps input order across batches and reports unreadable inputs as entries', async () => {
  const red = await solidPng(255, 0, 0)
  const blue = await solidPng(0, 0, 255)
  const inputs = Array.from({length: 7}, (_, i) => ({
    source: `item-${i}`,
    read: async () => (i === 3 ? Buffer.from('not an image') : i % 2 === 0 ? red : blue),
  }))
  const e = engine({batchSize: 2})
  try {
    const out = []
    for await (const item of e.moderateMany(inputs)) out.push(item)
    assert.equal(out.map((x) => x.source), inputs.map((x) => x.source))
    assert.equal(out.map((x) => ('error' in x ? x.error.code : x.is_safe)), [false, true, false, 'unsupported_media', false, true, false])
  } finally {
    await e.close()
  }
})

test('a trained head adds its labels (origin head) and blends one that shares a category name', async () => {
  const head = join(dir.path, 'head.json')
  const weights = (r: number, g: number, b: number) => [r, g, b, 0, 0, 0, 0, 0]
  writeFileSync(
    head,
    JSON.stringify({
      format: 'mod-head',
      version: 1,
      model_id: 'toy-clip',
      embedding_size: 8,
      activation: 'sigmoid',
      labels: [
        {name: 'blueness', weights: weights(0, 0, 20), bias: 0, threshold: 0.5},
        {name: 'redness', weights: weights(0, 0, 20), bias: 0, blend: 1},
      ],
    }),
  )
  const e = engine({headPath: head})
  try {
    const blue = await e.moderateImage(await solidPng(0, 0, 255), 'blue.png')
    const blueness = blue.labels.find((l) => l.name === 'blueness')
    assert.is(blueness?.origin, 'head')
    assert.ok((blueness?.score ?? 0) > 0.99)
    // blend 1: the head alone decides redness, and this head was trained to call blue "redness".
    assert.equal(blue.violations.map((v) => v.name).sort(), ['blueness', 'redness'])
    const red = await e.moderateImage(await solidPng(255, 0, 0), 'red.png')
    assert.ok(score(red, 'redness') < 0.01)
    assert.is(red.labels.find((l) => l.name === 'redness')?.origin, 'custom')
    const listing = await e.categories()
    assert.equal(listing.categories.filter((c) => c.origin === 'head').map((c) => c.name), ['blueness'])
  } finally {
    await e.close()
  }
})

test('a head trained for another model is refused with a clear error', async () => {
  const head = join(dir.path, 'other-head.json')
  writeFileSync(
    head,
    JSON.stringify({format: 'mod-head', version: 1, model_id: 'clip-vit-base-patch32', embedding_size: 512, activation: 'sigmoid', labels: [{name: 'x', weights: Array(512).fill(0), bias: 0}]}),
  )
  const e = engine({headPath: head})
  try {
    const err = await e.load().then(() => undefined, (x: unknown) => x as {code: string; message: string})
    assert.is(err?.code, 'invalid_config')
    assert.match(err?.message ?? '', 'clip-vit-base-patch32')
    assert.match(err?.message ?? '', 'toy-clip')
  } finally {
    await e.close()
  }
})

test('the model loads on first use and isLoaded says so', async () => {
  const e = engine()
  try {
    assert.is(e.isLoaded(), false)
    await e.moderateImage(await solidPng(0, 255, 0), 'green.png')
    assert.is(e.isLoaded(), true)
  } finally {
    await e.close()
  }
  assert.is(e.isLoaded(), false)
})

test.run()
