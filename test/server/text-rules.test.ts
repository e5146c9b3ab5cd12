// The REST API with a policy's text rules: /health names the text reader as loaded, and the single, batch and JSON
// routes answer with the lines read (text) and the rules' hits (text_hits), as the OpenAPI document declares.
import {writeFileSync} from 'node:fs'
import {join} from 'node:path'

import sharp from 'sharp'
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {DEFAULT_LIMITS} from '../../src/lib/config/settings.js'
import {openapiDocument} from '../../src/server/openapi.js'
import type {RgbImage} from '../../src/lib/types.js'
import {longLinePage, memeAndPhoto, renderText} from '../helpers/render-text.js'
import {assertConforms} from './conformance.js'
import {call, form, postJson, startWithPolicy, tempDir, testSettings, type Running} from './harness.js'
import {signalStates} from '../helpers/signals.js'
import {healthWaitsWhile} from '../helpers/health-waits.js'

const dir = tempDir('mod-server-text-rules-')
const settings = testSettings(join(dir.path, 'cache'))
const doc = openapiDocument({version: '1.0.0', apiKey: false, allowUrls: false, limits: DEFAULT_LIMITS})
let server: Running
let sign: Buffer
let plain: Buffer
let images: {meme: Buffer; photo: Buffer}

const png = (img: RgbImage) => sharp(img.data, {raw: {width: img.width, height: img.height, channels: 3}}).png().toBuffer()

test.before(async () => {
  sign = await png(await renderText(700, 300, [{text: 'contact: rentals@lakeside.org', x: 30, y: 150, size: 30, font: 'Liberation Serif'}], '#cfe3f0'))
  plain = await sharp({create: {width: 320, height: 240, channels: 3, background: '#3a7bd5'}}).png().toBuffer()
  images = await memeAndPhoto()
  writeFileSync(join(dir.path, 'banned.txt'), 'zorblax\n')
  writeFileSync(
    join(dir.path, 'policy.yaml'),
    'text:\n  rules:\n    banned:\n      category: hate_symbols\n      words_file: banned.txt\n    contacts:\n      category: contact_info\n      detect: [email, url]\n',
  )
  server = await startWithPolicy(join(dir.path, 'policy.yaml'), settings, {tmpDir: dir.path, threads: 1})
})

test.after(async () => {
  await server.stop()
  dir.remove()
})

const hits = (body: {text_hits: {rule: string; category: string; text: string; detector?: string}[]}) =>
  body.text_hits.map((h) => [h.rule, h.category, h.text, h.detector ?? null])
const email = [['contacts', 'contact_info', 'rentals@lakeside.org', 'email']]

test('GET /health lists the text reader as loaded', async () => {
  assert.equal((await call(`${server.base}/health`)).body.signals, signalStates({clip: 'loaded', text: 'loaded'}))
})

test('POST /v1/moderate: the e-mail address on the sign is contact_info, with the line read and its box', async () => {
  const res = await fetch(`${server.base}/v1/moderate`, {method: 'POST', body: form('file', [{name: 'sign.png', data: sign}])})
  const body = (await assertConforms(doc, res)) as any
  assert.equal(hits(body), email)
  assert.equal(body.text.map((l: {text: string}) => l.text), ['contact: rentals@lakeside.org'])
  assert.is(body.text_truncated, false)
  assert.equal(body.text_hits[0].box, body.text[0].box)
  assert.equal(body.violations.find((v: {name: string}) => v.name === 'contact_info'), {name: 'contact_info', confidence: 1, parent: null, threshold: 0.5})
})

test('POST /v1/moderate/batch: the sign hits, the plain image reads nothing', async () => {
  const r = await call(`${server.base}/v1/moderate/batch`, {
    method: 'POST',
    body: form('files', [
      {name: 'sign.png', data: sign},
      {name: 'plain.png', data: plain},
    ]),
  })
  assert.equal(r.body.results.map(hits), [email, []])
  assert.equal(r.body.results[1].text, [])
})

test('POST /v1/moderate/json: base64 of the sign hits', async () => {
  const r = await postJson(`${server.base}/v1/moderate/json`, {image_base64: sign.toString('base64')})
  assert.equal(hits(r.body), email)
})

test('POST /v1/moderate: a meme with a listed word and a photo with an e-mail address, each hit with its rule, text and box', async () => {
  const answer = async (name: string, data: Buffer) => {
    const res = await fetch(`${server.base}/v1/moderate`, {method: 'POST', body: form('file', [{name, data}])})
    return (await assertConforms(doc, res)) as any
  }
  const meme = await answer('meme.png', images.meme)
  const photo = await answer('photo.jpg', images.photo)
  assert.equal(
    [meme, photo].map((b) => [b.is_safe, b.violations.map((v: {name: string}) => v.name), hits(b)]),
    [
      [false, ['hate_symbols'], [['banned', 'hate_symbols', 'ZORBLAX', null]]],
      [false, ['contact_info'], email],
    ],
  )
  // The boxes of the lines drawn at x 40, baseline y 70 (44 px) in the meme and y 360 (30 px) in the photo.
  const [m, p] = [meme.text_hits[0].box, photo.text_hits[0].box]
  assert.ok(m[0] >= 30 && m[0] <= 60 && m[1] >= 25 && m[1] <= 45 && m[2] >= 380 && m[3] >= 25, `meme box ${m}`)
  assert.ok(p[0] >= 30 && p[0] <= 50 && p[1] >= 320 && p[1] <= 345 && p[2] >= 380 && p[3] >= 25, `photo box ${p}`)
})

test('GET /health answers within a second while a page of long lines is read, which reads its budget and says text_truncated', async () => {
  const page = await png(await longLinePage())
  const {result: answer, waits} = await healthWaitsWhile(server.base, fetch(`${server.base}/v1/moderate`, {method: 'POST', body: form('file', [{name: 'page.png', data: page}])}), 50)
  const body = (await assertConforms(doc, answer)) as any
  assert.is(body.text_truncated, true)
  // The default budget, 32 768 columns, holds 25 lines of 1280: the last rows of the 36 drawn are left unread.
  const tops = body.text.map((l: {box: number[]}) => l.box[1])
  assert.ok(body.text.length >= 20 && Math.max(...tops) < 30 + 32 * 34, `${body.text.length} lines, tops ${tops}`)
  // Asked all along the reading, none waited a second: no recogniser run holds the event loop that long.
  assert.ok(waits.length >= 3 && Math.max(...waits) < 1000, JSON.stringify(waits.map(Math.round)))
})

test.run()
