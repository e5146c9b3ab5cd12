// Bulk image jobs on Redis with three worker processes: every item has exactly one line in manifest order, also
// when a worker is killed between scoring a chunk and recording it, and when Redis (appendonly, fsync always) is
// killed and restarted mid-job.
import {spawn, type ChildProcess} from 'node:child_process'
import {randomUUID} from 'node:crypto'
import {mkdirSync} from 'node:fs'
import {readdir} from 'node:fs/promises'
import {join} from 'node:path'

import {Redis} from 'ioredis'
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {entriesNaming, startRedis, type RedisServer} from '../helpers/redis.js'
import {nodeArgs} from '../helpers/ts-script.js'
import {warmCacheDir} from '../helpers/warm-cache.js'
import {
  blue,
  call,
  callbackReceiver,
  errorOf,
  form,
  red,
  serveProcess,
  signature,
  start,
  tempDir,
  testSettings,
  TOY_MODEL,
  toyEngine,
  writeRednessPolicy,
  type Running,
} from './harness.js'

const dir = tempDir('mod-jobs-images-redis-')
const storage = join(dir.path, 'jobs')
mkdirSync(storage)
const cacheDir = warmCacheDir(join(dir.path, 'cache'))
const SECRET = 'image-jobs-secret'
let redis: RedisServer
let server: Running
const children: ChildProcess[] = []
const engine = toyEngine(testSettings(cacheDir))

/** A worker process; `printed` resolves once a line of its output matches. */
function worker() {
  const child = spawn(process.execPath, [...nodeArgs(join(import.meta.dirname, 'jobs', 'image-worker.ts')), redis.url, storage, cacheDir, '150'], {
    stdio: ['ignore', 'pipe', 'ignore'],
  })
  children.push(child)
  const lines: string[] = []
  const waiting = new Set<() => void>()
  let rest = ''
  child.stdout?.setEncoding('utf8').on('data', (d: string) => {
    const parts = (rest + d).split('\n')
    rest = parts.pop() ?? ''
    lines.push(...parts)
    for (const w of waiting) w()
  })
  const printed = (pattern: RegExp) =>
    new Promise<string>((resolve) => {
      const check = () => {
        const found = lines.find((l) => pattern.test(l))
        if (found === undefined) return
        waiting.delete(check)
        resolve(found)
      }
      waiting.add(check)
      check()
    })
  const killed = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return
    const exited = new Promise((resolve) => child.once('exit', resolve))
    child.kill('SIGKILL')
    return exited
  }
  return {lines, printed, killed}
}

test.before(async () => {
  redis = await startRedis({appendonly: true})
  const settings = testSettings(cacheDir)
  server = await start(engine, {...settings, jobs: {...settings.jobs, storage, redisUrl: redis.url, serveJobs: false, callbackAllowPrivate: true}}, {tmpDir: dir.path})
})

test.after(async () => {
  for (const c of children) c.kill('SIGKILL')
  await server.stop()
  await redis.remove()
  dir.remove()
})

// 5 chunks of 32 on three workers: the killed worker's chunk is held by its lock for a second, so the job is still
// running when Redis dies, and chunks are left to run after Redis comes back.
const ITEMS = 160
const CHUNKS = 5

test(`${ITEMS} uploaded images on three workers, one killed mid-chunk and Redis killed mid-job: each item has exactly one line`, async () => {
  const workers = [worker(), worker(), worker()]
  try {
    await killedRedisJob(workers)
  } finally {
    // Left running after a failure, they would take the chunks of the later tests' jobs.
    await Promise.all(workers.map((w) => w.killed()))
  }
})

async function killedRedisJob(workers: ReturnType<typeof worker>[]): Promise<void> {
  await Promise.all(workers.map((w) => w.printed(/^ready$/)))
  const [redPng, bluePng] = await Promise.all([red(), blue()])
  const files = Array.from({length: ITEMS}, (_, i) => ({name: `${i}.png`, data: i % 5 === 0 ? redPng : bluePng}))
  const r = await call(`${server.base}/v1/jobs/images`, {method: 'POST', body: form('files', files)})
  assert.is(r.status, 202)
  const id: string = r.body.id
  assert.is(r.body.progress.chunks_total, CHUNKS)

  // The first worker to score a chunk dies before recording it.
  const victim = await Promise.race(workers.map((w, i) => w.printed(/^scored /).then(() => i)))
  await workers[victim].killed()
  // Redis dies once some chunks are recorded and comes back with what it acknowledged.
  let job = r.body
  while (job.progress.chunks_done < 2) {
    await new Promise((resolve) => setTimeout(resolve, 20))
    job = (await call(`${server.base}/v1/jobs/${id}`)).body
  }
  assert.is(job.status, 'running')
  await redis.stop('SIGKILL')
  assert.equal(errorOf(await call(`${server.base}/v1/jobs/${id}`)), {status: 503, code: 'overloaded'})
  await redis.restart()

  const end = Date.now() + 30_000
  while (job.status !== 'done' && Date.now() < end) {
    await new Promise((resolve) => setTimeout(resolve, 50))
    const polled = await call(`${server.base}/v1/jobs/${id}`)
    if (polled.status === 200) job = polled.body
  }
  assert.equal([job.status, job.progress], ['done', {items_done: ITEMS, items_total: ITEMS, chunks_done: CHUNKS, chunks_total: CHUNKS}])
  const res = await fetch(`${server.base}/v1/jobs/${id}/results`)
  assert.is(res.headers.get('x-mod-job-status'), 'done')
  const lines = (await res.text()).trimEnd().split('\n').map((l) => JSON.parse(l))
  assert.equal(lines.map((l) => l.index), [...Array(ITEMS).keys()])
  assert.equal(lines.map((l) => l.source), files.map((f) => f.name))
  assert.equal(lines.map((l) => l.is_safe), files.map((_, i) => i % 5 !== 0))
  // Some chunk was scored more than once (the killed worker's, at least), yet recorded once.
  const scored = workers.flatMap((w) => w.lines.filter((l) => l.startsWith('scored ')))
  assert.ok(scored.length > CHUNKS, `${scored.length} chunks scored`)
  const client = new Redis(redis.url)
  assert.is(await client.hlen(`mod:imagejob:${id}:lines`), ITEMS)
  client.disconnect()
  // The worker that records the last chunk removes the job's uploads just after the job shows done.
  const emptied = Date.now() + 5000
  while ((await readdir(storage)).length > 0 && Date.now() < emptied) await new Promise((resolve) => setTimeout(resolve, 20))
  assert.equal(await readdir(storage), [])
}

test('DELETE of a queued job drops its chunks: nothing of it stays in Redis or in the storage', async () => {
  const files = Array.from({length: 70}, (_, i) => ({name: `${i}.png`, data: 'x'}))
  const r = await call(`${server.base}/v1/jobs/images`, {method: 'POST', body: form('files', files)})
  assert.equal([r.status, r.body.status], [202, 'queued'])
  const deleted = await call(`${server.base}/v1/jobs/${r.body.id}`, {method: 'DELETE'})
  assert.equal([deleted.status, deleted.body.status, deleted.body.progress.chunks_total], [200, 'cancelled', 3])
  assert.equal(errorOf(await call(`${server.base}/v1/jobs/${r.body.id}/results`)), {status: 404, code: 'not_found'})
  const client = new Redis(redis.url)
  assert.equal(await entriesNaming(client, r.body.id), [])
  client.disconnect()
  assert.equal(await readdir(storage), [])
})

test('a job record in Redis that is not one this server wrote is not answered', async () => {
  const id = randomUUID()
  const client = new Redis(redis.url)
  await client.hset(`mod:imagejob:${id}`, {id, total: 'lots', chunks: '1', created_at: 'then', updated_at: 'now'})
  client.disconnect()
  assert.equal(errorOf(await call(`${server.base}/v1/jobs/${id}`)), {status: 404, code: 'not_found'})
})

test('mod worker runs the chunks of an image job accepted elsewhere and sends the signed callback', async () => {
  const receiver = await callbackReceiver()
  const modWorker = serveProcess(
    [],
    {
      MOD_CACHE_DIR: cacheDir,
      MOD_MODEL_DIR: TOY_MODEL,
      MOD_CONFIG: writeRednessPolicy(dir.path),
      MOD_REDIS_URL: redis.url,
      MOD_JOB_STORAGE: storage,
      MOD_CALLBACK_SECRET: SECRET,
      MOD_CALLBACK_ALLOW_PRIVATE: 'true',
    },
    'worker',
  )
  children.push(modWorker.child)
  await modWorker.waitFor(/taking jobs from redis:/)
  const [redPng, bluePng] = await Promise.all([red(), blue()])
  const files = Array.from({length: 40}, (_, i) => ({name: `${i}.png`, data: i < 20 ? redPng : bluePng}))
  const r = await call(`${server.base}/v1/jobs/images?callback_url=${encodeURIComponent(receiver.url)}`, {method: 'POST', body: form('files', files)})
  assert.is(r.status, 202)
  const callback = await receiver.callbackFor(r.body.id)
  assert.equal(receiver.received, [callback])
  assert.is(callback.signature, signature(SECRET, callback.body))
  const job = JSON.parse(callback.body)
  assert.equal([job.id, job.status, job.progress.items_done], [r.body.id, 'done', 40])
  const lines = (await (await fetch(`${server.base}/v1/jobs/${r.body.id}/results?offset=15`)).text()).trimEnd().split('\n').map((l) => JSON.parse(l))
  assert.equal(lines.map((l) => [l.index, l.is_safe]), files.slice(15).map((_, i) => [15 + i, 15 + i >= 20]))
  // A done job leaves its client's set of jobs not done: every job of this file has ended, so no client's set is
  // left (each address's set, holding its last job, stayed in Redis for good).
  const client = new Redis(redis.url)
  const naming = await entriesNaming(client, r.body.id)
  const clientSets = await client.keys('mod:imagejobs:client:*')
  client.disconnect()
  assert.equal(naming.filter((key) => key.startsWith('mod:imagejobs:client:')), [])
  assert.equal(clientSets, [])
  modWorker.child.kill('SIGTERM')
  assert.is(await modWorker.exited, 0)
  await receiver.close()
})

test.run()
