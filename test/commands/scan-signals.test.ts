// CI runners and `docker stop` stop a scan with SIGTERM, a closed terminal with SIGHUP: like Ctrl-C, the output
// stays whole (a closed JSON array, whole ndjson lines), stderr says how far the scan got, and the exit code is
// 128 + the signal's number.
import {spawn} from 'node:child_process'
import {appendFileSync, closeSync, mkdirSync, openSync, readFileSync, writeFileSync} from 'node:fs'
import {constants} from 'node:os'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {BIN, solidPng, tempDir, TOY_MODEL, writeRednessPolicy} from '../helpers/cli.js'
import {warmCacheDir} from '../helpers/warm-cache.js'

const dir = tempDir('mod-signals-')
const IMAGES = 50
/** The folder given this many times: far more work than the test waits for. */
const REPEATS = 40
let env: NodeJS.ProcessEnv = {}

test.before(async () => {
  mkdirSync(join(dir.path, 'imgs'))
  const png = await solidPng(0, 0, 255, 16, 16)
  for (let i = 0; i < IMAGES; i++) writeFileSync(join(dir.path, 'imgs', `${String(i).padStart(2, '0')}.png`), png)
  const policy = writeRednessPolicy(dir.path)
  appendFileSync(policy, 'specialists: {nsfw: false}\n')
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('MOD_')))
  env = {...base, NO_COLOR: '1', MOD_MODEL_DIR: TOY_MODEL, MOD_CACHE_DIR: warmCacheDir(join(dir.path, 'cache')), MOD_CONFIG: policy}
})

test.after(() => dir.remove())

/** Starts a scan with stdout to a file, sends `signal` once a few results are written; the exit code and stderr. */
async function stopped(format: '--json' | '--ndjson', signal: NodeJS.Signals, out: string): Promise<{code: number | null; endedBy: NodeJS.Signals | null; stderr: string; text: string}> {
  const fd = openSync(out, 'w')
  const child = spawn(process.execPath, [BIN, 'scan', ...Array.from({length: REPEATS}, () => 'imgs'), format], {cwd: dir.path, env, stdio: ['ignore', fd, 'pipe']})
  closeSync(fd)
  let stderr = ''
  child.stderr?.on('data', (d) => (stderr += d))
  let endedBy: NodeJS.Signals | null = null
  // The exit code as a shell reports it: 128 + the signal's number for a process a signal ended (SIGHUP does).
  const exited = new Promise<number | null>((resolve) =>
    child.on('close', (code, sig) => {
      endedBy = sig
      resolve(code ?? (sig ? 128 + constants.signals[sig] : null))
    }),
  )
  const deadline = Date.now() + 60_000
  while (readFileSync(out, 'utf8').split('"source"').length <= 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))
  child.kill(signal)
  const code = await exited
  return {code, endedBy, stderr, text: readFileSync(out, 'utf8')}
}

test('SIGTERM: exit 143, stdout a valid JSON array of what finished, one stderr line saying how far the scan got', async () => {
  const r = await stopped('--json', 'SIGTERM', join(dir.path, 't.json'))
  assert.is(r.code, 143, r.stderr)
  const results = JSON.parse(r.text) as {source: string; is_safe: boolean}[]
  assert.ok(results.length >= 3 && results.length < IMAGES * REPEATS, String(results.length))
  for (const x of results) assert.is(x.is_safe, true)
  const line = /^mod: stopped by SIGTERM after (\d+) of (\d+)\+? files: \d+ scanned: \d+ safe, 0 unsafe, 0 errors\n$/.exec(r.stderr)
  assert.ok(line, r.stderr)
  assert.is(Number(line[1]), results.length)
  assert.ok(Number(line[2]) >= results.length)
})

test('SIGHUP: exit 129, every ndjson line whole', async () => {
  const r = await stopped('--ndjson', 'SIGHUP', join(dir.path, 'h.ndjson'))
  assert.is(r.code, 129, r.stderr)
  // Of SIGHUP itself, after the stop line: an exit would reset a closed terminal (stdin's too), which Node.js 20
  // asserts on (a native abort).
  assert.is(r.endedBy, 'SIGHUP')
  assert.ok(r.text.endsWith('\n'))
  const lines = r.text.trim().split('\n')
  for (const l of lines) assert.is(JSON.parse(l).is_safe, true)
  assert.match(r.stderr, new RegExp(`^mod: stopped by SIGHUP after ${lines.length} of \\d+\\+? files`))
})

test('--help lists the exit codes of the stop signals', async () => {
  const help = await new Promise<string>((resolve) => {
    let text = ''
    const child = spawn(process.execPath, [BIN, 'scan', '--help'], {env, stdio: ['ignore', 'pipe', 'ignore']})
    child.stdout.on('data', (d) => (text += d))
    child.on('close', () => resolve(text))
  })
  assert.match(help, /\n\s+129\s+stopped by SIGHUP/)
  assert.match(help, /\n\s+130\s+stopped by Ctrl-C \(SIGINT\)/)
  assert.match(help, /\n\s+143\s+stopped by SIGTERM/)
})

test.run()
