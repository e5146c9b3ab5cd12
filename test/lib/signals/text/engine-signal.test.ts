// The text signal in the engine: a policy's word list and contact rule flag rendered images, naming the rule,
// the text and its box in the uploaded image's pixels; without text rules no session of the reader is created, and a
// video's frames are read (segments then carry the text and hits) only when the policy asks. The tests that only
// moderate under the default text policy share one engine (results do not depend on what it read before).
import {writeFileSync} from 'node:fs'
import {join, relative} from 'node:path'

import sharp from 'sharp'
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {buildPolicy, loadPolicyFile} from '../../../../src/lib/config/policy.js'
import {DEFAULT_LIMITS} from '../../../../src/lib/config/settings.js'
import {createEngine, type Engine, type EngineOptions} from '../../../../src/lib/engine.js'
import {sessionActivity} from '../../../../src/lib/model/inference-thread.js'
import type {Policy} from '../../../../src/lib/policy/types.js'
import type {RgbImage} from '../../../../src/lib/types.js'
import {ROOT, tempDir, TOY_MODEL} from '../../../helpers/cli.js'
import {exifTiff, LONG, orientationEntry, withApp1} from '../../../helpers/exif.js'
import {animatedGif, renderText, wordPage} from '../../../helpers/render-text.js'
import {ffmpeg} from '../../video/helpers.js'
import {signalStates, withoutSpecialist} from '../../../helpers/signals.js'
import {warmCacheDir} from '../../../helpers/warm-cache.js'

const dir = tempDir()
/** One engine on the default text policy, for the tests that only moderate with it: opening its models is what costs. */
let shared: Engine | undefined
const textEngine = async (): Promise<Engine> => (shared ??= createEngine(options(await textPolicy())))
test.after(async () => {
  await shared?.close()
  dir.remove()
})

function options(policy: Policy): EngineOptions {
  return {preset: 'fast', modelDir: TOY_MODEL, cacheDir: warmCacheDir(join(dir.path, 'cache')), policy, limits: DEFAULT_LIMITS, threads: 1, signals: withoutSpecialist()}
}

const png = (img: RgbImage) => sharp(img.data, {raw: {width: img.width, height: img.height, channels: 3}}).png().toBuffer()

/** A sign with an e-mail address, as a PNG and as a one-second clip of it at 10 frames a second. */
const emailSign = {png: Buffer.alloc(0), clip: join(dir.path, 'sign.mp4')}
test.before(async () => {
  emailSign.png = await png(await renderText(640, 360, [{text: 'write to rentals@lakeside.org', x: 30, y: 180, size: 32, font: 'DejaVu Sans'}], '#cfe3f0'))
  const still = join(dir.path, 'sign.png')
  writeFileSync(still, emailSign.png)
  await ffmpeg('-loop', '1', '-i', still, '-t', '1', '-r', '10', '-c:v', 'mpeg4', '-q:v', '2', '-pix_fmt', 'yuv420p', emailSign.clip)
})

async function textPolicy(video = false, budget?: number): Promise<Policy> {
  writeFileSync(join(dir.path, 'banned.txt'), '# test list\nzorblax\n')
  const file = join(dir.path, 'policy.yaml')
  writeFileSync(
    file,
    ['text:', `  video: ${video}`, ...(budget === undefined ? [] : [`  budget: ${budget}`]), '  rules:', '    banned:', '      category: hate_symbols', '      words_file: banned.txt', '    contacts:', '      category: contact_info', '      detect: [email]', ''].join('\n'),
  )
  return (await loadPolicyFile(file)).policy
}

test('a listed word on a meme and an e-mail address on a sign are violations, with the rule, the text and the box', async () => {
  const policy = await textPolicy()
  assert.equal(
    policy.categories.filter((c) => (c.signals.text ?? 0) > 0).map((c) => [c.name, c.signals]),
    [
      ['hate_symbols', {clip: 1, text: 1}],
      ['contact_info', {text: 1}],
    ],
  )
  const engine = await textEngine()
  // A white border: the boxes come out in the uploaded image's pixels.
  const meme = await renderText(600, 400, [
    {text: 'WHEN THE Z0RBLAX', x: 40, y: 70, size: 44, font: 'DejaVu Sans', fill: 'black'},
    {text: 'hits different', x: 160, y: 360, size: 36, font: 'DejaVu Sans'},
  ], '#ffd24a')
  const bordered = await sharp(await png(meme)).extend({top: 50, left: 80, bottom: 50, right: 80, background: 'white'}).png().toBuffer()
  const r = await engine.moderateImage(bordered, 'meme.png')
  assert.equal(engine.signals(), signalStates({clip: 'loaded', text: 'loaded'}))
  assert.equal(r.text?.map((l) => l.text), ['WHEN THE ZORBLAX', 'hits different'])
  assert.equal(r.text_hits?.map((h) => [h.rule, h.category, h.text]), [['banned', 'hate_symbols', 'ZORBLAX']])
  assert.equal(r.text_hits?.[0].box, r.text?.[0].box)
  const [x, y, w, h] = r.text?.[0].box as number[]
  // The line starts at x = 40 and has its baseline at y = 70 in the meme, drawn 80 and 50 pixels into the upload.
  assert.ok(x >= 110 && x <= 125 && y >= 75 && y <= 90 && w >= 380 && w <= 520 && h >= 30 && h <= 60, `box ${x},${y},${w},${h}`)
  assert.equal(r.violations.find((v) => v.name === 'hate_symbols'), {name: 'hate_symbols', confidence: 1, parent: null, threshold: 0.5})
  assert.is(r.text_truncated, false)
  assert.equal(r.labels.find((l) => l.name === 'contact_info')?.score, 0)
  assert.is(r.violations.some((v) => v.name === 'contact_info'), false)
  assert.is(r.is_safe, false)

  const sign = await renderText(700, 300, [{text: 'contact: rentals@lakeside.org', x: 30, y: 150, size: 30, font: 'Liberation Serif'}], '#cfe3f0')
  const s = await engine.moderateImage(await png(sign), 'sign.png')
  assert.equal(s.text_hits?.map((h) => [h.rule, h.category, h.text, h.detector]), [['contacts', 'contact_info', 'rentals@lakeside.org', 'email']])
  assert.equal(s.violations.find((v) => v.name === 'contact_info'), {name: 'contact_info', confidence: 1, parent: null, threshold: 0.5})
})

test('large words on a plain poster are read whole, also tilted: the frame is read untrimmed, with the margin around them', async () => {
  const engine = await textEngine()
  for (const size of [56, 96]) {
    const poster = await renderText(900, 300, [{text: 'ZORBLAX', x: 60, y: 150 + size / 3, size, font: 'DejaVu Sans', fill: 'black'}], '#ffffff')
    const upright = await engine.moderateImage(await png(poster), 'poster.png')
    assert.equal(upright.text_hits?.map((h) => [h.rule, h.text]), [['banned', 'ZORBLAX']], `${size} px`)
    const tilted = await sharp(await png(poster)).rotate(10, {background: '#ffffff'}).png().toBuffer()
    assert.equal((await engine.moderateImage(tilted, 'tilted.png')).text_hits?.map((h) => [h.rule, h.text]), [['banned', 'ZORBLAX']], `${size} px, 10 degrees`)
  }
})

test('an address stored upside down under a LONG orientation tag, shown as stored by browsers and turned by libvips, is read in the turned view; its box in the shown one', async () => {
  const engine = await textEngine()
  const sign = await renderText(640, 360, [{text: 'write to rentals@lakeside.org', x: 30, y: 100, size: 32, font: 'DejaVu Sans'}], '#cfe3f0')
  const upsideDown = await sharp(await png(sign)).rotate(180).jpeg({quality: 95}).toBuffer()
  assert.equal((await engine.moderateImage(upsideDown, 'down.jpg')).text_hits, [], 'upside down, the reader reads nothing')
  const upright = await engine.moderateImage(await sharp(await png(sign)).jpeg({quality: 95}).toBuffer(), 'up.jpg')
  const tagged = await engine.moderateImage(withApp1(upsideDown, {tiff: exifTiff([orientationEntry(3, LONG)])}), 'tagged.jpg')
  assert.equal(tagged.text_hits?.map((h) => [h.rule, h.text]), [['contacts', 'rentals@lakeside.org']])
  assert.equal(tagged.violations.map((v) => v.name), ['contact_info'])
  // The upright box, turned a half within 640 x 360: where the address is in the image as shown (as stored).
  const [x, y, w, h] = upright.text_hits?.[0].box as number[]
  const [tx, ty, tw, th] = tagged.text_hits?.[0].box as number[]
  const off = Math.max(Math.abs(tx - (640 - x - w)), Math.abs(ty - (360 - y - h)), Math.abs(tw - w), Math.abs(th - h))
  assert.ok(off <= 3, `box ${tagged.text_hits?.[0].box} against the upright ${upright.text_hits?.[0].box} turned`)
})

test('an address drawn in the alpha of white pixels, blank on a light page and white on black on a dark one, is read once', async () => {
  const engine = await textEngine()
  const sign = await renderText(700, 300, [{text: 'contact: rentals@lakeside.org', x: 30, y: 150, size: 30, font: 'Liberation Serif', fill: 'black'}], '#ffffff')
  const rgba = Buffer.alloc(sign.width * sign.height * 4, 255)
  for (let i = 0; i < sign.width * sign.height; i++) rgba[4 * i + 3] = 255 - sign.data[3 * i]
  const hidden = await sharp(rgba, {raw: {width: sign.width, height: sign.height, channels: 4}}).png().toBuffer()
  const r = await engine.moderateImage(hidden, 'hidden.png')
  assert.equal(r.text_hits?.map((h) => [h.rule, h.text]), [['contacts', 'rentals@lakeside.org']])
  assert.is(r.text?.length, 1)
  assert.equal(r.violations.find((v) => v.name === 'contact_info')?.confidence, 1)
  // An opaque sign with an alpha channel is one view: its line read once as well.
  const opaque = await sharp(await png(sign)).ensureAlpha().png().toBuffer()
  assert.equal((await engine.moderateImage(opaque, 'opaque.png')).text?.map((l) => l.text), ['contact: rentals@lakeside.org'])
})

test("an animation of 8 pages of 200 words reads 3 of its frames, sharing the policy's text.budget, and says text_truncated", async () => {
  await using engine = createEngine(options(await textPolicy(false, 3 * 1280)))
  const pages = []
  for (let f = 0; f < 8; f++) pages.push(await wordPage(f))
  const gif = await animatedGif(pages)
  const sessions = await ocrSessions(async () => {
    const r = await engine.moderateImage(gif, 'pages.gif')
    assert.is(r.text_truncated, true)
    // Each frame read has a third of the budget, 1280 columns: 14 to 17 short words (the default reads all 600).
    assert.ok(r.text !== undefined && r.text.length >= 36 && r.text.length <= 51, `${r.text?.length} lines`)
  })
  // One detector run per frame read.
  assert.is(sessions['models/ocr/det.onnx'], 3)
})

test('an animation reads the frame on screen longest: a listed word shown 10 s of every 10.3 s, at index 4 of 9 frames', async () => {
  const engine = await textEngine()
  const frames = []
  for (let f = 0; f < 9; f++) {
    const text = f === 4 ? 'WHEN THE ZORBLAX' : `frame number ${f}`
    frames.push(await renderText(600, 200, [{text, x: 40, y: 110, size: 40, font: 'DejaVu Sans'}], '#ffd24a'))
  }
  const r = await engine.moderateImage(await animatedGif(frames, [40, 40, 40, 40, 10_000, 40, 40, 40, 40]), 'flash.gif')
  // The frames scored are 0-2 and 4-8; of them, evenly spaced by position, the text signal would read 0, 5 and 8.
  assert.equal(r.text_hits?.map((h) => [h.rule, h.text]), [['banned', 'ZORBLAX']])
  assert.is(r.text?.length, 3)
  // Each frame read whole, but 5 of the 8 scored were not read: text was left unread, and the result says so.
  assert.is(r.text_truncated, true)
})

test("the engine's textBudget (MOD_TEXT_BUDGET) wins over the policy's text.budget", async () => {
  const page = await png(await wordPage())
  const lines = async (policyBudget: number, textBudget?: number) => {
    await using engine = createEngine({...options(await textPolicy(false, policyBudget)), textBudget})
    const r = await engine.moderateImage(page, 'page.png')
    assert.is(r.text_truncated, true)
    return r.text?.length ?? 0
  }
  const [policy, variable] = [await lines(1280), await lines(1280, 2560)]
  assert.ok(policy >= 10 && policy <= 18 && variable >= 2 * policy - 2, `${policy} lines with text.budget 1280, ${variable} with textBudget 2560`)
})

test('an image without text reads no lines and hits nothing', async () => {
  const engine = await textEngine()
  const plain = await sharp({create: {width: 320, height: 240, channels: 3, background: '#3a7bd5'}}).png().toBuffer()
  const r = await engine.moderateImage(plain, 'plain.png')
  assert.equal([r.text, r.text_hits, r.text_truncated], [[], [], false])
  assert.equal(r.labels.find((l) => l.name === 'contact_info')?.score, 0)
})

test('without text rules the reader is not opened, there is no contact_info and results carry no text', async () => {
  await using engine = createEngine(options(buildPolicy()))
  const sign = await renderText(700, 300, [{text: 'contact: rentals@lakeside.org', x: 30, y: 150, size: 30, font: 'Liberation Serif'}])
  const r = await engine.moderateImage(await png(sign), 'sign.png')
  assert.equal(engine.signals(), signalStates({clip: 'loaded'}))
  assert.equal([r.text, r.text_hits], [undefined, undefined])
  assert.is(r.labels.some((l) => l.name === 'contact_info'), false)
})

test("a video's frames are read only when the policy asks (text: {video: true})", async () => {
  const moderate = async (video: boolean) => {
    await using engine = createEngine(options(await textPolicy(video)))
    return await engine.moderateVideo(emailSign.clip, {source: 'sign.mp4', fps: 2, minFrames: 1, stopOnViolation: false})
  }
  const unread = await moderate(false)
  assert.is(unread.violations.some((v) => v.name === 'contact_info'), false)
  assert.is(JSON.stringify(unread).includes('text'), false)
  const read = await moderate(true)
  const contact = read.violations.find((v) => v.name === 'contact_info')
  assert.equal(
    contact?.segments.map((g) => [g.frames, g.max_confidence, g.text?.map((l) => l.text), g.text_hits?.map((h) => [h.rule, h.text, h.detector]), g.text_truncated]),
    [[2, 1, ['write to rentals@lakeside.org'], [['contacts', 'rentals@lakeside.org', 'email']], false]],
  )
  const [x, y] = contact?.segments[0].text_hits?.[0].box as number[]
  // The line's baseline is at y = 180, 32 px high: its box (with the detector's margin) starts above it.
  assert.ok(x >= 15 && x <= 40 && y >= 110 && y <= 160, `box at ${x},${y}`)
  // Segments of the other signals' categories list what was read too, but no hit of their own.
  assert.ok(read.violations.filter((v) => v.name !== 'contact_info').every((v) => v.segments.every((g) => g.text_hits?.length === 0 && g.text?.length === 1)))
})

/**
 * The runs of the text reader's models (models/ocr/) per model file, for each one a session was opened from since
 * `ocrSessions` started: every session of the process runs in the inference thread, which counts what each did
 * (sessionActivity), so nothing of the reader can load or run unseen.
 */
let since = sessionActivity()

function runs(): Record<string, number> {
  const out: Record<string, number> = {}
  for (const [path, now] of sessionActivity()) {
    const name = relative(ROOT, path)
    const before = since.get(path) ?? {opened: 0, runs: 0}
    if (name.startsWith('models/ocr/') && now.opened > before.opened) out[name] = now.runs - before.runs
  }
  return out
}

async function ocrSessions(fn: () => Promise<void>): Promise<Record<string, number>> {
  since = sessionActivity()
  await fn()
  return runs()
}

test('without text rules no session of the reader is created, for images and videos alike', async () => {
  const opened = await ocrSessions(async () => {
    await using engine = createEngine(options(buildPolicy()))
    await engine.moderateImage(emailSign.png, 'sign.png')
    await engine.moderateVideo(emailSign.clip, {source: 'unread.mp4', fps: 2, minFrames: 1, stopOnViolation: false})
  })
  assert.equal(opened, {})
})

test("with text rules a video's frames are not read unless the policy asks; an image's are", async () => {
  let afterVideo = {}
  const total = await ocrSessions(async () => {
    await using engine = createEngine(options(await textPolicy(false)))
    const r = await engine.moderateVideo(emailSign.clip, {source: 'rules.mp4', fps: 2, minFrames: 1, stopOnViolation: false})
    assert.is(r.frames_analyzed, 2)
    afterVideo = runs()
    await engine.moderateImage(emailSign.png, 'sign.png')
  })
  assert.equal(afterVideo, {'models/ocr/det.onnx': 0, 'models/ocr/rec.onnx': 0})
  // One frame: one detector run, its one line in one recogniser batch.
  assert.equal(total, {'models/ocr/det.onnx': 1, 'models/ocr/rec.onnx': 1})
})

test.run()
