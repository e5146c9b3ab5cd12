// `mod serve --workers 2` when a worker dies: its clients learn at once (no connection waits on a dead worker),
// and the upload it was receiving does not outlive it. Runs the built CLI (npm test builds first).
import {spawnSync} from 'node:child_process'
import {existsSync, mkdirSync, readdirSync, statSync, writeFileSync} from 'node:fs'
import type {ClientRequest} from 'node:http'
import {hostname} from 'node:os'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {uploadsRoot} from '../../src/server/upload-dirs.js'
import {multipartParts, rawRequest, serveProcess, tempDir, TOY_MODEL, until, writeRednessPolicy, type ServeProcess} from './harness.js'
import {warmCacheDir} from '../helpers/warm-cache.js'

const dir = tempDir('mod-server-worker-death-')
const tmp = join(dir.path, 'tmp')
const root = uploadsRoot(tmp)
const host = hostname()
const env = {
  MOD_CACHE_DIR: warmCacheDir(join(dir.path, 'cache')),
  MOD_MODEL_DIR: TOY_MODEL,
  MOD_CONFIG: writeRednessPolicy(dir.path),
  TMPDIR: tmp,
}
/** A process that has ended, and one that runs (this test): their upload folders, made before the server starts. */
const ended = Number(spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], {encoding: 'utf8'}).stdout)
const endedDir = join(root, `${ended}@${host}`)
const liveDir = join(root, `${process.pid}@${host}`)
let serve: ServeProcess
let base = ''

test.before(async () => {
  for (const folder of [endedDir, liveDir]) {
    mkdirSync(join(folder, 'mod-video-old'), {recursive: true})
    writeFileSync(join(folder, 'mod-video-old', 'upload'), 'partial video')
  }
  serve = serveProcess(['--port', '0', '--workers', '2'], env)
  ;[, base] = await serve.waitFor(/^listening on (http:\/\/127\.0\.0\.1:\d+) \(2 workers\)$/, 60_000)
})

test.after(() => {
  serve.child.kill('SIGKILL')
  dir.remove()
})

const readyPids = () => serve.lines.flatMap((l) => /^worker (\d+) ready$/.exec(l)?.[1] ?? []).map(Number)

/** GET /health on a connection of its own; fails the test instead of waiting past 10 s. */
const health = () => rawRequest(`${base}/health`, {method: 'GET', timeoutMs: 10_000}, (req) => req.end())

test('at start the uploads of ended processes are removed; those of running processes are kept', () => {
  assert.is(existsSync(endedDir), false)
  assert.equal(readdirSync(join(liveDir, 'mod-video-old')), ['upload'])
})

test('a worker that cannot take connections (stopped) does not hold any: every client is answered by the other, also after it is killed', async () => {
  const [stopped] = readyPids()
  process.kill(stopped, 'SIGSTOP')
  try {
    const answers = await Promise.all([1, 2, 3, 4, 5, 6].map(() => health()))
    assert.equal(answers.map((a) => a.status), [200, 200, 200, 200, 200, 200])
  } finally {
    process.kill(stopped, 'SIGKILL')
  }
  await serve.waitFor(new RegExp(`^worker ${stopped} exited \\(signal SIGKILL\\); starting a replacement$`))
  await until(() => readyPids().length === 3, 20_000)
})

test('a worker killed mid-upload: its client is cut off at once and the partial upload is removed', async () => {
  const {head, type} = multipartParts('file', 'clip.mp4')
  let client: ClientRequest | undefined
  const answer = rawRequest(`${base}/v1/moderate/video`, {headers: {'content-type': type, 'content-length': 50_000_000}, timeoutMs: 10_000}, (req) => {
    client = req
    req.write(head)
    req.write(Buffer.alloc(200_000, 1))
  })
  const failure = answer.then(
    (a) => `answered ${a.status}`,
    (e: Error) => e.message,
  )
  // The folder of the worker receiving the upload names its pid.
  const uploading = () =>
    (existsSync(root) ? readdirSync(root) : []).find((name) => {
      const video = existsSync(join(root, name)) ? readdirSync(join(root, name)).find((f) => f.startsWith('mod-video-')) : undefined
      return name !== `${process.pid}@${host}` && video !== undefined && existsSync(join(root, name, video, 'upload')) && statSync(join(root, name, video, 'upload')).size > 0
    })
  await until(() => uploading() !== undefined)
  const folder = uploading() as string
  const pid = Number(folder.split('@')[0])
  assert.ok(readyPids().includes(pid))
  process.kill(pid, 'SIGKILL')
  // Cut off, not left waiting for the 10 s after which rawRequest gives up: the client sees its connection closed
  // (a hang-up, or a reset when the kernel drops the dead socket with unread data).
  assert.match(await failure, /^(socket hang up|read ECONNRESET)$/)
  client?.destroy()
  await serve.waitFor(new RegExp(`^worker ${pid} exited \\(signal SIGKILL\\); starting a replacement$`))
  await until(() => !existsSync(join(root, folder)), 10_000)
  assert.equal(readdirSync(join(liveDir, 'mod-video-old')), ['upload'])
  assert.is((await health()).status, 200)
})

test.run()
