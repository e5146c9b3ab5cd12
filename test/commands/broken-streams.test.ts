import {spawn} from 'node:child_process'
import {closeSync, openSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {BIN, ROOT, solidPng, tempDir, TOY_MODEL, writeRednessPolicy} from '../helpers/cli.js'
import {warmCacheDir} from '../helpers/warm-cache.js'

// What a command does when stdout or stderr cannot be written: a full disk (/dev/full), a reader of stderr gone.

const dir = tempDir()
test.after(() => dir.remove())
const env = {MOD_MODEL_DIR: TOY_MODEL, MOD_CACHE_DIR: warmCacheDir(join(dir.path, 'cache'))}
let policy = ''

test.before(async () => {
  policy = writeRednessPolicy(dir.path)
  writeFileSync(join(dir.path, 'red.png'), await solidPng(255, 0, 0))
  writeFileSync(join(dir.path, 'blue.png'), await solidPng(0, 0, 255))
})

type Sink = 'full' | 'pipe' | 'gone'

/**
 * Runs `node bin/run.js args` with stdout and stderr each sent to /dev/full (every write fails with ENOSPC), a pipe
 * read to its end, or a pipe whose reader has gone (writes fail with EPIPE).
 */
function run(args: string[], out: Sink, err: Sink, vars: Record<string, string> = env): Promise<{code: number; stdout: string; stderr: string}> {
  const full = openSync('/dev/full', 'w')
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('MOD_')))
  const io = (s: Sink) => (s === 'full' ? full : 'pipe')
  const child = spawn(process.execPath, [BIN, ...args], {cwd: ROOT, env: {...base, NO_COLOR: '1', ...vars}, stdio: ['ignore', io(out), io(err)]})
  closeSync(full)
  const texts = {stdout: '', stderr: ''}
  for (const [name, s, stream] of [['stdout', out, child.stdout], ['stderr', err, child.stderr]] as const) {
    if (s === 'gone') stream?.destroy()
    else stream?.on('data', (d) => (texts[name] += d))
  }
  return new Promise((done, fail) => {
    child.on('error', fail)
    child.on('close', (code) => done({code: code ?? -1, ...texts}))
  })
}

const OUTPUT_FAILED = 'mod: output: cannot write to stdout: ENOSPC: no space left on device, write\n'

test('results stdout cannot take: exit 2 (never 0 or 1) and one line naming the cause, no stack trace', async () => {
  for (const args of [['scan', join(dir.path, 'blue.png'), '--config', policy], ['scan', dir.path, '--json', '--config', policy], ['categories'], ['--help'], ['scan', '--help']]) {
    const r = await run(args, 'full', 'pipe')
    assert.is(r.code, 2, args.join(' '))
    assert.ok(r.stderr.endsWith(OUTPUT_FAILED), `${args.join(' ')}: ${r.stderr}`)
    assert.not.match(r.stderr, /\n\s+at |Aborted|terminate called/)
  }
})

test('stderr that cannot be written loses no result and keeps the exit code', async () => {
  for (const err of ['full', 'gone'] as const) {
    // The table's summary goes to stderr after the rows.
    const safe = await run(['scan', join(dir.path, 'blue.png'), '--config', policy], 'pipe', err)
    assert.is(safe.code, 0, err)
    assert.match(safe.stdout, /^SAFE\s+\S*blue\.png/)
    const unsafe = await run(['scan', dir.path, '--config', policy], 'pipe', err)
    assert.is(unsafe.code, 1, err)
    assert.equal(unsafe.stdout.split('\n').filter(Boolean).map((l) => l.split(/\s+/)[0]), ['SAFE', 'UNSAFE'])
    // Without a CLIP model, the note on what is not evaluated goes to stderr before any result.
    const partial = await run(['scan', join(dir.path, 'blue.png'), '--json'], 'pipe', err, {MOD_CACHE_DIR: join(dir.path, 'empty-cache')})
    assert.is(partial.code, 0, err)
    assert.equal(
      JSON.parse(partial.stdout).map((r: {is_safe: boolean}) => r.is_safe),
      [true],
    )
  }
})

test('a reader of stdout that goes away stops the command quietly with 141, as SIGPIPE ends grep or cat: never 0, which reads as all safe', async () => {
  for (const args of [['categories'], ['scan', dir.path, '--config', policy], ['scan', join(dir.path, 'blue.png'), '--json', '--config', policy]]) {
    const r = await run(args, 'gone', 'pipe')
    assert.is(r.code, 141, args.join(' '))
    assert.is(r.stderr, '', args.join(' '))
  }
})

test.run()
