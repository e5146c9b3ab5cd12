// `mod scan` with a policy's text rules: a sign with an e-mail address is contact_info, its row names the rule and
// the text, --json carries the lines read and the hits; an image without text is safe and reads nothing.
import {writeFileSync} from 'node:fs'
import {join} from 'node:path'

import sharp from 'sharp'
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {runInProcess, tempDir, TOY_MODEL} from '../helpers/cli.js'
import {renderText} from '../helpers/render-text.js'

const dir = tempDir()
const env = {MOD_MODEL_DIR: TOY_MODEL, MOD_CACHE_DIR: join(dir.path, 'cache'), MOD_THREADS: '1'}
const sign = join(dir.path, 'sign.png')
const plain = join(dir.path, 'plain.png')
const policy = join(dir.path, 'policy.yaml')

test.before(async () => {
  const img = await renderText(700, 300, [{text: 'contact: rentals@lakeside.org', x: 30, y: 150, size: 30, font: 'Liberation Serif'}], '#cfe3f0')
  writeFileSync(sign, await sharp(img.data, {raw: {width: img.width, height: img.height, channels: 3}}).png().toBuffer())
  writeFileSync(plain, await sharp({create: {width: 320, height: 240, channels: 3, background: '#3a7bd5'}}).png().toBuffer())
  writeFileSync(policy, 'text:\n  rules:\n    contacts:\n      category: contact_info\n      detect: [email]\n')
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

test.run()
