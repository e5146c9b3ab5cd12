// `mod serve --workers 2`: node:cluster workers, each with its own model; a crashed worker is replaced
// while the others keep serving; when a worker dies its clients learn at once (no connection waits on a dead
// worker), and the upload it was receiving does not outlive it. One cluster serves the tests in turn. Runs the
// built CLI (npm test builds first).
import {spawnSync} from 'node:child_process'
import {cpSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync} from 'node:fs'
import {request, type ClientRequest} from 'node:http'
import {hostname} from 'node:os'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {workerEnv, workerExecArgv} from '../../src/server/cluster.js'
import {uploadsRoot} from '../../src/server/upload-dirs.js'

import {multipartParts, rawRequest, red, serveProcess, tempDir, TOY_MODEL, until, writeRednessPolicy, type ServeProcess} from './harness.js'
import {warmCacheDir} from '../helpers/warm-cache.js'

const dir = tempDir('mod-server-workers-')
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
  ;[, base] = await serve.waitFor(/^listening on (http:\/\/127\.0\.0\.1:\d+) \(2 workers\)$/)
})

test.after(() => {
  serve.child.kill('SIGKILL')
  dir.remove()
})

/** One moderation on a connection of its own (a kept-alive one could belong to a worker that died). */
async function moderateRed(): Promise<{status: number; body: {is_safe: boolean}}> {
  const body = new FormData()
  body.append('file', new Blob([new Uint8Array(await red())], {type: 'image/png'}), 'red.png')
  const req = new Request(`${base}/v1/moderate`, {method: 'POST', body})
  const bytes = Buffer.from(await req.arrayBuffer())
  return new Promise((resolve, reject) => {
    const r = request(
      `${base}/v1/moderate`,
      {method: 'POST', agent: false, headers: {'content-type': req.headers.get('content-type') ?? '', 'content-length': bytes.length}},
      (res) => {
        let text = ''
        res.setEncoding('utf8').on('data', (d: string) => (text += d))
        res.on('end', () => resolve({status: res.statusCode ?? 0, body: JSON.parse(text)}))
      },
    )
    r.on('error', reject)
    r.end(bytes)
  })
}

const readyPids = () => serve.lines.flatMap((l) => /^worker (\d+) ready$/.exec(l)?.[1] ?? []).map(Number)
const exitedPids = () => new Set(serve.lines.flatMap((l) => /^worker (\d+) exited /.exec(l)?.[1] ?? []).map(Number))
/** The workers that said they were ready and have not exited since, in the order they started. */
const livePids = () => readyPids().filter((pid) => !exitedPids().has(pid))

/** GET /health on a connection of its own; fails the test instead of waiting past 10 s. */
const health = () => rawRequest(`${base}/health`, {method: 'GET', timeoutMs: 10_000}, (req) => req.end())

test('at start the uploads of ended processes are removed; those of running processes are kept', () => {
  assert.is(existsSync(endedDir), false)
  assert.equal(readdirSync(join(liveDir, 'mod-video-old')), ['upload'])
})

test('two workers start, each logs its pid, and both serve moderations', async () => {
  assert.is(readyPids().length, 2)
  const answers = await Promise.all([1, 2, 3, 4].map(() => moderateRed()))
  assert.equal(answers.map((a) => [a.status, a.body.is_safe]), [[200, false], [200, false], [200, false], [200, false]])
})

test('workers start with the malloc settings and the V8 semi-space cap (glibc returns freed memory, fewer arenas, a small young generation)', () => {
  for (const pid of readyPids()) {
    const environ = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0')
    assert.ok(environ.includes('MALLOC_MMAP_THRESHOLD_=1048576'), `worker ${pid}`)
    assert.ok(environ.includes('MALLOC_ARENA_MAX=2'), `worker ${pid}`)
    const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')
    assert.ok(argv.includes('--max-semi-space-size=4'), `worker ${pid}: ${argv.join(' ')}`)
  }
})

test("a malloc setting the user chose is kept: workers get only the others", () => {
  assert.equal(workerEnv({MALLOC_MMAP_THRESHOLD_: '65536', MALLOC_ARENA_MAX: '8'}), {})
  assert.equal(workerEnv({MALLOC_ARENA_MAX: '8'}), {MALLOC_MMAP_THRESHOLD_: '1048576'})
  assert.equal(workerEnv({}), {MALLOC_MMAP_THRESHOLD_: '1048576', MALLOC_ARENA_MAX: '2'})
})

test("a semi-space size the user chose (node's options or NODE_OPTIONS) is kept; otherwise workers get the cap", () => {
  assert.equal(workerExecArgv(['--enable-source-maps']), ['--enable-source-maps', '--max-semi-space-size=4'])
  assert.equal(workerExecArgv(['--max-semi-space-size=8']), ['--max-semi-space-size=8'])
  assert.equal(workerExecArgv([], '--max_semi_space_size=4 --no-warnings'), [])
})

/** GET /metrics → the value of one sample line (`name{labels}`), or undefined. */
async function metric(sample: string): Promise<number | undefined> {
  const text = await (await fetch(`${base}/metrics`)).text()
  const line = text.split('\n').find((l) => l.startsWith(`${sample} `))
  return line === undefined ? undefined : Number(line.slice(sample.length + 1))
}

test('GET /metrics sums the metrics of every worker', async () => {
  assert.is(await metric('mod_http_requests_total{method="POST",route="/v1/moderate",status="200"}'), 4)
  assert.ok(((await metric('mod_inference_batch_size_count')) ?? 0) >= 1)
  assert.ok(((await metric('mod_model_load_seconds')) ?? 0) > 0)
  assert.is(await metric('mod_worker_restarts_total'), 0)
  assert.is(await metric('mod_results_total{verdict="unsafe"}'), 4)
})

test('GET /metrics of a cluster: one build info sample of value 1 (not one per worker, not summed) and one sample of each process default', async () => {
  const text = await (await fetch(`${base}/metrics`)).text()
  const build = text.split('\n').filter((l) => l.startsWith('mod_build_info{'))
  assert.is(build.length, 1)
  assert.match(build[0], /^mod_build_info\{version="[^"]+",node="[^"]+",onnxruntime="[^"]+"\} 1$/)
  const memory = text.split('\n').filter((l) => l.startsWith('process_resident_memory_bytes '))
  assert.is(memory.length, 1)
  assert.ok(Number(memory[0].split(' ')[1]) > 0, memory[0])
})

const JOBS_OFF =
  'the jobs API needs MOD_REDIS_URL when mod serve runs more than one worker (2 here): each worker would keep its ' +
  'own jobs; set MOD_REDIS_URL to a Redis server, or serve with --workers 1'

test('without MOD_REDIS_URL the job routes answer 503 jobs_unavailable on every worker, and serve said so once at start', async () => {
  assert.equal(serve.lines.filter((l) => l.startsWith('job routes answer 503')), [`job routes answer 503 jobs_unavailable: ${JOBS_OFF}`])
  const id = '6f1c2a9e-4b7d-4e21-9a3f-0c5d8e7b1a24'
  const answers = []
  for (const [method, path] of [['POST', '/v1/jobs/video'], ['GET', `/v1/jobs/${id}`], ['GET', `/v1/jobs/${id}`], ['DELETE', `/v1/jobs/${id}`]]) {
    // Refused before any upload is read: the POST needs no body to show it.
    const headers: Record<string, string> = method === 'POST' ? {'content-type': 'multipart/form-data; boundary=x'} : {}
    const res = await fetch(`${base}${path}`, {method, headers})
    const json = await res.json()
    answers.push([res.status, json.error.code, json.error.message])
  }
  assert.equal(answers, Array(4).fill([503, 'jobs_unavailable', JOBS_OFF]))
})

const moderated = 'mod_http_requests_total{method="POST",route="/v1/moderate",status="200"}'

test('a crashed worker is replaced and the other keeps serving meanwhile; the sums keep what it counted', async () => {
  const [victim, survivor] = readyPids()
  // Scraped with both workers alive: the sum holds the victim's counts, which must not fall back when it dies.
  const before = (await metric(moderated)) ?? 0
  const served = (await metric('mod_results_total{verdict="unsafe"}')) ?? 0
  const seen = (await metric('mod_http_request_duration_seconds_count{method="POST",route="/v1/moderate",status="200"}')) ?? 0
  assert.ok(before >= 4, `${before}`)
  process.kill(victim, 'SIGKILL')
  await serve.waitFor(new RegExp(`^worker ${victim} exited \\(signal SIGKILL\\); starting a replacement$`))
  // A scrape while the replacement starts: the sum over the ready worker, at once (the one starting cannot answer yet).
  const scraped = Date.now()
  const scrape = await fetch(`${base}/metrics`)
  assert.is(scrape.status, 200)
  assert.match(await scrape.text(), /^mod_worker_restarts_total 1$/m)
  assert.ok(Date.now() - scraped < 2000, `scraped in ${Date.now() - scraped} ms`)
  assert.is(await metric(moderated), before)
  assert.is(await metric('mod_results_total{verdict="unsafe"}'), served)
  assert.is(await metric('mod_http_request_duration_seconds_count{method="POST",route="/v1/moderate",status="200"}'), seen)
  for (let i = 0; i < 4; i++) assert.is((await moderateRed()).status, 200)
  assert.is(await metric(moderated), before + 4)
  await until(() => readyPids().length === 3, 60_000)
  const replacement = readyPids()[2]
  assert.not.ok([victim, survivor].includes(replacement))
  process.kill(survivor, 0)
  const answers = await Promise.all([1, 2, 3, 4].map(() => moderateRed()))
  assert.ok(answers.every((a) => a.status === 200))
  assert.is(await metric('mod_worker_restarts_total'), 1)
})

test('a worker that cannot take connections (stopped) does not hold any: every client is answered by the other, also after it is killed', async () => {
  const [stopped] = livePids()
  const started = readyPids().length
  process.kill(stopped, 'SIGSTOP')
  try {
    const answers = await Promise.all([1, 2, 3, 4, 5, 6].map(() => health()))
    assert.equal(answers.map((a) => a.status), [200, 200, 200, 200, 200, 200])
  } finally {
    process.kill(stopped, 'SIGKILL')
  }
  await serve.waitFor(new RegExp(`^worker ${stopped} exited \\(signal SIGKILL\\); starting a replacement$`))
  await until(() => readyPids().length === started + 1, 60_000)
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
  assert.ok(livePids().includes(pid))
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

test('SIGTERM to the primary stops every worker gracefully and exits 0', async () => {
  // Every worker forked and not exited: the replacement of the worker killed above may still be starting, and is
  // stopped too.
  const running = () => serve.lines.flatMap((l) => /^worker (\d+) started$/.exec(l)?.[1] ?? []).map(Number).filter((pid) => !exitedPids().has(pid))
  await until(() => running().length === 2)
  const pids = running()
  serve.child.kill('SIGTERM')
  assert.is(await serve.exited, 0)
  for (const pid of pids) {
    assert.throws(() => process.kill(pid, 0), /ESRCH/)
  }
})

test('when the workers cannot load the model, the primary stops them all and exits 2', async () => {
  // A model folder whose files are all there at their recorded sizes, one of them zeros: it passes the start-up
  // check, then fails to load (in a cache of its own: a warm one holds the good file's optimised graph).
  const empty = join(dir.path, 'no-model')
  cpSync(TOY_MODEL, empty, {recursive: true})
  const encoder = join(empty, 'onnx', 'text_model.onnx')
  writeFileSync(encoder, Buffer.alloc(statSync(encoder).size))
  const failing = serveProcess(['--port', '0', '--workers', '2'], {...env, MOD_MODEL_DIR: empty, MOD_CACHE_DIR: join(dir.path, 'cold-cache')})
  try {
    assert.is(await failing.exited, 2)
    const text = failing.lines.join('\n')
    const failure = failing.records.find((r) => /^the model could not be loaded: invalid_config: cannot load .*Protobuf parsing failed/.test(r.msg))
    assert.is(failure?.level, 'error')
    assert.ok((failure?.worker ?? 0) > 0, 'logged by a worker')
    assert.match(text, /^worker \d+ could not start \(exit code 2\); stopping$/m)
    assert.not.match(text, /listening on/)
  } finally {
    failing.child.kill('SIGKILL')
  }
})

test.run()
