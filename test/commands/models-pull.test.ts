/**
 * `mod models pull` run as a command, against the download hosts played on 127.0.0.1 (test/helpers/model-host.ts):
 * what a user sees when the cache folder cannot take the download, the connection fails, or two installers meet.
 */
import {execFile, execFileSync, spawn, type ChildProcess} from 'node:child_process'
import {existsSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync} from 'node:fs'
import type {IncomingMessage, ServerResponse} from 'node:http'
import {join} from 'node:path'
import {promisify} from 'node:util'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {downloadBar} from '../../src/commands/models/pull.js'
import {loadNudenetPreset} from '../../src/lib/signals/nudenet/manifest.js'
import {BIN, runCli, shellWord, tempDir} from '../helpers/cli.js'
import {modelHost} from '../helpers/model-host.js'
import {realNudenetFile} from '../helpers/nudenet.js'
import {testUnless} from '../helpers/skip.js'
import {inPane} from '../helpers/tmux.js'

const dir = tempDir('mod-models-pull-')
const mounts: string[] = []
test.after(() => {
  for (const m of mounts) execFileSync('umount', [m])
  dir.remove()
})

const pinned = (await loadNudenetPreset()).files[0]
const real = await realNudenetFile()
const realBody = real.path === undefined ? Buffer.alloc(0) : readFileSync(real.path)
/** Bytes of the detector's pinned size: enough for the failures here, which come before the sha256 is checked. */
const junk = Buffer.alloc(pinned.size as number, 7)

type Serve = (req: IncomingMessage, res: ServerResponse) => void
const serveJunk: Serve = (_req, res) => res.writeHead(200, {'content-length': junk.length}).end(junk)
let serve = serveJunk
const host = await modelHost((req, res) => serve(req, res))
test.after(() => host.close())
test.before.each(() => {
  serve = serveJunk
  host.requests.length = 0
})

/** `mod models pull nudenet` into `cache`, through the played hosts. */
function pull(cache: string, env: Record<string, string> = {}) {
  return runCli(['models', 'pull', 'nudenet'], {env: {MOD_CACHE_DIR: cache, ...host.env, ...env}})
}

/** stderr's lines of mod's own: not listr2's step lines, nor the add-on's licence notice printed first. */
function own(stderr: string): string[] {
  return stderr
    .trim()
    .split('\n')
    .filter((l) => !/^\[(STARTED|COMPLETED|FAILED|SKIPPED|TITLE|RETRY|ROLLBACK)\]/.test(l) && !/^NudeNet is licensed AGPL-3\.0/.test(l))
}

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile()
  } catch {
    return false
  }
}

/** A failed pull: exit 2, one line `mod: <code>: <message>` (no stack trace), no model file or manifest in place. */
function assertFailed(r: {code: number; stderr: string}, model: string, code: string, message: string | RegExp): void {
  assert.is(r.code, 2, r.stderr)
  const lines = own(r.stderr)
  assert.is(lines.length, 1, r.stderr)
  assert.not.match(r.stderr, /^\s+at /m)
  assert.ok(lines[0].startsWith(`mod: ${code}: `), lines[0])
  if (typeof message === 'string') assert.is(lines[0], `mod: ${code}: ${message}`)
  else assert.match(lines[0], message)
  assert.not.ok(isFile(join(model, '320n.onnx')), 'no model file in place')
  assert.not.ok(isFile(join(model, 'manifest.json')), 'no manifest.json')
}

/**
 * Makes the folder `path` (made if missing) one this process may not write, its files kept: made 0555, or, for root
 * (whom permissions do not stop), bound onto itself read-only; the reason where root cannot mount.
 */
function readOnlyFolder(path: string): string | undefined {
  mkdirSync(path, {recursive: true})
  if (process.getuid?.() !== 0) {
    execFileSync('chmod', ['0555', path])
    return undefined
  }
  try {
    execFileSync('mount', ['--bind', path, path], {stdio: 'ignore'})
  } catch {
    return 'run as root without the right to mount: no folder it cannot write'
  }
  mounts.push(path)
  execFileSync('mount', ['-o', 'remount,bind,ro', path])
  return undefined
}

/** Undoes readOnlyFolder(path). */
function writableAgain(path: string): void {
  if (process.getuid?.() !== 0) return void execFileSync('chmod', ['0755', path])
  execFileSync('umount', [path])
  mounts.splice(mounts.indexOf(path), 1)
}

test('a model folder mod may not write: invalid_config naming the file it could not make and why, before any download', async () => {
  const cache = join(dir.path, 'read-only')
  const model = join(cache, 'nudenet')
  const missing = readOnlyFolder(model)
  if (missing !== undefined) return console.log(`[skip] read-only model folder: ${missing}`)
  const r = await pull(cache)
  assertFailed(
    r,
    model,
    'invalid_config',
    new RegExp(`^mod: invalid_config: cannot write ${model}/\\.install\\.lock: (permission denied \\(EACCES\\)|a read-only file system \\(EROFS\\)); give MOD_CACHE_DIR \\(or --cache-dir\\) a folder mod can write$`),
  )
  assert.equal(host.requests, [])
})

test('a file where the model folder, its part folder or its model file goes: one line naming it and why', async () => {
  const inPlaceOfModel = join(dir.path, 'file-model')
  mkdirSync(inPlaceOfModel)
  writeFileSync(join(inPlaceOfModel, 'nudenet'), 'a file')
  assertFailed(
    await pull(inPlaceOfModel),
    join(inPlaceOfModel, 'nudenet'),
    'invalid_config',
    `cannot make the folder ${join(inPlaceOfModel, 'nudenet')}: a part of the path is not a folder (ENOTDIR); give MOD_CACHE_DIR (or --cache-dir) a folder mod can write`,
  )

  const inPlaceOfPart = join(dir.path, 'file-partial')
  mkdirSync(join(inPlaceOfPart, 'nudenet'), {recursive: true})
  writeFileSync(join(inPlaceOfPart, 'nudenet', '.partial'), 'a file')
  const model = join(inPlaceOfPart, 'nudenet')
  assertFailed(await pull(inPlaceOfPart), model, 'download_failed', `cannot write ${join(model, '.partial')}: a part of the path is not a folder (ENOTDIR)`)

})

testUnless(real.missing, 'a model installed whole in a folder mod may not write: the pull verifies it and says nothing was downloaded', async () => {
  serve = serveReal()
  const cache = join(dir.path, 'read-only-installed')
  const model = join(cache, 'nudenet')
  assert.is((await pull(cache)).code, 0)
  const missing = readOnlyFolder(model)
  if (missing !== undefined) return console.log(`[skip] read-only installed model: ${missing}`)
  host.requests.length = 0
  const r = await pull(cache)
  assert.is(r.code, 0, r.stderr)
  assert.is(r.stdout, `nudenet is installed in ${model} (320n.onnx was already there and matches its pinned sha256; nothing was downloaded)\n`)
  assert.equal(host.requests, [])
  // A file damaged there is not passed over: the refusal of the folder stands.
  writableAgain(model)
  writeFileSync(join(model, '320n.onnx'), Buffer.alloc(realBody.length))
  readOnlyFolder(model)
  const damaged = await pull(cache)
  writableAgain(model)
  assert.is(damaged.code, 2)
  assert.match(own(damaged.stderr)[0], /^mod: invalid_config: cannot write .*\.install\.lock: /)
})

testUnless(real.missing, 'a folder where the model file goes: the verified download is kept as its part, the failure names the folder', async () => {
  serve = (_req, res) => res.writeHead(200, {'content-length': realBody.length}).end(realBody)
  const cache = join(dir.path, 'folder-file')
  const model = join(cache, 'nudenet')
  mkdirSync(join(model, '320n.onnx'), {recursive: true})
  assertFailed(await pull(cache), model, 'download_failed', `cannot write ${join(model, '320n.onnx')}: it is a folder (EISDIR)`)
})

test('a path too long for the file system: invalid_config naming it, with what to do', async () => {
  // Each name under 255 bytes, the whole cache folder short enough to be made, its lock file's path too long (PATH_MAX 4096).
  let cache = join(dir.path, 'long')
  while (cache.length < 3800) cache = join(cache, 'c'.repeat(200))
  cache = join(cache, 'd'.repeat(4080 - cache.length - 1))
  const model = join(cache, 'nudenet')
  const r = await pull(cache)
  assertFailed(r, model, 'invalid_config', `cannot write ${model}/.install.lock: the name is too long (ENAMETOOLONG); give MOD_CACHE_DIR (or --cache-dir) a folder with a shorter path`)
})

test('a disk that fills mid-download: download_failed naming the folder and that the disk is full, the part kept to resume', async () => {
  const cache = join(dir.path, 'full')
  mkdirSync(cache)
  const model = join(cache, 'nudenet')
  let real = false
  if (process.getuid?.() === 0) {
    try {
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', cache], {stdio: 'ignore'})
      mounts.push(cache)
      real = true
    } catch {
      // No right to mount: /dev/full below.
    }
  }
  if (!real) {
    // Every write to /dev/full fails with ENOSPC.
    mkdirSync(join(model, '.partial'), {recursive: true})
    symlinkSync('/dev/full', join(model, '.partial', '320n.onnx.part'))
  }
  const r = await pull(cache)
  assertFailed(r, model, 'download_failed', new RegExp(`^mod: download_failed: the disk holding ${model} is full: 320n\\.onnx stopped after [\\d.]+ (bytes|KiB|MiB); free space and pull again to resume$`))
  assert.not.ok(existsSync(join(model, '320n.onnx')))
})

/** `mod models pull nudenet` as a child process the test can signal; `done` gives its exit code and stderr. */
function startPull(cache: string): {child: ChildProcess; done: Promise<{code: number | null; stderr: string}>} {
  const child = spawn(process.execPath, [BIN, 'models', 'pull', 'nudenet'], {env: {...cleanEnv(), NO_COLOR: '1', MOD_CACHE_DIR: cache, ...host.env}})
  let stderr = ''
  child.stderr?.on('data', (d) => (stderr += d))
  const done = new Promise<{code: number | null; stderr: string}>((resolve) => child.on('close', (code) => resolve({code, stderr})))
  return {child, done}
}

function cleanEnv(): Record<string, string | undefined> {
  return Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('MOD_')))
}

/** Serves the real detector, from `bytes=N-` on with 206 when asked; `cut` stops the body after its first bytes (then calls `then`). */
function serveReal(cut?: {bytes: number; then: (res: ServerResponse) => void}): Serve {
  return (req, res) => {
    const range = /^bytes=(\d+)-$/.exec(req.headers.range ?? '')
    if (cut) {
      res.writeHead(200, {'content-length': realBody.length})
      res.write(realBody.subarray(0, cut.bytes), () => cut.then(res))
      return
    }
    if (range) {
      const start = Number(range[1])
      res.writeHead(206, {'content-length': realBody.length - start, 'content-range': `bytes ${start}-${realBody.length - 1}/${realBody.length}`})
      res.end(realBody.subarray(start))
      return
    }
    res.writeHead(200, {'content-length': realBody.length}).end(realBody)
  }
}

testUnless(real.missing, 'Ctrl-C mid-download: exit 130, the part kept and no lock left; the next pull resumes with a Range and installs the verified file', async () => {
  const cache = join(dir.path, 'interrupted')
  const model = join(cache, 'nudenet')
  const run = startPull(cache)
  const part = join(model, '.partial', '320n.onnx.part')
  // Ctrl-C once the pull has written a part of what it received.
  const whenWritten = (): void => void (isFile(part) && statSync(part).size > 0 ? run.child.kill('SIGINT') : setTimeout(whenWritten, 20))
  serve = serveReal({bytes: 3_000_000, then: whenWritten})
  const stopped = await run.done
  assert.is(stopped.code, 130, stopped.stderr)
  const [said] = own(stopped.stderr)
  assert.match(said, /^mod: stopped by SIGINT after [\d.]+ (KiB|MiB) of 320n\.onnx; run the pull again to resume$/)
  assert.is(own(stopped.stderr).length, 1)
  assert.equal(readdirSync(model).sort(), ['.partial'])
  const kept = statSync(part).size
  assert.ok(kept > 0 && kept <= 3_000_000, String(kept))

  serve = serveReal()
  host.requests.length = 0
  const again = await pull(cache)
  assert.is(again.code, 0, again.stderr)
  assert.equal(host.requests.map((r) => r.range), [`bytes=${kept}-`])
  assert.ok(readFileSync(join(model, '320n.onnx')).equals(realBody))
  assert.equal(readdirSync(model).sort(), ['320n.onnx', 'manifest.json'])
})

testUnless(real.missing, 'a connection dropped mid-body: download_failed saying how far it got and that a pull resumes; the next one does', async () => {
  const cache = join(dir.path, 'dropped')
  const model = join(cache, 'nudenet')
  serve = serveReal({bytes: 2_000_000, then: (res) => res.socket?.destroy()})
  const r = await pull(cache)
  assertFailed(r, model, 'download_failed', /^mod: download_failed: download of 320n\.onnx stopped after 1\.91 MiB of 11\.59 MiB \(connection closed\); pull again to resume; to try next: /)
  serve = serveReal()
  host.requests.length = 0
  const again = await pull(cache)
  assert.is(again.code, 0, again.stderr)
  assert.equal(host.requests.map((r) => r.range), ['bytes=2000000-'])
  assert.ok(readFileSync(join(model, '320n.onnx')).equals(realBody))
})

testUnless(real.missing, 'two pulls of the same model at once: the second is refused naming the first, which installs the verified file', async () => {
  const cache = join(dir.path, 'twice')
  const model = join(cache, 'nudenet')
  let release!: () => void
  const held = new Promise<void>((resolve) => (release = resolve))
  let reached!: () => void
  const started = new Promise<void>((resolve) => (reached = resolve))
  // The first pull's transfer waits, half done, until the second has run.
  serve = (_req, res) => {
    res.writeHead(200, {'content-length': realBody.length})
    res.write(realBody.subarray(0, 5_000_000), reached)
    void held.then(() => res.end(realBody.subarray(5_000_000)))
  }
  const first = startPull(cache)
  await started
  const second = await pull(cache)
  assertFailed(
    second,
    model,
    'download_failed',
    `cannot install nudenet-320n into ${model}: another mod (process ${first.child.pid}) is installing there; wait for it to finish, or stop it and run this again (if process ${first.child.pid} is no mod, delete ${join(model, '.install.lock')})`,
  )
  release()
  const done = await first.done
  assert.is(done.code, 0, done.stderr)
  assert.ok(readFileSync(join(model, '320n.onnx')).equals(realBody))
  assert.equal(readdirSync(model).sort(), ['320n.onnx', 'manifest.json'])
  assert.is(host.requests.length, 1)
})

/** Serves the real detector in 20 steps over `ms`, so that the pull's progress is drawn along the way. */
function serveSlowly(ms: number): Serve {
  return (_req, res) => {
    res.writeHead(200, {'content-length': realBody.length})
    const step = Math.ceil(realBody.length / 20)
    let at = 0
    const more = (): void => {
      if (res.destroyed) return
      if (at >= realBody.length) return void res.end()
      res.write(realBody.subarray(at, (at += step)))
      setTimeout(more, ms / 20)
    }
    more()
  }
}

/** A shell line running `mod models pull nudenet` into `cache` through the played hosts, outside CI (which asks for plain lines). */
function pullLine(cache: string): string {
  const vars = Object.entries({...host.env, MOD_CACHE_DIR: cache}).map(([k, v]) => `${k}=${shellWord(v)}`)
  return `env -u CI ${vars.join(' ')} ${shellWord(process.execPath)} ${shellWord(BIN)} models pull nudenet`
}

test('the progress bar is full only once the file is whole, as its percentage', () => {
  const line = (received: number) => downloadBar({file: 'a.onnx', received, total: 1000})
  assert.is(line(0), 'a.onnx [------------------------] 0% of 1000 bytes')
  assert.is(line(500), 'a.onnx [############------------] 50% of 1000 bytes')
  assert.is(line(990), 'a.onnx [#######################-] 99% of 1000 bytes')
  assert.is(line(1000), 'a.onnx [########################] 100% of 1000 bytes')
  assert.is(downloadBar({file: 'a.onnx', received: 2048}), 'a.onnx 2 KiB')
})

testUnless(real.missing, 'without a terminal: the progress is a plain line now and then, no control character on stderr', async () => {
  serve = serveSlowly(6000)
  const r = await pull(join(dir.path, 'piped'))
  assert.is(r.code, 0, r.stderr)
  assert.match(r.stderr, /^\[OUTPUT\] 320n\.onnx \[#+-*\] \d+% of 11\.59 MiB$/m)
  assert.match(r.stderr, /^\[COMPLETED\] fetched 320n\.onnx \(11\.59 MiB\)$/m)
  // Nothing but printable text and line ends: no spinner, no cursor moves, no carriage returns.
  assert.not.match(r.stderr, /[\x00-\x09\x0b-\x1f\x7f]/)
  assert.is(r.stdout, `nudenet is installed in ${join(dir.path, 'piped', 'nudenet')}\n`)
})

testUnless(real.missing, 'on a terminal: the bar is drawn as the file comes, then replaced by one line saying it was fetched', async () => {
  serve = serveSlowly(3000)
  const cache = join(dir.path, 'tty')
  const shown = await inPane(dir.path, `${pullLine(cache)}; echo EXIT=$?; sleep 30`, {width: 100, height: 20}, async (pane) => {
    await pane.until(/[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] 320n\.onnx \[#*-+\] \d+% of 11\.59 MiB/, 20_000)
    return pane.until(/EXIT=\d+/, 30_000)
  })
  assert.match(shown, 'EXIT=0')
  const lines = shown.trim().split('\n')
  assert.equal(lines.slice(-3), ['✔ fetched 320n.onnx (11.59 MiB)', `nudenet is installed in ${join(cache, 'nudenet')}`, 'EXIT=0'])
  assert.not.match(shown, /\[#|\[STARTED\]/)
})

testUnless(real.missing, 'on a terminal of no size (a pseudo-terminal nobody sized): the list is drawn 80 columns wide, not a character a row', async () => {
  serve = serveSlowly(1000)
  const cache = join(dir.path, 'unsized')
  // script's pseudo-terminal, made without a terminal of the test's own, is 0 x 0.
  // Run without blocking: the played hosts answer from this process.
  const {stdout: shown} = await promisify(execFile)('script', ['-qfec', `sh -c ${shellWord(`stty size; ${pullLine(cache)}; echo EXIT=$?`)}`, '/dev/null'], {encoding: 'utf8', timeout: 60_000})
  assert.match(shown, /^0 0\r?$/m)
  assert.match(shown, 'EXIT=0')
  assert.match(shown, '✔ fetched 320n.onnx (11.59 MiB)')
})

test.run()
