// The hash-list signal in the engine: a policy's list flags the listed photo, a re-encoded, resized copy (as stills and in a video) and,
// by its stored pixels, a photo saved with an EXIF orientation; it leaves an unrelated photo alone, stops start-up on a bad list, and does not run without lists.
import {mkdirSync, readFileSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import sharp from 'sharp'
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {buildPolicy, loadPolicyFile} from '../../../../src/lib/config/policy.js'
import {DEFAULT_LIMITS} from '../../../../src/lib/config/settings.js'
import {createEngine, type EngineOptions} from '../../../../src/lib/engine.js'
import {isModError} from '../../../../src/lib/errors.js'
import {decodeImage} from '../../../../src/lib/image/decode.js'
import {hammingDistance, hashFromHex, hashToHex} from '../../../../src/lib/signals/pdq/hash256.js'
import {hashImage} from '../../../../src/lib/signals/pdq/hash-media.js'
import {hashListsOf} from '../../../../src/lib/signals/pdq/policy-section.js'
import {pdqDihedralHashes, pdqHash} from '../../../../src/lib/signals/pdq/pdq.js'
import type {Policy} from '../../../../src/lib/policy/types.js'
import {ROOT, tempDir, TOY_MODEL} from '../../../helpers/cli.js'
import {ffmpeg} from '../../video/helpers.js'
import {signalStates, withoutSpecialist} from '../../../helpers/signals.js'
import {warmCacheDir} from '../../../helpers/warm-cache.js'

const dir = tempDir()
test.after(() => dir.remove())

const PHOTOS = join(ROOT, 'test', 'fixtures', 'photos')
const listed = readFileSync(join(PHOTOS, 'astronaut.jpg'))
const unrelated = readFileSync(join(PHOTOS, 'coffee.jpg'))
let copy: Buffer
let listedHash = ''

/** A policy file in its own folder with its list under lists/ (a path relative to the policy file). */
function writePolicy(name: string, lines: string[], over = ''): string {
  const folder = join(dir.path, name)
  mkdirSync(join(folder, 'lists'), {recursive: true})
  writeFileSync(join(folder, 'lists', 'banned.txt'), lines.join('\n') + '\n')
  const file = join(folder, 'policy.yaml')
  writeFileSync(file, `categories:\n  redness:\n    prompts: ["red"]\nhash_lists:\n  banned:\n    file: lists/banned.txt\n${over}`)
  return file
}

function options(policy: Policy, over: Partial<EngineOptions> = {}): EngineOptions {
  return {preset: 'fast', modelDir: TOY_MODEL, cacheDir: warmCacheDir(join(dir.path, 'cache')), policy, limits: DEFAULT_LIMITS, signals: withoutSpecialist(), ...over}
}

test.before(async () => {
  listedHash = (await hashImage(listed, DEFAULT_LIMITS))[0].hash
  const meta = await sharp(listed).metadata()
  copy = await sharp(listed).resize(Math.round((meta.width as number) / 2)).jpeg({quality: 60}).toBuffer()
})

test('a listed photo and its re-encoded half-size copy are known_bad, named by list, label, note and distance; an unrelated photo is not', async () => {
  const {policy} = await loadPolicyFile(writePolicy('flags', ['# removals', `${listedHash},case-1041,removed after report 88213`]))
  assert.equal(hashListsOf(policy), [{name: 'banned', file: join(dir.path, 'flags', 'lists', 'banned.txt'), category: 'known_bad', distance: 31}])
  await using engine = createEngine(options(policy))
  const same = await engine.moderateImage(listed, 'astronaut.jpg')
  assert.equal(same.violations.find((v) => v.name === 'known_bad'), {name: 'known_bad', confidence: 1, parent: null, threshold: 0.5})
  assert.equal(same.matches, [{list: 'banned', label: 'case-1041', note: 'removed after report 88213', distance: 0, category: 'known_bad'}])
  assert.is(same.is_safe, false)

  const distance = hammingDistance(hashFromHex(listedHash), hashFromHex((await hashImage(copy, DEFAULT_LIMITS))[0].hash))
  assert.ok(distance > 0 && distance <= 31, `distance ${distance}`)
  const resized = await engine.moderateImage(copy, 'copy.jpg')
  assert.equal(resized.matches, [{list: 'banned', label: 'case-1041', note: 'removed after report 88213', distance, category: 'known_bad'}])
  assert.equal(resized.violations.find((v) => v.name === 'known_bad')?.confidence, Number((1 - distance / 64).toFixed(4)))

  const other = await engine.moderateImage(unrelated, 'coffee.jpg')
  assert.is(other.matches, undefined)
  assert.equal(other.labels.find((l) => l.name === 'known_bad'), {name: 'known_bad', score: 0, threshold: 0.5, parent: null, violated: false, origin: 'builtin'})
  assert.is(other.violations.some((v) => v.name === 'known_bad'), false)
  assert.equal(engine.signals(), signalStates({clip: 'loaded', pdq: 'loaded'}))
})

test('a mirrored copy matches through the dihedral variants', async () => {
  const {policy} = await loadPolicyFile(writePolicy('mirror', [`${listedHash},case-7`]))
  await using engine = createEngine(options(policy))
  const mirrored = await engine.moderateImage(await sharp(listed).flop().png().toBuffer(), 'mirrored.png')
  assert.equal(mirrored.matches?.map((m) => [m.label, m.category]), [['case-7', 'known_bad']])
})

test('a copy in a white border or black letterbox bars matches through the trimmed frame, which the whole frame does not', async () => {
  const {policy} = await loadPolicyFile(writePolicy('border', [`${listedHash},case-12`]))
  await using engine = createEngine(options(policy))
  const meta = await sharp(listed).metadata()
  const side = Math.round((meta.width as number) / 10)
  const bars = Math.round((meta.height as number) / 4)
  const framed = [
    await sharp(listed).extend({top: side, bottom: side, left: side, right: side, background: '#ffffff'}).jpeg({quality: 85}).toBuffer(),
    await sharp(listed).extend({top: bars, bottom: bars, background: '#000000'}).jpeg({quality: 85}).toBuffer(),
  ]
  for (const image of framed) {
    const whole = hammingDistance(hashFromHex(listedHash), hashFromHex((await hashImage(image, DEFAULT_LIMITS))[0].hash))
    assert.ok(whole > 31, `the whole frame's hash is ${whole} bits away`)
    const result = await engine.moderateImage(image, 'framed.jpg')
    assert.equal(result.matches?.map((m) => m.label), ['case-12'])
    assert.ok((result.matches?.[0].distance ?? 99) <= 10, `distance ${result.matches?.[0].distance}`)
  }
})

/** The photo drawn in the alpha of white pixels: blank on a light page, the photo in grey on a dark one. */
async function drawnInAlpha(photo: Buffer): Promise<Buffer> {
  const {data, info} = await sharp(photo).greyscale().raw().toBuffer({resolveWithObject: true})
  const rgba = Buffer.alloc(info.width * info.height * 4, 255)
  for (let i = 0; i < info.width * info.height; i++) rgba[4 * i + 3] = data[i]
  return sharp(rgba, {raw: {width: info.width, height: info.height, channels: 4}}).png().toBuffer()
}

test('a picture a dark page shows and a light page hides (drawn in alpha) is matched by the hash of what the dark page shows', async () => {
  const hidden = await drawnInAlpha(listed)
  const shown = await sharp(hidden).flatten({background: '#000000'}).png().toBuffer()
  const {policy} = await loadPolicyFile(writePolicy('alpha', [`${(await hashImage(shown, DEFAULT_LIMITS))[0].hash},case-9`]))
  await using engine = createEngine(options(policy))
  assert.equal((await engine.moderateImage(hidden, 'hidden.png')).matches?.map((m) => [m.label, m.distance]), [['case-9', 0]])
  // mod hash gives the one hash of the light page, as lists are made: here the blank one, which matches nothing.
  const hashes = await hashImage(hidden, DEFAULT_LIMITS)
  assert.equal(hashes.length, 1)
  assert.is(hashes[0].frame, undefined)
})

test("a list of stored-pixel hashes (as Meta's tools make them) flags the photo saved turned with EXIF orientation 3, 6 or 8", async () => {
  // A fine regular texture: the displayed image's rotations and mirrors sample other pixels and miss its stored hash.
  const brick = readFileSync(join(PHOTOS, 'brick.jpg'))
  for (const o of [3, 6, 8]) {
    const file = await sharp(brick).jpeg({quality: 90}).withMetadata({orientation: o}).toBuffer()
    const {data, info} = await sharp(file, {autoOrient: false}).raw().toBuffer({resolveWithObject: true})
    const stored = pdqHash({data, width: info.width, height: info.height}).hash
    const [displayed] = await decodeImage(file, DEFAULT_LIMITS)
    const {hashes} = pdqDihedralHashes(displayed)
    const nearest = Math.min(...Object.values(hashes).map((h) => hammingDistance(h, stored)))
    assert.ok(nearest > 31, `orientation ${o}: the nearest rotation or mirror is ${nearest} bits away`)
    const {policy} = await loadPolicyFile(writePolicy(`stored-${o}`, [`${hashToHex(stored)},case-${o},from Meta's tools`]))
    await using engine = createEngine(options(policy))
    const r = await engine.moderateImage(file, `brick-${o}.jpg`)
    assert.equal(r.matches, [{list: 'banned', label: `case-${o}`, note: "from Meta's tools", distance: 0, category: 'known_bad'}], `orientation ${o}`)
    assert.equal(r.violations.find((v) => v.name === 'known_bad')?.confidence, 1)
  }
})

test('a list may count in a category of the policy: the match raises its score to the confidence', async () => {
  const {policy} = await loadPolicyFile(writePolicy('mapped', [`${listedHash},case-9`], '    category: redness\n    distance: 10\n'))
  assert.equal(policy.categories.map((c) => c.name).includes('known_bad'), false)
  await using engine = createEngine(options(policy))
  const r = await engine.moderateImage(listed, 'astronaut.jpg')
  assert.equal(r.violations.find((v) => v.name === 'redness'), {name: 'redness', confidence: 1, parent: null, threshold: 0.5})
  assert.equal(r.matches, [{list: 'banned', label: 'case-9', note: '', distance: 0, category: 'redness'}])
  // Distance 10 is this list's threshold: the half-size copy is further.
  assert.is((await engine.moderateImage(copy, 'copy.jpg')).matches, undefined)
  // Under --only pdq, the lists alone score redness: 0 without a match.
  await using alone = createEngine(options(policy, {only: 'pdq'}))
  assert.equal((await alone.moderateImage(unrelated, 'coffee.jpg')).labels.map((l) => [l.name, l.score]), [['redness', 0]])
})

test('without a CLIP model the lists still score known_bad, the other categories not evaluated', async () => {
  const {policy} = await loadPolicyFile(writePolicy('clipless', [`${listedHash},case-1`]))
  await using engine = createEngine(options(policy, {modelDir: join(dir.path, 'no-model')}))
  const r = await engine.moderateImage(listed, 'astronaut.jpg')
  assert.equal(r.labels.map((l) => l.name), ['known_bad'])
  assert.equal(r.violations.map((v) => v.name), ['known_bad'])
  assert.equal(r.not_evaluated.length, policy.categories.length - 1)
  assert.equal(engine.signals(), signalStates({clip: 'not_installed', pdq: 'loaded'}))
})

test('a frame below the quality floor is not matched, even against its own hash', async () => {
  const flat = await sharp({create: {width: 64, height: 64, channels: 3, background: {r: 90, g: 90, b: 90}}}).png().toBuffer()
  const [{hash, quality}] = await hashImage(flat, DEFAULT_LIMITS)
  assert.ok(quality < 50, `quality ${quality}`)
  const {policy} = await loadPolicyFile(writePolicy('flat', [`${hash},flat`]))
  await using engine = createEngine(options(policy))
  const r = await engine.moderateImage(flat, 'flat.png')
  assert.is(r.matches, undefined)
  assert.equal(r.labels.find((l) => l.name === 'known_bad')?.score, 0)
})

test('a bad line of a list stops the engine with invalid_config naming the file and the line', async () => {
  const file = writePolicy('bad', ['# ok so far', `${listedHash},fine`, 'not-a-hash,oops'])
  const {policy} = await loadPolicyFile(file)
  const engine = createEngine(options(policy))
  const error = await engine.load().then(() => undefined, (e: unknown) => e)
  assert.ok(isModError(error) && error.code === 'invalid_config', String(error))
  assert.match((error as Error).message, `hash list ${join(dir.path, 'bad', 'lists', 'banned.txt')}: line 3:`)
  await engine.close()
})

test('a missing list stops the engine with invalid_config naming the file', async () => {
  const policy: Policy = {...buildPolicy({categories: [], hash_lists: [{name: 'gone', file: 'gone.txt', category: 'known_bad', distance: 31, line: 1}]}, dir.path)}
  const engine = createEngine(options(policy))
  const error = await engine.load().then(() => undefined, (e: unknown) => e)
  assert.ok(isModError(error) && error.code === 'invalid_config')
  assert.is((error as Error).message, `hash list ${join(dir.path, 'gone.txt')} does not exist`)
  await engine.close()
})

test('without lists the signal does not run and there is no known_bad category', async () => {
  await using engine = createEngine(options(buildPolicy({categories: [{name: 'redness', prompts: ['red']}]})))
  const r = await engine.moderateImage(listed, 'astronaut.jpg')
  assert.equal(engine.signals(), signalStates({clip: 'loaded'}))
  assert.is(r.labels.some((l) => l.name === 'known_bad'), false)
  assert.is(r.matches, undefined)
})

test('--only pdq: the lists alone, no CLIP model opened, the policy narrowed to the categories they feed', async () => {
  const {policy} = await loadPolicyFile(writePolicy('only', [`${listedHash},case-1`]))
  await using engine = createEngine(options(policy, {only: 'pdq'}))
  const r = await engine.moderateImage(listed, 'astronaut.jpg')
  assert.equal(r.labels.map((l) => [l.name, l.score]), [['known_bad', 1]])
  assert.equal(r.not_evaluated, [])
  assert.equal(engine.signals(), signalStates({pdq: 'loaded'}))
  const error = (() => {
    try {
      createEngine(options(buildPolicy(), {only: 'pdq'}))
    } catch (e) {
      return e as Error
    }
  })()
  assert.is(error?.message, 'only the hash-list matcher was asked for, but the policy names no hash list')
})

test('video: every sampled frame of a clip of the listed photo is matched, one known_bad segment naming the entry', async () => {
  const {policy} = await loadPolicyFile(writePolicy('video', [`${listedHash},case-1041`]))
  const clip = join(dir.path, 'clip.mp4')
  const still = join(dir.path, 'still.png')
  writeFileSync(still, await sharp(listed).resize(256).png().toBuffer())
  await ffmpeg('-loop', '1', '-i', still, '-t', '2', '-r', '10', '-c:v', 'mpeg4', '-q:v', '3', '-pix_fmt', 'yuv420p', clip)
  await using engine = createEngine(options(policy))
  const r = await engine.moderateVideo(clip, {source: 'clip.mp4', fps: 2, minFrames: 1, stopOnViolation: false})
  const v = r.violations.find((x) => x.name === 'known_bad')
  assert.equal(v?.segments.map((s) => [s.start, s.frames]), [[0, r.frames_analyzed]])
  assert.ok((v?.max_confidence ?? 0) >= 0.52)
  const [match, ...more] = v?.segments[0].matches ?? []
  assert.equal([match.list, match.label, match.note, more.length], ['banned', 'case-1041', '', 0])
  assert.ok(match.distance <= 31 && match.at >= 0 && match.at < r.duration)
  assert.is(Math.round(1000 * (1 - match.distance / 64)) / 1000, Math.round(1000 * (v?.max_confidence ?? 0)) / 1000)
})

test('video: a clip whose picture is drawn in alpha, blank on a light page, is matched by the hash of what a dark page shows', async () => {
  const hidden = join(dir.path, 'hidden.png')
  writeFileSync(hidden, await drawnInAlpha(await sharp(listed).resize(256).toBuffer()))
  const shown = await sharp(hidden).flatten({background: '#000000'}).png().toBuffer()
  const {policy} = await loadPolicyFile(writePolicy('video-alpha', [`${(await hashImage(shown, DEFAULT_LIMITS))[0].hash},case-12`]))
  const clip = join(dir.path, 'hidden.mov')
  await ffmpeg('-loop', '1', '-i', hidden, '-t', '1', '-r', '10', '-c:v', 'qtrle', clip)
  await using engine = createEngine(options(policy))
  const r = await engine.moderateVideo(clip, {source: 'hidden.mov', fps: 2, minFrames: 1, stopOnViolation: false})
  const v = r.violations.find((x) => x.name === 'known_bad')
  assert.equal(v?.segments.map((s) => [s.start, s.frames, s.matches?.map((m) => m.label)]), [[0, r.frames_analyzed, ['case-12']]])
  assert.ok((v?.segments[0].matches?.[0].distance ?? 64) <= 8)
})

test.run()
