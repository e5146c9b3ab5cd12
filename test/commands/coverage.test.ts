// What a verdict covers, said the same way everywhere: --strict fails before the first image when categories
// cannot be checked, and a category that only a text rule feeds is "checked by text only", never passed off as
// looked for in the picture (CLI rows and summary, --summary --json, mod categories, /health, /v1/categories).
import {mkdirSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {engineFromFlags} from '../../src/cli/engine.js'
import {runInProcess, solidPng, tempDir} from '../helpers/cli.js'
import {start, testSettings} from '../server/harness.js'
import {colourClip} from '../lib/video/helpers.js'

const dir = tempDir('mod-coverage-')
// No CLIP model in this cache: the NSFW specialist scores its 3 categories, the others are not evaluated.
const cache = join(dir.path, 'cache')
const env = {MOD_CACHE_DIR: cache}
const textPolicy = join(dir.path, 'text.yaml')
let blues = ''
let clip = ''

test.before(async () => {
  blues = join(dir.path, 'blues')
  mkdirSync(blues)
  for (let i = 0; i < 3; i++) writeFileSync(join(blues, `${i}.png`), await solidPng(0, 0, 255, 32, 32))
  writeFileSync(join(dir.path, 'banned.txt'), 'zorblax\n')
  writeFileSync(textPolicy, 'text:\n  rules:\n    banned:\n      category: hate_symbols\n      words_file: banned.txt\n')
  clip = await colourClip(join(dir.path, 'blue.mp4'), ['blue'], 1)
})

test.after(() => dir.remove())

const NOT_EVALUATED = /^mod: not evaluated: violence, gore, weapons, hate_symbols, drugs, self_harm, alcohol, tobacco \(no CLIP model installed; .*--strict makes this exit 2\)\n$/

test('--strict refuses before the first image: exit 2, the not-evaluated line, nothing on stdout, no summary', async () => {
  for (const format of ['--json', '--ndjson']) {
    const r = await runInProcess(['scan', blues, '--strict', format], {env})
    assert.is(r.code, 2, format)
    assert.is(r.stdout, '', format)
    assert.match(r.stderr, NOT_EVALUATED)
  }
})

test('scan-video --strict refuses before decoding: exit 2, nothing on stdout', async () => {
  const r = await runInProcess(['scan-video', clip, '--strict', '--json'], {env})
  assert.is(r.code, 2)
  assert.is(r.stdout, '')
  assert.match(r.stderr, NOT_EVALUATED)
})

const TEXT_ONLY = '4 of 11 categories checked, 1 by text only: hate_symbols'

test('a category fed only by a word list is "by text only" in the rows, the summary and --summary --json', async () => {
  const r = await runInProcess(['scan', join(blues, '0.png'), '--config', textPolicy], {env})
  assert.is(r.code, 0, r.stderr)
  assert.match(r.stdout, new RegExp(`^SAFE\\s+\\S+0\\.png\\s+\\(${TEXT_ONLY}; highest: `))
  assert.is(r.stderr.trim().split('\n').at(-1), `1 scanned: 1 safe, 0 unsafe, 0 errors (${TEXT_ONLY}; run \`mod models pull fast\` for the rest)`)
  const summary = await runInProcess(['scan', join(blues, '0.png'), '--config', textPolicy, '--summary', '--json'], {env})
  const counts = JSON.parse(summary.stdout)
  assert.equal(counts.text_only, ['hate_symbols'])
  assert.not.ok(counts.not_evaluated.includes('hate_symbols'))
})

test('mod categories and the server say the same: /health, /ready and /v1/categories carry text_only', async () => {
  const listed = await runInProcess(['categories', '--config', textPolicy], {env})
  assert.is(listed.code, 0, listed.stderr)
  assert.match(listed.stdout, /^preset fast, model [\w-]+; 4 of 11 categories evaluated, 1 by text only: hate_symbols\n/)
  const json = JSON.parse((await runInProcess(['categories', '--config', textPolicy, '--json'], {env})).stdout)
  const expected = {evaluated: 4, total: 11, not_evaluated: ['violence', 'gore', 'weapons', 'drugs', 'self_harm', 'alcohol', 'tobacco'], text_only: ['hate_symbols']}
  assert.equal(json.coverage, expected)
  const {engine} = await engineFromFlags({config: textPolicy, 'cache-dir': cache}, {})
  await engine.load()
  const server = await start(engine, testSettings(cache), {tmpDir: dir.path})
  try {
    for (const path of ['/health', '/ready', '/v1/categories']) {
      const body = await (await fetch(`${server.base}${path}`)).json()
      assert.equal(body.coverage, expected, path)
    }
  } finally {
    await server.stop()
    await engine.close()
  }
})

test.run()
