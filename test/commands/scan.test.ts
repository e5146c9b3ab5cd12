import {cpSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {runCli, runInProcess, solidPng, tempDir, TOY_MODEL, writeRednessPolicy} from '../helpers/cli.js'
import {warmCacheDir} from '../helpers/warm-cache.js'

const dir = tempDir()
const env = {MOD_MODEL_DIR: TOY_MODEL, MOD_CACHE_DIR: warmCacheDir(join(dir.path, 'cache'))}
let policy = ''
let red = ''
let blue = ''
let corrupt = ''
let folder = ''

test.before(async () => {
  policy = writeRednessPolicy(dir.path)
  red = join(dir.path, 'red.png')
  blue = join(dir.path, 'blue.png')
  corrupt = join(dir.path, 'corrupt.png')
  writeFileSync(red, await solidPng(255, 0, 0))
  writeFileSync(blue, await solidPng(0, 0, 255))
  const png = await solidPng(0, 255, 0)
  writeFileSync(corrupt, png.subarray(0, 60))
  folder = join(dir.path, 'folder')
  mkdirSync(join(folder, 'nested', 'deeper'), {recursive: true})
  writeFileSync(join(folder, 'a-blue.png'), await solidPng(0, 0, 255))
  writeFileSync(join(folder, 'nested', 'b-red.png'), await solidPng(255, 0, 0))
  writeFileSync(join(folder, 'nested', 'deeper', 'c-blue.jpg'), await solidPng(0, 0, 200))
  writeFileSync(join(folder, 'notes.txt'), 'not an image')
})

test.after(() => dir.remove())

test('the optimised graph cached in MOD_CACHE_DIR/ort is rebuilt when corrupt: the scan still works and the file is rewritten', async () => {
  const cacheDir = join(dir.path, 'graph-cache')
  const first = await runInProcess(['scan', red, '--config', policy, '--json'], {env: {...env, MOD_CACHE_DIR: cacheDir}})
  assert.is(first.code, 1, first.stderr)
  const [entry] = readdirSync(join(cacheDir, 'ort'))
  const saved = join(cacheDir, 'ort', entry, 'model.onnx')
  const good = readFileSync(saved)
  writeFileSync(saved, 'garbage')
  const again = await runInProcess(['scan', red, '--config', policy, '--json'], {env: {...env, MOD_CACHE_DIR: cacheDir}})
  assert.is(again.code, 1, again.stderr)
  assert.equal(JSON.parse(again.stdout), JSON.parse(first.stdout))
  assert.equal(readFileSync(saved), good)
})

test('a custom redness category flags a red PNG: exit 1 and a redness violation', async () => {
  const r = await runInProcess(['scan', red, '--config', policy, '--json'], {env})
  assert.is(r.code, 1, r.stderr)
  const [result] = JSON.parse(r.stdout)
  assert.is(result.source, red)
  assert.is(result.is_safe, false)
  assert.equal(result.violations.map((v: {name: string}) => v.name), ['redness'])
  assert.is(result.violations[0].threshold, 0.5)
  assert.is(result.violations[0].parent, null)
  assert.ok(result.violations[0].confidence > 0.99)
  assert.is(result.labels[0].name, 'redness')
  assert.is(result.labels[0].origin, 'custom')
})

test('a blue PNG alone is safe: exit 0', async () => {
  const r = await runInProcess(['scan', blue, '--config', policy, '--json'], {env})
  assert.is(r.code, 0, r.stderr)
  const [result] = JSON.parse(r.stdout)
  assert.is(result.is_safe, true)
  assert.equal(result.violations, [])
  assert.is(result.labels.length, 12)
  const redness = result.labels.find((l: {name: string}) => l.name === 'redness')
  assert.ok(redness.score < 0.01)
})

test('--ndjson prints one parseable result per line, in input order', async () => {
  const r = await runInProcess(['scan', blue, red, '--config', policy, '--ndjson'], {env})
  assert.is(r.code, 1, r.stderr)
  const lines = r.stdout.trim().split('\n').map((l) => JSON.parse(l))
  assert.equal(lines.map((l) => [l.source, l.is_safe]), [[blue, true], [red, false]])
})

test('a corrupt file is an error entry and the other files are still scored', async () => {
  const r = await runInProcess(['scan', blue, corrupt, red, '--config', policy, '--json'], {env})
  assert.is(r.code, 1, r.stderr)
  const results = JSON.parse(r.stdout)
  assert.is(results.length, 3)
  assert.is(results[0].is_safe, true)
  assert.is(results[1].source, corrupt)
  assert.ok(['unreadable_image', 'unsupported_media'].includes(results[1].error.code), results[1].error.code)
  assert.type(results[1].error.message, 'string')
  assert.is(results[2].is_safe, false)
})

test('an input that cannot be scanned makes an otherwise safe run exit 2', async () => {
  const r = await runInProcess(['scan', blue, corrupt, '--config', policy, '--ndjson'], {env})
  assert.is(r.code, 2, r.stderr)
  assert.is(r.stdout.trim().split('\n').length, 2)
})

test('folders are walked recursively in name order, picking up images only', async () => {
  const r = await runInProcess(['scan', folder, '--config', policy, '--json'], {env})
  assert.is(r.code, 1, r.stderr)
  const results = JSON.parse(r.stdout)
  assert.equal(
    results.map((x: {source: string}) => x.source),
    [join(folder, 'a-blue.png'), join(folder, 'nested', 'b-red.png'), join(folder, 'nested', 'deeper', 'c-blue.jpg')],
  )
  assert.equal(results.map((x: {is_safe: boolean}) => x.is_safe), [true, false, true])
})

test('- reads one image from stdin', async () => {
  const r = await runCli(['scan', '-', '--config', policy, '--json'], {env, stdin: await solidPng(250, 10, 10)})
  assert.is(r.code, 1, r.stderr)
  const [result] = JSON.parse(r.stdout)
  assert.is(result.source, '-')
  assert.is(result.violations[0].name, 'redness')
})

test('the table output names each file and its verdict, with a summary on stderr', async () => {
  const r = await runInProcess(['scan', blue, red, '--config', policy], {env})
  assert.is(r.code, 1)
  const [first, second] = r.stdout.trim().split('\n')
  assert.match(first, /^SAFE\s+.*blue\.png/)
  assert.match(second, /^UNSAFE\s+.*red\.png\s+redness 1\.00>=0\.5/)
  assert.match(r.stderr, /2 scanned: 1 safe, 1 unsafe, 0 errors/)
})

const NSFW_FED = ['nudity', 'sexual_activity', 'suggestive']
const CLIP_ONLY = ['violence', 'gore', 'weapons', 'hate_symbols', 'drugs', 'self_harm', 'alcohol', 'tobacco']

test('with no CLIP model pulled, the embedded specialist scores its categories and one line names the rest', async () => {
  const r = await runInProcess(['scan', blue, '--json'], {env: {MOD_CACHE_DIR: warmCacheDir(join(dir.path, 'empty-cache'))}})
  assert.is(r.code, 0, r.stderr)
  assert.is(
    r.stderr,
    `mod: not evaluated: ${CLIP_ONLY.join(', ')} (no CLIP model installed; run \`mod models pull fast\` to score them; --strict makes this exit 2)\n` +
      '1 scanned: 1 safe, 0 unsafe, 0 errors (3 of 11 categories checked; run `mod models pull fast` for the rest)\n',
  )
  const [result] = JSON.parse(r.stdout)
  assert.equal(result.labels.map((l: {name: string}) => l.name).sort(), [...NSFW_FED].sort())
  assert.equal(result.not_evaluated, CLIP_ONLY)
  assert.is(result.is_safe, true)
})

test('--strict makes a category that was not evaluated an exit 2 before scanning; --only nsfw asks for the specialist alone', async () => {
  const cache = {MOD_CACHE_DIR: warmCacheDir(join(dir.path, 'empty-cache'))}
  const strict = await runInProcess(['scan', blue, '--strict', '--ndjson'], {env: cache})
  assert.is(strict.code, 2)
  assert.is(strict.stdout, '')
  assert.match(strict.stderr, `mod: not evaluated: ${CLIP_ONLY.join(', ')} (`)
  const only = await runInProcess(['scan', blue, '--only', 'nsfw', '--strict', '--ndjson'], {env: cache})
  assert.is(only.code, 0, only.stderr)
  assert.is(only.stderr, '1 scanned: 1 safe, 0 unsafe, 0 errors\n')
  const result = JSON.parse(only.stdout)
  assert.equal(result.labels.map((l: {name: string}) => l.name).sort(), [...NSFW_FED].sort())
  assert.equal(result.not_evaluated, [])
})

test('a policy left with no category to check is refused, not passed as safe', async () => {
  const cache = {MOD_CACHE_DIR: warmCacheDir(join(dir.path, 'empty-cache'))}
  const offNsfw = ['--disable', 'nudity', '--disable', 'sexual_activity', '--disable', 'suggestive']
  const noClip = await runInProcess(['scan', blue, ...offNsfw], {env: cache})
  assert.is(noClip.code, 2)
  assert.is(noClip.stdout, '')
  assert.match(noClip.stderr, /^mod: model_missing: none of the policy's categories \(violence, gore, .*tobacco\) can be checked: .*run `mod models pull fast`/)
  const nothingLeft = await runInProcess(['scan', blue, '--only', 'nsfw', ...offNsfw], {env: cache})
  assert.is(nothingLeft.code, 2)
  assert.is(nothingLeft.stderr, 'mod: invalid_config: the policy has no category left to check\n')
})

test('a partial check says so in the table: SAFE rows and the summary count the categories checked', async () => {
  const r = await runInProcess(['scan', blue], {env: {MOD_CACHE_DIR: warmCacheDir(join(dir.path, 'empty-cache'))}})
  assert.is(r.code, 0, r.stderr)
  assert.match(r.stdout, /^SAFE\s+\S*blue\.png\s+\(3 of 11 categories checked; highest: \w+ \d\.\d\d\)\n$/)
  const summary = r.stderr.trim().split('\n').at(-1)
  assert.is(summary, '1 scanned: 1 safe, 0 unsafe, 0 errors (3 of 11 categories checked; run `mod models pull fast` for the rest)')
})

test('a full check adds no coverage note', async () => {
  const r = await runInProcess(['scan', blue, '--config', policy], {env})
  assert.is(r.code, 0, r.stderr)
  assert.not.match(r.stdout, /categories checked/)
  assert.is(r.stderr, '1 scanned: 1 safe, 0 unsafe, 0 errors\n')
})

test('--only nsfw with the toy CLIP model installed still leaves CLIP out: the same specialist scores', async () => {
  const withClip = await runInProcess(['scan', red, '--only', 'nsfw', '--ndjson', '--config', policy], {env})
  const without = await runInProcess(['scan', red, '--only', 'nsfw', '--ndjson'], {env: {MOD_CACHE_DIR: warmCacheDir(join(dir.path, 'empty-cache'))}})
  assert.is(withClip.code, 0, withClip.stderr)
  assert.equal(JSON.parse(withClip.stdout).labels, JSON.parse(without.stdout).labels)
})

test('a --model-dir that holds no model exits 2 saying so', async () => {
  const empty = join(dir.path, 'no-model-here')
  mkdirSync(empty, {recursive: true})
  const r = await runInProcess(['scan', blue, '--model-dir', empty], {env: {MOD_CACHE_DIR: warmCacheDir(join(dir.path, 'empty-cache'))}})
  assert.is(r.code, 2)
  assert.match(r.stderr, /^mod: model_missing: .*no-model-here/)
  assert.is(r.stdout, '')
})

test('an invalid policy exits 2 with the line of the problem', async () => {
  const bad = join(dir.path, 'bad.yaml')
  writeFileSync(bad, 'categories:\n  weapons:\n    threshold: 7\n')
  const r = await runInProcess(['scan', blue, '--config', bad], {env})
  assert.is(r.code, 2)
  assert.match(r.stderr, /bad\.yaml:3/)
})

test('MOD_MAX_BYTES refuses a larger file as an error entry without reading it', async () => {
  const r = await runInProcess(['scan', red, '--config', policy, '--json'], {env: {...env, MOD_MAX_BYTES: '100'}})
  assert.is(r.code, 2)
  const [result] = JSON.parse(r.stdout)
  assert.is(result.error.code, 'payload_too_large')
})

test('--precision int8 runs the model\'s int8 encoders, with a prompt cache of their own', async () => {
  const model = join(dir.path, 'toy-with-int8')
  cpSync(TOY_MODEL, model, {recursive: true})
  const manifest = JSON.parse(readFileSync(join(model, 'manifest.json'), 'utf8'))
  const variant: Record<string, unknown> = {}
  for (const f of manifest.files.filter((x: {role: string}) => x.role.endsWith('_encoder'))) {
    const path = f.path.replace('.onnx', '_quantized.onnx')
    cpSync(join(model, f.path), join(model, path))
    variant[f.role] = {...f, path}
  }
  manifest.variants = {int8: variant}
  writeFileSync(join(model, 'manifest.json'), JSON.stringify(manifest))
  const cache = join(dir.path, 'int8-cache')
  const r = await runInProcess(['scan', red, '--config', policy, '--json', '--precision', 'int8'], {env: {MOD_MODEL_DIR: model, MOD_CACHE_DIR: cache}})
  assert.is(r.code, 1, r.stderr)
  assert.is(JSON.parse(r.stdout)[0].violations[0].name, 'redness')
  assert.ok(existsSync(join(cache, 'prompts', 'toy-clip-int8')))
  assert.not.ok(existsSync(join(cache, 'prompts', 'toy-clip')))
  const none = await runInProcess(['scan', red, '--precision', 'fp16'], {env: {MOD_MODEL_DIR: model, MOD_CACHE_DIR: cache}})
  assert.is(none.code, 2)
  assert.match(none.stderr, /offers no fp16 encoders/)
})

test('categories --json lists the defaults plus the custom category with parents and thresholds', async () => {
  const table = await runInProcess(['categories', '--config', policy], {env})
  assert.match(table.stdout, /^nudity\s+threshold 0\.50\s+builtin\s+clip\+nsfw\s+evaluated by clip\+nsfw$/m)
  assert.match(table.stdout, /^weapons\s+threshold 0\.50\s+builtin\s+clip\s+parent violence\s+evaluated by clip$/m)
  const r = await runInProcess(['categories', '--json', '--config', policy], {env})
  assert.is(r.code, 0, r.stderr)
  const listing = JSON.parse(r.stdout)
  assert.is(listing.preset, 'fast')
  assert.is(listing.model, 'toy-clip')
  const names = listing.categories.map((c: {name: string}) => c.name)
  for (const n of ['nudity', 'sexual_activity', 'suggestive', 'violence', 'gore', 'weapons', 'hate_symbols', 'drugs', 'self_harm', 'alcohol', 'tobacco', 'redness']) {
    assert.ok(names.includes(n), n)
  }
  const weapons = listing.categories.find((c: {name: string}) => c.name === 'weapons')
  assert.is(weapons.parent, 'violence')
  assert.is(weapons.origin, 'builtin')
  assert.ok(weapons.prompts.length >= 3)
  const redness = listing.categories.find((c: {name: string}) => c.name === 'redness')
  assert.equal(redness.prompts, ['red'])
  assert.is(redness.origin, 'custom')
})

test.run()
