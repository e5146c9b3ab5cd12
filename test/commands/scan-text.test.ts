// `mod scan` with a policy's text rules: a sign with an e-mail address is contact_info, its row names the rule and
// the text, --json carries the lines read and the hits; an image without text is safe and reads nothing.
import {writeFileSync} from 'node:fs'
import {join} from 'node:path'

import sharp from 'sharp'
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {runInProcess, tempDir, TOY_MODEL} from '../helpers/cli.js'
import {memeAndPhoto, renderText} from '../helpers/render-text.js'
import {warmCacheDir} from '../helpers/warm-cache.js'

const dir = tempDir()
const env = {MOD_MODEL_DIR: TOY_MODEL, MOD_CACHE_DIR: warmCacheDir(join(dir.path, 'cache')), MOD_THREADS: '1'}
const sign = join(dir.path, 'sign.png')
const plain = join(dir.path, 'plain.png')
const policy = join(dir.path, 'policy.yaml')
const meme = join(dir.path, 'meme.png')
const photo = join(dir.path, 'photo.jpg')
const lists = join(dir.path, 'lists.yaml')

test.before(async () => {
  const img = await renderText(700, 300, [{text: 'contact: rentals@lakeside.org', x: 30, y: 150, size: 30, font: 'Liberation Serif'}], '#cfe3f0')
  writeFileSync(sign, await sharp(img.data, {raw: {width: img.width, height: img.height, channels: 3}}).png().toBuffer())
  writeFileSync(plain, await sharp({create: {width: 320, height: 240, channels: 3, background: '#3a7bd5'}}).png().toBuffer())
  writeFileSync(policy, 'text:\n  rules:\n    contacts:\n      category: contact_info\n      detect: [email]\n')
  const images = await memeAndPhoto()
  writeFileSync(meme, images.meme)
  writeFileSync(photo, images.photo)
  writeFileSync(join(dir.path, 'banned.txt'), '# one entry a line\nzorblax\n')
  writeFileSync(lists, 'text:\n  rules:\n    banned:\n      category: hate_symbols\n      words_file: banned.txt\n    contacts:\n      category: contact_info\n      detect: [email, phone, url, handle]\n')
})

test.after(() => dir.remove())

test('mod scan applies the text rules: text and text_hits in --json, the rule and text in the table row', async () => {
  const r = await runInProcess(['scan', sign, plain, '--config', policy, '--json'], {env})
  const results = JSON.parse(r.stdout) as {text: {text: string}[]; text_hits: {rule: string; text: string; detector: string}[]; is_safe: boolean}[]
  assert.equal(
    results.map((x) => [x.is_safe, x.text.map((l) => l.text), x.text_hits.map((h) => [h.rule, h.text, h.detector])]),
    [
      [false, ['contact: rentals@lakeside.org'], [['contacts', 'rentals@lakeside.org', 'email']]],
      [true, [], []],
    ],
  )
  assert.is(r.code, 1)
  const table = await runInProcess(['scan', sign, '--config', policy], {env})
  assert.match(table.stdout, 'contact_info 1.00>=0.5 (text rule contacts: "rentals@lakeside.org")')
  assert.is(table.code, 1)
})

test('a word list and contact_info: a meme with the listed word and a photo with an e-mail address, with rule, text and box', async () => {
  const r = await runInProcess(['scan', meme, photo, '--config', lists, '--json'], {env})
  type Hit = {rule: string; category: string; text: string; box: number[]; detector?: string}
  const results = JSON.parse(r.stdout) as {source: string; is_safe: boolean; violations: {name: string}[]; text: {text: string; box: number[]}[]; text_hits: Hit[]}[]
  assert.equal(
    results.map((x) => [x.is_safe, x.violations.map((v) => v.name), x.text_hits.map((h) => [h.rule, h.category, h.text, h.detector ?? null])]),
    [
      [false, ['hate_symbols'], [['banned', 'hate_symbols', 'ZORBLAX', null]]],
      [false, ['contact_info'], [['contacts', 'contact_info', 'rentals@lakeside.org', 'email']]],
    ],
  )
  // Each hit's box is its line's: around the caption drawn at x 40, baseline y 70 (44 px) and y 360 (30 px).
  const [memeHit, photoHit] = results.map((x) => x.text_hits[0].box)
  assert.equal(memeHit, results[0].text.find((l) => l.text.includes('ZORBLAX'))?.box)
  assert.ok(memeHit[0] >= 30 && memeHit[0] <= 60 && memeHit[1] >= 25 && memeHit[1] <= 45 && memeHit[2] >= 380 && memeHit[3] >= 25, `meme box ${memeHit}`)
  assert.ok(photoHit[0] >= 30 && photoHit[0] <= 50 && photoHit[1] >= 320 && photoHit[1] <= 345 && photoHit[2] >= 380 && photoHit[3] >= 25, `photo box ${photoHit}`)
  assert.is(r.code, 1)
})

test.run()
