// One SIGTERM ends a scan whose read of --files-from, --baseline or --resume is blocked (a FIFO no one writes to,
// a pipe never closed) within a second, exit 143, as it ends any scan; so it does a scan or a hash waiting for an
// image on stdin that never ends: real processes, real FIFOs.
import {execFileSync, spawn} from 'node:child_process'
import {readdirSync, readFileSync, readlinkSync} from 'node:fs'
import {createServer, type Server} from 'node:http'
import type {AddressInfo} from 'node:net'
import {join} from 'node:path'
import {setTimeout as sleep} from 'node:timers/promises'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {BIN, runCli, tempDir, TOY_MODEL} from '../helpers/cli.js'
import {warmCacheDir} from '../helpers/warm-cache.js'

const dir = tempDir('mod-blocked-')
let server: Server
let url = ''

/**
 * Whether the process is waiting where the test wants it, read from /proc: it holds the FIFO open (waiting for a
 * writer), or, for a pipe on stdin, Node has opened stdin (made it non-blocking, O_NONBLOCK).
 */
function waiting(pid: number, on: string): boolean {
  try {
    if (on === '-') return (Number.parseInt(/^flags:\s*([0-7]+)$/m.exec(readFileSync(`/proc/${pid}/fdinfo/0`, 'utf8'))?.[1] ?? '0', 8) & 0o4000) !== 0
    return readdirSync(`/proc/${pid}/fd`).some((fd) => {
      try {
        return readlinkSync(`/proc/${pid}/fd/${fd}`) === join(dir.path, on)
      } catch {
        return false
      }
    })
  } catch {
    return false
  }
}

/** The CPU time the process has used so far, in clock ticks (utime + stime of /proc/PID/stat). */
function cpuTicks(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
  return Number(fields[11]) + Number(fields[12])
}

/** Starts `mod <command> args`, waits until it is blocked (waiting, and idle for 300 ms), sends one SIGTERM and times the exit. */
async function stopBlocked(args: string[], command = 'scan'): Promise<{code: number | null; ms: number; stderr: string}> {
  // What it reads: the FIFO named, or - (stdin, a pipe the test never closes).
  const on = args.at(-1) as string
  const stdin = on === '-' ? 'pipe' : 'ignore'
  const env = {PATH: process.env.PATH ?? '', MOD_API_KEY: 'key', MOD_MODEL_DIR: TOY_MODEL, MOD_CACHE_DIR: warmCacheDir(join(dir.path, 'cache'))}
  const child = spawn(process.execPath, [BIN, command, ...args], {cwd: dir.path, env, stdio: [stdin, 'ignore', 'pipe']})
  let stderr = ''
  child.stderr?.on('data', (d) => (stderr += d))
  const closed = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)))
  const started = Date.now()
  const pid = child.pid as number
  let idle = 0
  let ticks = -1
  while (idle < 3) {
    if (Date.now() - started > 20_000) throw new Error(`mod ${command} ${args.join(' ')} never started: ${stderr}`)
    await sleep(100)
    const now = waiting(pid, on) ? cpuTicks(pid) : -1
    idle = now !== -1 && now === ticks ? idle + 1 : 0
    ticks = now
  }
  const t0 = Date.now()
  child.kill('SIGTERM')
  // A process that does not stop is killed after a while, so that the test fails instead of waiting for ever.
  const kill = setTimeout(() => child.kill('SIGKILL'), 10_000)
  const code = await closed
  clearTimeout(kill)
  return {code, ms: Date.now() - t0, stderr}
}

test.before(async () => {
  for (const name of ['list.fifo', 'baseline.fifo', 'journal.fifo', 'policy.fifo']) execFileSync('mkfifo', [join(dir.path, name)])
  // Enough of a mod serve for --resume to be opened: its categories and its health.
  server = createServer((req, res) => {
    const body =
      req.url === '/health'
        ? {status: 'ok', version: '0.2.0', policy: {sha256: 'c'.repeat(64)}}
        : {preset: 'fast', model: 'toy-clip', coverage: {evaluated: 0, total: 0, not_evaluated: []}, categories: []}
    res.writeHead(200, {'content-type': 'application/json'}).end(JSON.stringify(body))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})

test.after(() => {
  server.close()
  dir.remove()
})

test('--files-from, --baseline and --resume on a FIFO with no writer, and --files-from - on an open pipe: SIGTERM exits 143 within 1 s', async () => {
  const cases = [
    ['--files-from', 'list.fifo'],
    ['.', '--baseline', 'baseline.fifo'],
    ['.', '--server', url, '--resume', 'journal.fifo'],
    ['--files-from', '-'],
  ]
  for (const args of cases) {
    const r = await stopBlocked(args)
    assert.is(r.code, 143, `${args.join(' ')}: ${r.stderr}`)
    assert.ok(r.ms < 1000, `${args.join(' ')}: ${r.ms} ms`)
    // Stopped before the scan began: the line says which signal, as every stopped command's last line does.
    assert.match(r.stderr, /(^|\n)mod: stopped by SIGTERM\n$/, args.join(' '))
  }
})

test('an image on stdin (-) that never ends: SIGTERM ends mod scan (saying how far it got) and mod hash within 1 s, exit 143', async () => {
  const scan = await stopBlocked(['-'])
  assert.is(scan.code, 143, scan.stderr)
  assert.ok(scan.ms < 1000, `scan: ${scan.ms} ms`)
  assert.match(scan.stderr, /^mod: stopped by SIGTERM after 0 of 1 files: 0 scanned: 0 safe, 0 unsafe, 0 errors$/m)
  const hash = await stopBlocked(['-'], 'hash')
  assert.is(hash.code, 143, hash.stderr)
  assert.ok(hash.ms < 1000, `hash: ${hash.ms} ms`)
  assert.is(hash.stderr, 'mod: stopped by SIGTERM after 0 hashes\n')
})

test('a policy that is a FIFO is refused at once, never waited on', async () => {
  const r = await runCli(['scan', '.', '--config', 'policy.fifo'], {cwd: dir.path})
  assert.is(r.code, 2)
  assert.match(r.stderr, /^mod: invalid_config: the policy file \S+\/policy\.fifo is not a file\n$/)
})

test.run()
