import {createServer} from 'node:http'
import type {AddressInfo} from 'node:net'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {runCli, tempDir} from '../helpers/cli.js'

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

test('models list shows each preset\'s download size', async () => {
  const r = await runCli(['models', 'list', '--json'], {env: {MOD_CACHE_DIR: join(dir.path, 'cache')}})
  for (const p of JSON.parse(r.stdout).presets) assert.ok(p.download_size === null || p.download_size > 0, JSON.stringify(p))
  const table = await runCli(['models', 'list'], {env: {MOD_CACHE_DIR: join(dir.path, 'cache')}})
  assert.match(table.stdout, /^PRESET\s+MODEL\s+INSTALLED\s+SIZE\s+DOWNLOAD\s+FOLDER/)
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
    const r = await runCli(['models', 'pull', 'fast'], {env: {MOD_CACHE_DIR: cache, HTTPS_PROXY: url}})
    assert.is(r.code, 2)
    assert.equal(asked, ['huggingface.co:443'])
    assert.match(r.stderr, /^mod: download_failed: .*; to try next: check HTTPS_PROXY \/ NO_PROXY; or copy an installed model folder/)
    assert.match(r.stderr, `into ${join(cache, 'fast')}, or point MOD_MODEL_DIR (--model-dir) at one`)
    assert.is(r.stderr.trim().split('\n').length, 1)
  } finally {
    proxy.close()
  }
})

test('models pull refuses an unknown preset as a usage error', async () => {
  const r = await runCli(['models', 'pull', 'huge'], {env: {MOD_CACHE_DIR: join(dir.path, 'cache')}})
  assert.is(r.code, 2)
  assert.is(r.stderr, 'mod: usage: Expected huge to be one of: fast, balanced, accurate\n')
})

test.run()
