// The composition root: scan and eval open the same signals from the same configuration, so that eval scores an
// image exactly as scan does, with every signal on (CLIP, the specialist, NudeNet where its file is here, text
// rules, codes rules, a hash list), for a still image and for an animation whose frames differ; and a second eval, from the
// feature cache, still runs the signals that keep no features.
import {mkdirSync, readFileSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import sharp from 'sharp'
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {engineFromConfig, modelOptions} from '../../src/lib/compose.js'
import {loadConfig} from '../../src/lib/config/load.js'
import {DEFAULT_LIMITS} from '../../src/lib/config/settings.js'
import {collectFeatures, isSampleError} from '../../src/lib/eval/collect.js'
import {openDataset} from '../../src/lib/eval/dataset.js'
import {openFeatureCache} from '../../src/lib/eval/feature-cache.js'
import {openDatasetScoring} from '../../src/lib/eval/features.js'
import {hashImage} from '../../src/lib/signals/pdq/hash-media.js'
import {nudenetDir} from '../../src/lib/signals/nudenet/manifest.js'
import type {ModerationResult} from '../../src/lib/types.js'
import {ROOT, tempDir, TOY_MODEL} from '../helpers/cli.js'
import {installedNudenetFixture} from '../helpers/nudenet.js'
import {skip} from '../helpers/skip.js'
import {animatedGif, memeAndPhoto, renderText} from '../helpers/render-text.js'
import {drawCode, printOnPhoto} from './signals/codes/draw.js'

const dir = tempDir()
test.after(() => dir.remove())

const cacheDir = join(dir.path, 'cache')
const dataset = join(dir.path, 'dataset')
const photo = (name: string) => readFileSync(join(ROOT, 'test', 'fixtures', 'photos', name))
const raw = (i: {data: Buffer; width: number; height: number}) => sharp(i.data, {raw: {width: i.width, height: i.height, channels: 3}})

/** The images, by file name: the meme in the dataset's `hate_symbols` folder, the others in `safe`. */
const images = new Map<string, Buffer>()
const nudenet = await installedNudenetFixture(nudenetDir(cacheDir))
// Without NudeNet's model the comparison below runs with every other signal; its NudeNet part counts as skipped.
if (nudenet.missing !== undefined) skip('eval scores every image as scan does with NudeNet on too', nudenet.missing)

test.before(async () => {
  const {meme} = await memeAndPhoto()
  const red = await renderText(320, 240, [{text: 'plain', x: 20, y: 60, size: 30}], '#e02020')
  const words = await renderText(320, 240, [{text: 'ZORBLAX', x: 20, y: 130, size: 44}], '#ffffff')
  images.set('astronaut.jpg', photo('astronaut.jpg'))
  images.set('coffee.jpg', photo('coffee.jpg'))
  images.set('meme.png', meme)
  const qr = await printOnPhoto('horse.jpg', 400, 300, [{code: await drawCode('QRCode', 'https://evil.example/x', 3), left: 40, top: 40}])
  images.set('qr.png', await raw(qr.image).png().toBuffer())
  // Frames that differ: the listed word only in the second, red only in the first.
  images.set('frames.gif', await animatedGif([red, words]))
  for (const [name, data] of images) {
    const folder = join(dataset, name === 'meme.png' ? 'hate_symbols' : 'safe')
    mkdirSync(folder, {recursive: true})
    writeFileSync(join(folder, name), data)
  }
  // The coffee photo is on the hash list.
  const listed = (await hashImage(images.get('coffee.jpg') as Buffer, DEFAULT_LIMITS))[0].hash
  writeFileSync(join(dir.path, 'banned.txt'), `${listed},case-1\n`)
  writeFileSync(
    join(dir.path, 'policy.yaml'),
    [
      'categories:',
      '  redness:',
      '    prompts: ["red"]',
      'hash_lists:',
      '  banned:',
      '    file: banned.txt',
      'text:',
      '  rules:',
      '    words:',
      '      category: hate_symbols',
      '      words: [zorblax]',
      'codes:',
      '  rules:',
      '    links:',
      '      category: contact_info',
      '      domains: {deny: [evil.example]}',
      '',
    ].join('\n'),
  )
})

const config = () => loadConfig({modelDir: TOY_MODEL, cacheDir, config: join(dir.path, 'policy.yaml')}, {}, dir.path)

test('eval scores every image as scan does with every signal on, also from the feature cache', async () => {
  const c = await config()
  const engine = engineFromConfig(c)
  const source = await openDatasetScoring(modelOptions(c), {policy: c.policy, requireClip: true})
  try {
    const scanned = new Map<string, ModerationResult>()
    for (const [name, data] of images) scanned.set(name, await engine.moderateImage(data, name))
    const open = engine.signals()
    assert.equal(
      Object.keys(open).filter((s) => open[s] === 'loaded'),
      ['clip', 'nsfw', ...(nudenet.dir ? ['nudenet'] : []), 'text', 'codes', 'pdq'],
    )
    if (nudenet.dir) assert.ok(source.key.includes('nudenet-320n'), source.key)
    // The rules and the list did their part in scan: what eval must reproduce.
    const violated = (name: string) => scanned.get(name)?.violations.map((v) => v.name) ?? []
    assert.ok(violated('meme.png').includes('hate_symbols'))
    assert.ok(violated('frames.gif').includes('hate_symbols') && violated('frames.gif').includes('redness'), violated('frames.gif').join())
    assert.ok(violated('coffee.jpg').includes('known_bad'))
    assert.ok(violated('qr.png').includes('contact_info'))

    const cache = openFeatureCache(cacheDir, source.key)
    for (const round of ['first run', 'from the cache']) {
      const ds = await openDataset(dataset, {known: new Set(c.policy.categories.map((x) => x.name))})
      let seen = 0
      for await (const s of collectFeatures(ds, source, cache, {maxBytes: DEFAULT_LIMITS.maxBytes})) {
        if (isSampleError(s)) throw new Error(`${s.source}: ${s.error.message}`)
        const name = s.source.replace(/^[^/]+\//, '')
        const scores = source.score(s.features)
        const expected = scanned.get(name) as ModerationResult
        const evaluated = Object.fromEntries(source.labels.map((l, i) => [l.name, scores[i]]))
        assert.equal(evaluated, Object.fromEntries(expected.labels.map((l) => [l.name, l.score])), `${name}, ${round}`)
        seen++
      }
      assert.is(seen, images.size)
    }
    // The second round read every image's features from the cache: only the first embedded them.
    assert.is(source.imagesEmbedded(), images.size)
  } finally {
    await source.dispose()
    await engine.close()
  }
})

test.run()
