// One SIGTERM ends a scan whose read of --files-from, --baseline or --resume is blocked (a FIFO no one writes to,
// a pipe never closed) within a second, exit 143, as it ends any scan: real processes, real FIFOs.
import {execFileSync, spawn} from 'node:child_process'
import {readFileSync} from 'node:fs'
import {createServer, type Server} from 'node:http'
import type {AddressInfo} from 'node:net'
import {join} from 'node:path'
import {setTimeout as sleep} from 'node:timers/promises'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {BIN, tempDir} from '../helpers/cli.js'

const dir = tempDir('mod-blocked-')
let server: Server
let url = ''

/** Whether the process has its own SIGTERM handler yet (the command's), read from /proc: then it is running. */
function catchesSigterm(pid: number): boolean {
  try {
    const caught = /^SigCgt:\s*([0-9a-f]+)$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]
    return caught !== undefined && (BigInt(`0x${caught}`) & (1n << 14n)) !== 0n
  } catch {
    return false
  }
}

/** Starts `mod scan args`, waits until it is blocked (SIGTERM caught, then a moment), sends one SIGTERM, times the exit. */
async function stopBlocked(args: string[], stdin: 'ignore' | 'pipe' = 'ignore'): Promise<{code: number | null; ms: number; stderr: string}> {
  const child = spawn(process.execPath, [BIN, 'scan', ...args], {cwd: dir.path, env: {PATH: process.env.PATH ?? '', MOD_API_KEY: 'key'}, stdio: [stdin, 'ignore', 'pipe']})
  let stderr = ''
  child.stderr?.on('data', (d) => (stderr += d))
  const closed = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)))
  const started = Date.now()
  while (!catchesSigterm(child.pid as number)) {
    if (Date.now() - started > 20_000) throw new Error(`mod scan ${args.join(' ')} never started: ${stderr}`)
    await sleep(20)
  }
  // The command reads its inputs right after its handlers are in place.
  await sleep(300)
  const t0 = Date.now()
  child.kill('SIGTERM')
  const code = await closed
  return {code, ms: Date.now() - t0, stderr}
}

test.before(async () => {
  for (const name of ['list.fifo', 'baseline.fifo', 'journal.fifo']) execFileSync('mkfifo', [join(dir.path, name)])
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
  const cases: [string[], 'ignore' | 'pipe'][] = [
    [['--files-from', 'list.fifo'], 'ignore'],
    [['.', '--baseline', 'baseline.fifo'], 'ignore'],
    [['.', '--server', url, '--resume', 'journal.fifo'], 'ignore'],
    [['--files-from', '-'], 'pipe'],
  ]
  for (const [args, stdin] of cases) {
    const r = await stopBlocked(args, stdin)
    assert.is(r.code, 143, `${args.join(' ')}: ${r.stderr}`)
    assert.ok(r.ms < 1000, `${args.join(' ')}: ${r.ms} ms`)
  }
})

test.run()
