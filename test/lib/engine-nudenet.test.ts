// The NudeNet detector in the engine, with stand-ins for both models (fixed specialist probabilities, fixed
// detections): its rule applied to the specialist's scores, its regions in the uploaded image's pixels with the
// border trim undone, and nothing of it where it is not installed.
import {join} from 'node:path'

import sharp from 'sharp'
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {buildPolicy} from '../../src/lib/config/policy.js'
import {DEFAULT_LIMITS} from '../../src/lib/config/settings.js'
import {createEngine, type EngineOptions} from '../../src/lib/engine.js'
import type {Detection} from '../../src/lib/signals/nudenet/decode.js'
import type {NudenetDetector} from '../../src/lib/signals/nudenet/detector.js'
import type {NudenetOpener} from '../../src/lib/signals/nudenet/signal.js'
import type {ModerationResult, RgbImage} from '../../src/lib/types.js'
import {tempDir} from '../helpers/cli.js'
import {signalStates, standInSpecialist, withNsfw, withNudenet} from '../helpers/signals.js'
import {warmCacheDir} from '../helpers/warm-cache.js'

const dir = tempDir()
test.after(() => dir.remove())

/** Porn 0.97 on every view: the specialist alone scores nudity 0.97 and sexual_activity 0.94, above its sure bar (0.9). */
const PORN = [0.015, 0, 0.015, 0.97, 0]
/** Porn 0.7: nudity 0.7, below the sure bar. */
const LIKELY = [0.15, 0, 0.15, 0.7, 0]

const specialist = (probabilities: number[]) => standInSpecialist(() => probabilities).runner

/** A detector that finds `found` (in the frame it is given) and records the size of each frame it prepared. */
function detector(found: Detection[]): {det: NudenetDetector; sizes: [number, number][]} {
  const sizes: [number, number][] = []
  const det: NudenetDetector = {
    manifest: {kind: 'detector', id: 'stand-in', licence: 'AGPL-3.0', files: [{path: 'x.onnx', role: 'detector'}]},
    prepare: (f: RgbImage) => {
      sizes.push([f.width, f.height])
      return {pixels: new Float32Array(0), width: f.width, height: f.height}
    },
    detect: async (inputs) => inputs.map(() => found.map((d) => ({...d, box: [...d.box] as Detection['box']}))),
    close: async () => {},
  }
  return {det, sizes}
}

/** The specialist answering `probabilities`, the detector opened by `nudenet` and listed from `installedIn`. */
function options(probabilities: number[], nudenet: NudenetOpener, installedIn?: string): EngineOptions {
  return {
    preset: 'fast',
    modelDir: join(dir.path, 'no-clip'),
    cacheDir: warmCacheDir(join(dir.path, 'cache')),
    policy: buildPolicy(),
    limits: DEFAULT_LIMITS,
    only: 'nsfw',
    signals: withNudenet(nudenet, installedIn, withNsfw(async () => specialist(probabilities))),
  }
}

/** A 200 x 100 grey picture with 20-pixel black bars at the top and left: trimmed to 180 x 80 at (20, 20). */
async function barred(): Promise<Buffer> {
  const width = 200
  const height = 100
  const data = Buffer.alloc(width * height * 3)
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      if (x >= 20 && y >= 20) data.fill(90 + ((x * 7 + y * 13) % 120), 3 * (y * width + x), 3 * (y * width + x) + 3)
    }
  }
  return sharp(data, {raw: {width, height, channels: 3}}).png().toBuffer()
}

const scores = (r: ModerationResult) => Object.fromEntries(r.labels.map((l) => [l.name, Math.round(l.score * 1000) / 1000]))

test('regions come back in the uploaded image\'s pixels: the detector sees the trimmed frame, its boxes move by the trim', async () => {
  const {det, sizes} = detector([
    {label: 'FEMALE_BREAST_EXPOSED', score: 0.7, box: [10, 5, 30, 20]},
    {label: 'FACE_FEMALE', score: 0.9, box: [50, 5, 20, 20]},
    {label: 'BELLY_EXPOSED', score: 0.8, box: [0, 0, 40, 40]},
  ])
  const e = createEngine(options(LIKELY, async () => det))
  try {
    const r = await e.moderateImage(await barred(), 'barred.png')
    assert.equal(sizes, [[180, 80]])
    assert.equal(e.signals(), signalStates({nsfw: 'loaded', nudenet: 'loaded'}))
    assert.equal(r.regions, [
      {label: 'BELLY_EXPOSED', score: 0.8, box: [20, 20, 40, 40]},
      {label: 'FEMALE_BREAST_EXPOSED', score: 0.7, box: [30, 25, 30, 20]},
    ])
    // nudity: the specialist's 0.7 confirmed (agreement of 0.7 is 0.8); sexual_activity 2 * 0.7 - 1 = 0.4.
    assert.equal([scores(r).nudity, scores(r).sexual_activity], [0.7, 0.4])
    assert.equal(r.violations.map((v) => v.name), ['nudity'])
  } finally {
    await e.close()
  }
})

/** A 300 x 240 white picture of a textured disc of radius 100 in its middle: trimmed to about the disc's square. */
async function figure(): Promise<Buffer> {
  const width = 300
  const height = 240
  const data = Buffer.alloc(width * height * 3, 255)
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      if ((x - 150) ** 2 + (y - 120) ** 2 <= 100 ** 2) data.fill(40 + ((x * 7 + y * 13) % 120), 3 * (y * width + x), 3 * (y * width + x) + 3)
    }
  }
  return sharp(data, {raw: {width, height, channels: 3}}).png().toBuffer()
}

test('the specialist sees the frame without the bars that end at a sharp edge, a plain background around a figure kept; the detector sees the trimmed one', async () => {
  const {det, sizes} = detector([])
  const specialist = standInSpecialist(() => LIKELY)
  const e = createEngine({...options(LIKELY, async () => det), signals: withNudenet(async () => det, undefined, withNsfw(async () => specialist.runner))})
  try {
    await e.moderateImage(await barred(), 'barred.png')
    await e.moderateImage(await figure(), 'figure.png')
    assert.equal(specialist.frames, [[180, 80], [300, 240]])
    assert.equal(sizes[0], [180, 80])
    assert.ok(sizes[1][0] <= 201 && sizes[1][1] <= 201, `the detector's frame: ${sizes[1]}`)
  } finally {
    await e.close()
  }
})

test('with trim_borders off the specialist sees the bars too', async () => {
  const {det} = detector([])
  const specialist = standInSpecialist(() => LIKELY)
  const signals = withNudenet(async () => det, undefined, withNsfw(async () => specialist.runner))
  const e = createEngine({...options(LIKELY, async () => det), policy: buildPolicy({categories: [], trim_borders: false}), signals})
  try {
    await e.moderateImage(await barred(), 'barred.png')
    assert.equal(specialist.frames, [[200, 100]])
  } finally {
    await e.close()
  }
})

test('without an exposed part the detector vetoes the specialist below its sure bar, and leaves a sure score standing where it saw a person', async () => {
  const face = {label: 'FACE_MALE' as const, score: 0.8, box: [0, 0, 5, 5] as Detection['box']}
  const likely = createEngine(options(LIKELY, async () => detector([face]).det))
  const sure = createEngine(options(PORN, async () => detector([face]).det))
  const nobody = createEngine(options(PORN, async () => detector([]).det))
  try {
    const a = await likely.moderateImage(await barred(), 'a.png')
    assert.equal([scores(a).nudity, scores(a).sexual_activity, a.is_safe, a.regions], [0, 0, true, []])
    const b = await sure.moderateImage(await barred(), 'b.png')
    assert.equal([scores(b).nudity, b.violations.map((v) => v.name), b.regions], [0.97, ['nudity', 'sexual_activity'], []])
    // No part of a person at all (a close-up of skin): a photo is not nudity on the specialist's word alone.
    const c = await nobody.moderateImage(await barred(), 'c.png')
    assert.equal([scores(c).nudity, c.is_safe], [0, true])
  } finally {
    await likely.close()
    await sure.close()
    await nobody.close()
  }
})

test('not installed: the specialist scores alone and results carry no regions', async () => {
  const e = createEngine(options(LIKELY, async () => undefined))
  try {
    const r = await e.moderateImage(await barred(), 'c.png')
    assert.is(scores(r).nudity, 0.7)
    assert.is('regions' in r, false)
    assert.equal(e.signals(), signalStates({nsfw: 'loaded', nudenet: 'not_installed'}))
  } finally {
    await e.close()
  }
})

test('the category listing names nudenet for the family once a pulled copy is in its folder', async () => {
  const {mkdir, writeFile} = await import('node:fs/promises')
  const installed = join(dir.path, 'installed-nudenet')
  await mkdir(installed, {recursive: true})
  const manifest = {kind: 'detector', id: 'nudenet-320n', licence: 'AGPL-3.0', files: [{path: '320n.onnx', role: 'detector', size: 1, sha256: 'a'.repeat(64)}]}
  await writeFile(join(installed, 'manifest.json'), JSON.stringify(manifest))
  const signalsOf = async (nudenetDir: string) => {
    const e = createEngine(options(LIKELY, async () => undefined, nudenetDir))
    const listing = await e.categories()
    await e.close()
    return Object.fromEntries(listing.categories.map((c) => [c.name, c.signals]))
  }
  assert.equal(await signalsOf(installed), {nudity: ['nsfw', 'nudenet'], sexual_activity: ['nsfw', 'nudenet'], suggestive: ['nsfw', 'nudenet']})
  assert.equal(await signalsOf(join(dir.path, 'nowhere')), {nudity: ['nsfw'], sexual_activity: ['nsfw'], suggestive: ['nsfw']})
})

test.run()
