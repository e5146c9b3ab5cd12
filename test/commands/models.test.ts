import {mkdirSync, readFileSync, writeFileSync} from 'node:fs'
import {createServer} from 'node:http'
import type {AddressInfo} from 'node:net'
import {dirname, join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import type {Manifest, ModelFile} from '../../src/lib/model/manifest-types.js'
import type {PulledFile} from '../../src/lib/model/pull.js'
import {firstUseWarning} from '../../src/commands/models/pull.js'
import {ROOT, runCli, runInProcess, tempDir, TOY_MODEL} from '../helpers/cli.js'
import {onlyThroughProxy} from '../helpers/proxy-env.js'

const dir = tempDir()
test.after(() => dir.remove())

/** stderr without listr2's step lines ([STARTED] …, [FAILED] …, as its plain renderer prints them without a terminal). */
function own(stderr: string): string {
  return stderr
    .split('\n')
    .filter((l) => !/^\[(STARTED|COMPLETED|FAILED|SKIPPED|TITLE|RETRY|ROLLBACK)\]/.test(l))
    .join('\n')
}

test('models list --json names every preset, its model id and that none is installed in an empty cache', async () => {
  const cache = join(dir.path, 'cache')
  const r = await runInProcess(['models', 'list', '--json'], {env: {MOD_CACHE_DIR: cache}})
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

test('models list shows each preset\'s download size', async () => {
  const r = await runInProcess(['models', 'list', '--json'], {env: {MOD_CACHE_DIR: join(dir.path, 'cache')}})
  for (const p of JSON.parse(r.stdout).presets) assert.ok(p.download_size === null || p.download_size > 0, JSON.stringify(p))
  const table = await runInProcess(['models', 'list'], {env: {MOD_CACHE_DIR: join(dir.path, 'cache')}})
  assert.match(table.stdout, /^PRESET\s+MODEL\s+INSTALLED\s+SIZE\s+DOWNLOAD\s+VERIFIED\s+FIRST USE\s+FOLDER/)
  // The sum of the manifest's files where it gives every size, and "unknown" where it does not.
  assert.match(table.stdout, /\nfast\s+clip-vit-base-patch32\s+no\s+581\.13 MiB\s+581\.13 MiB\s/)
  assert.match(table.stdout, /\naccurate\s+clip-vit-large-patch14\s+no\s+unknown\s+unknown\s/)
})

test('models list names the model folder set by --model-dir or MOD_MODEL_DIR, and one missing is an error (exit 2), not a line saying it is used', async () => {
  const env = {MOD_CACHE_DIR: join(dir.path, 'cache')}
  const missing = join(dir.path, 'no-such-model')
  for (const args of [['--model-dir', missing], []]) {
    const r = await runInProcess(['models', 'list', ...args], {env: {...env, ...(args.length ? {} : {MOD_MODEL_DIR: missing})}})
    assert.is(r.code, 2, args.join(' '))
    assert.match(r.stdout, /^PRESET\s+MODEL/)
    assert.is(r.stderr, `mod: model_missing: the model folder ${missing} (MOD_MODEL_DIR, --model-dir) does not exist\n`)
  }
  const toy = await runInProcess(['models', 'list', '--model-dir', TOY_MODEL], {env})
  assert.is(toy.code, 0)
  assert.is(toy.stderr, `A model folder is set (MOD_MODEL_DIR, --model-dir): commands use the model in ${TOY_MODEL}\n`)
})

test('models pull goes through HTTPS_PROXY, and a failure says what to try next', async () => {
  // A proxy on 127.0.0.1 that refuses every tunnel: the pull must ask it, and nothing else is contacted.
  const asked: string[] = []
  const proxy = createServer((_req, res) => res.writeHead(405).end())
  proxy.on('connect', (req, socket) => {
    asked.push(req.url ?? '')
    socket.end('HTTP/1.1 403 Forbidden\r\n\r\n')
  })
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve))
  const url = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`
  try {
    const cache = join(dir.path, 'proxied')
    const r = await runCli(['models', 'pull', 'fast'], {env: {MOD_CACHE_DIR: cache, ...onlyThroughProxy(url)}})
    assert.is(r.code, 2)
    assert.equal(asked, ['huggingface.co:443'])
    assert.match(own(r.stderr), /^mod: download_failed: cannot fetch [^ ]+ from https:\/\/huggingface\.co\/[^ ]+: the proxy answered HTTP 403; to try next: check HTTPS_PROXY \/ NO_PROXY; or copy an installed model folder/)
    assert.match(r.stderr, `into ${join(cache, 'fast')}, or point MOD_MODEL_DIR (--model-dir) at one`)
    assert.is(own(r.stderr).trim().split('\n').length, 1)
    assert.match(r.stderr, /^\[STARTED\] /)
  } finally {
    proxy.close()
  }
})

test('models pull nudenet through a proxy that is not there: the failure in plain words, and advice that fits the add-on', async () => {
  const closed = createServer()
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve))
  const port = (closed.address() as AddressInfo).port
  await new Promise((resolve) => closed.close(resolve))
  const cache = join(dir.path, 'nudenet-offline')
  const r = await runInProcess(['models', 'pull', 'nudenet'], {env: {MOD_CACHE_DIR: cache, ...onlyThroughProxy(`http://127.0.0.1:${port}`)}})
  assert.is(r.code, 2)
  const [licence, failure] = own(r.stderr).trim().split('\n')
  assert.match(licence, /^NudeNet is licensed AGPL-3\.0/)
  assert.match(failure, /^mod: download_failed: cannot fetch 320n\.onnx from https:\/\/[^ ]+: connection refused; to try next: check HTTPS_PROXY \/ NO_PROXY; /)
  assert.ok(failure.endsWith(`; or install a copy of the file with \`mod models add nudenet ./320n.onnx\` (the PyPI wheel nudenet 3.4.2 holds it), or copy an installed nudenet folder from another machine into ${join(cache, 'nudenet')}; then run the pull again (a download cut short resumes where it stopped)`), failure)
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
  const r = await runInProcess(['models', 'list', '--json'], {env: {MOD_CACHE_DIR: cache}})
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
  const r = await runInProcess(['models', 'list', '--json'], {env: {MOD_CACHE_DIR: cache}})
  assert.is(r.code, 0, r.stderr)
  const [fast] = JSON.parse(r.stdout).presets
  assert.equal(fast.verified, ['onnx/vision_model.onnx'])
  assert.is(fast.trusted_on_first_use.length, 7)
})

test('models list shows the counts of verified and first-use files per installed preset', async () => {
  const cache = join(dir.path, 'installed-table')
  installFast(cache)
  const r = await runInProcess(['models', 'list'], {env: {MOD_CACHE_DIR: cache}})
  assert.is(r.code, 0, r.stderr)
  const [head, fast, balanced] = r.stdout.split('\n').map((line) => line.split(/\s{2,}/))
  assert.equal(head, ['PRESET', 'MODEL', 'INSTALLED', 'SIZE', 'DOWNLOAD', 'VERIFIED', 'FIRST USE', 'FOLDER'])
  assert.equal([...fast.slice(0, 4), ...fast.slice(5, 7)], ['fast', 'clip-vit-base-patch32', 'yes', '8 bytes', '2', '6'])
  assert.is(balanced[2], 'no')
  assert.equal(balanced.slice(5, 7), ['-', '-'])
})

test('models pull names each file trusted on first use, with the sha256 it recorded', () => {
  const f: PulledFile = {file: 'vocab.json', size: 3, sha256: 'b'.repeat(64), skipped: false, pinned: false}
  assert.is(
    firstUseWarning(f),
    `warning: vocab.json has no pinned sha256 in the preset; trusted on first use (sha256 ${'b'.repeat(64)}, recorded in manifest.json)`,
  )
})

test('models pull refuses an unknown preset as a usage error', async () => {
  const r = await runInProcess(['models', 'pull', 'huge'], {env: {MOD_CACHE_DIR: join(dir.path, 'cache')}})
  assert.is(r.code, 2)
  assert.is(r.stderr, 'mod: usage: Expected huge to be one of: fast, balanced, accurate, nudenet\n')
})

test('models list shows the nudenet add-on with its kind and licence, not installed in an empty cache', async () => {
  const cache = join(dir.path, 'addons')
  const json = await runInProcess(['models', 'list', '--json'], {env: {MOD_CACHE_DIR: cache}})
  assert.equal(JSON.parse(json.stdout).addons, [
    {name: 'nudenet', model: 'nudenet-320n', kind: 'detector', licence: 'AGPL-3.0', installed: false, dir: join(cache, 'nudenet'), size: 12150158, verified: null},
  ])
  const table = await runInProcess(['models', 'list'], {env: {MOD_CACHE_DIR: cache}})
  const lines = table.stdout.split('\n')
  const at = lines.findIndex((l) => l.startsWith('ADD-ON'))
  assert.is(lines[at - 1], '')
  assert.equal(lines[at].split(/\s{2,}/), ['ADD-ON', 'MODEL', 'KIND', 'LICENCE', 'INSTALLED', 'SIZE', 'VERIFIED', 'FOLDER'])
  assert.equal(lines[at + 1].split(/\s{2,}/), ['nudenet', 'nudenet-320n', 'detector', 'AGPL-3.0', 'no', '11.59 MiB', '-', join(cache, 'nudenet')])
})

test('models pull nudenet says what the AGPL means, in one stderr line before it downloads', async () => {
  const proxy = createServer((_req, res) => res.writeHead(405).end())
  const asked: string[] = []
  proxy.on('connect', (req, socket) => {
    asked.push(req.url ?? '')
    socket.end('HTTP/1.1 403 Forbidden\r\n\r\n')
  })
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve))
  try {
    const cache = join(dir.path, 'nudenet-pull')
    const url = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`
    const r = await runInProcess(['models', 'pull', 'nudenet'], {env: {MOD_CACHE_DIR: cache, ...onlyThroughProxy(url)}})
    assert.is(r.code, 2)
    assert.equal(asked, ['github.com:443'])
    const [licence, failure] = own(r.stderr).trim().split('\n')
    assert.is(
      licence,
      'NudeNet is licensed AGPL-3.0: mod does not ship it (`mod models pull nudenet` downloads it from its authors, `mod models add nudenet <file>` installs a copy you have); if you offer mod with it to others over a network, the AGPL asks you to offer them its source as well.',
    )
    assert.match(failure, /^mod: download_failed: .*320n\.onnx/)
  } finally {
    proxy.close()
  }
})

test.run()
