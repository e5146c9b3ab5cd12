import {mkdirSync, readFileSync, writeFileSync} from 'node:fs'
import {dirname, join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import type {Manifest, ModelFile} from '../../src/lib/model/manifest-types.js'
import type {PulledFile} from '../../src/lib/model/pull.js'
import {firstUseWarning} from '../../src/commands/models/pull.js'
import {ROOT, runCli, tempDir} from '../helpers/cli.js'

const dir = tempDir()
test.after(() => dir.remove())

test('models list --json names every preset, its model id and that none is installed in an empty cache', async () => {
  const cache = join(dir.path, 'cache')
  const r = await runCli(['models', 'list', '--json'], {env: {MOD_CACHE_DIR: cache}})
  assert.is(r.code, 0, r.stderr)
  const listing = JSON.parse(r.stdout)
  assert.is(listing.cache_dir, cache)
  assert.equal(
    listing.presets.map((p: {preset: string; model: string; installed: boolean; dir: string}) => [p.preset, p.model, p.installed, p.dir]),
    [
      ['fast', 'clip-vit-base-patch32', false, join(cache, 'fast')],
      ['balanced', 'clip-vit-base-patch16', false, join(cache, 'balanced')],
      ['accurate', 'clip-vit-large-patch14', false, join(cache, 'accurate')],
    ],
  )
})

/** An installed `fast` preset as `models pull` leaves it: the files and a manifest with each file's trust. */
function installFast(cache: string, edit: (f: ModelFile, i: number) => ModelFile = withTrust): void {
  const preset = JSON.parse(readFileSync(join(ROOT, 'models', 'fast.json'), 'utf8')) as Manifest
  const dir = join(cache, 'fast')
  preset.files = preset.files.map((f, i) => {
    mkdirSync(dirname(join(dir, f.path)), {recursive: true})
    writeFileSync(join(dir, f.path), 'x')
    return edit(f, i)
  })
  writeFileSync(join(dir, 'manifest.json'), JSON.stringify(preset))
}

function withTrust(f: ModelFile, i: number): ModelFile {
  return {...f, size: 1, sha256: 'a'.repeat(64), trust: i < 2 ? 'pinned' : 'first_use'}
}

test('models list --json gives, per installed preset, the files verified and those trusted on first use', async () => {
  const cache = join(dir.path, 'installed')
  installFast(cache)
  const r = await runCli(['models', 'list', '--json'], {env: {MOD_CACHE_DIR: cache}})
  assert.is(r.code, 0, r.stderr)
  const [fast, balanced] = JSON.parse(r.stdout).presets
  assert.is(fast.installed, true)
  assert.equal(fast.verified, ['onnx/vision_model.onnx', 'onnx/text_model.onnx'])
  assert.equal(fast.trusted_on_first_use, ['tokenizer.json', 'tokenizer_config.json', 'vocab.json', 'merges.txt', 'config.json', 'preprocessor_config.json'])
  assert.is(balanced.installed, false)
  assert.is(balanced.verified, null)
  assert.is(balanced.trusted_on_first_use, null)
})

test('a preset installed before pulls recorded trust: verified when its hash is the one the preset pins now', async () => {
  const cache = join(dir.path, 'installed-old')
  // The vision encoder keeps the preset's pinned hash; every other file has another one; no trust field anywhere.
  installFast(cache, (f, i) => ({...f, size: 1, sha256: i === 0 ? (f.sha256 as string) : 'a'.repeat(64)}))
  const r = await runCli(['models', 'list', '--json'], {env: {MOD_CACHE_DIR: cache}})
  assert.is(r.code, 0, r.stderr)
  const [fast] = JSON.parse(r.stdout).presets
  assert.equal(fast.verified, ['onnx/vision_model.onnx'])
  assert.is(fast.trusted_on_first_use.length, 7)
})

test('models list shows the counts of verified and first-use files per installed preset', async () => {
  const cache = join(dir.path, 'installed-table')
  installFast(cache)
  const r = await runCli(['models', 'list'], {env: {MOD_CACHE_DIR: cache}})
  assert.is(r.code, 0, r.stderr)
  const [head, fast, balanced] = r.stdout.split('\n').map((line) => line.split(/\s{2,}/))
  assert.equal(head, ['PRESET', 'MODEL', 'INSTALLED', 'SIZE', 'VERIFIED', 'FIRST USE', 'FOLDER'])
  assert.equal(fast.slice(0, 6), ['fast', 'clip-vit-base-patch32', 'yes', '8 B', '2', '6'])
  assert.is(balanced[2], 'no')
  assert.equal(balanced.slice(4, 6), ['-', '-'])
})

test('models pull names each file trusted on first use, with the sha256 it recorded', () => {
  const f: PulledFile = {file: 'vocab.json', size: 3, sha256: 'b'.repeat(64), skipped: false, pinned: false}
  assert.is(
    firstUseWarning(f),
    `warning: vocab.json has no pinned sha256 in the preset; trusted on first use (sha256 ${'b'.repeat(64)}, recorded in manifest.json)`,
  )
})

test('models pull refuses an unknown preset as a usage error', async () => {
  const r = await runCli(['models', 'pull', 'huge'], {env: {MOD_CACHE_DIR: join(dir.path, 'cache')}})
  assert.is(r.code, 2)
  assert.match(r.stderr, /huge/)
})

test.run()
