// mod scan --server against a server with no CLIP model: the coverage statement is the server's, said as a local
// scan with the same models says it (rows, summary, JSON), with the advice to pull the model on the server; and
// --strict refuses before the first image.
import {mkdirSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {runInProcess, solidPng, tempDir} from '../helpers/cli.js'
import {serveProcess, type ServeProcess} from '../server/harness.js'
import {warmCacheDir} from '../helpers/warm-cache.js'

const dir = tempDir('mod-remote-coverage-')
// No CLIP model in either cache: the NSFW specialist scores its 3 categories, the others are not evaluated.
const env = {MOD_CACHE_DIR: warmCacheDir(join(dir.path, 'cache'))}
const blues = join(dir.path, 'blues')
let server: ServeProcess
let base = ''

test.before(async () => {
  mkdirSync(blues)
  for (let i = 0; i < 2; i++) writeFileSync(join(blues, `${i}.png`), await solidPng(0, 0, 255, 32, 32))
  // Killed at the end: what it keeps in TMPDIR goes with the test's folder.
  server = serveProcess(['--port', '0'], {MOD_CACHE_DIR: warmCacheDir(join(dir.path, 'server-cache')), TMPDIR: dir.path})
  ;[, base] = await server.waitFor(/^listening on (http:\/\/127\.0\.0\.1:\d+)$/)
})

test.after(() => {
  server.child.kill('SIGKILL')
  dir.remove()
})

const CHECKED = '3 of 11 categories checked'

test('rows and --json carry the coverage a local scan with the same models gives; the summary says to pull the model on the server', async () => {
  for (const format of [[], ['--json']]) {
    const local = await runInProcess(['scan', blues, ...format], {env})
    const remote = await runInProcess(['scan', blues, ...format, '--server', base], {env})
    assert.is(remote.stdout, local.stdout, format.join(' '))
    assert.is(remote.code, local.code)
  }
  const r = await runInProcess(['scan', blues, '--server', base], {env})
  // The first line says the server has no CLIP model, not the name of the one its preset would use.
  assert.match(r.stderr, /^mod: server: http:\/\/127\.0\.0\.1:\d+\/ \(mod \S+, preset fast, no CLIP model installed, policy sha256 [0-9a-f]{12}\)\n/)
  assert.match(r.stdout, new RegExp(`^SAFE\\s+\\S+0\\.png\\s+\\(${CHECKED}; highest: `))
  assert.is(r.stderr.trim().split('\n').at(-1), `2 scanned: 2 safe, 0 unsafe, 0 errors (${CHECKED}; run \`mod models pull fast\` on the server for the rest)`)
})

test('--strict with --server exits 2 before the first image, naming what the server cannot evaluate', async () => {
  const r = await runInProcess(['scan', blues, '--strict', '--json', '--server', base], {env})
  assert.is(r.code, 2)
  assert.is(r.stdout, '')
  assert.match(
    r.stderr,
    /\nmod: not evaluated: violence, gore, weapons, hate_symbols, drugs, self_harm, alcohol, tobacco \(no CLIP model installed on the server; run `mod models pull fast` on the server to score them; --strict makes this exit 2\)\n$/,
  )
})

test.run()
