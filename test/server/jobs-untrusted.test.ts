// Jobs written straight into Redis (as anyone who can reach it could): the worker reads only the folder a job's
// id names under MOD_JOB_STORAGE, refuses data the server could not have written, and removes nothing else.
import {randomUUID} from 'node:crypto'
import {existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync} from 'node:fs'
import {createServer, type Server} from 'node:http'
import {join} from 'node:path'

import {Queue} from 'bullmq'
import {Redis} from 'ioredis'
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {readSettings} from '../../src/lib/config/settings.js'
import {createBullQueue} from '../../src/server/jobs/bullmq.js'
import {queueHooks} from '../../src/server/jobs/service.js'
import {callbacksUnderWay} from '../../src/server/jobs/callbacks.js'
import type {JobQueue, JobSpec} from '../../src/server/jobs/types.js'
import {startRedis, type RedisServer} from '../helpers/redis.js'
import {tempDir} from './harness.js'

const dir = tempDir('mod-jobs-untrusted-')
const storage = join(dir.path, 'jobs')
const outside = join(dir.path, 'outside')
let redis: RedisServer
let queue: JobQueue
/** The queue as an intruder writes to it: BullMQ's own client on the same Redis, or raw commands. */
let intruder: Queue
let raw: Redis
/** What the worker was asked to run: the specs, and the bytes of the file it was given. */
const ran: {spec: JobSpec; bytes: string}[] = []
const logged: string[] = []
/** A callback receiver on loopback: a job from Redis must not reach it (callbacks to private addresses are off). */
let sentinel: Server
let sentinelHits = 0

const RESULT = {source: 'clip.mp4', is_safe: true, duration: 1, fps: 1, frames_analyzed: 1, stopped_early: false, violations: [], not_evaluated: []}

/** The victim: a folder outside the job storage with a file in it. */
function victim(): string {
  mkdirSync(outside, {recursive: true})
  writeFileSync(join(outside, 'upload'), 'secret')
  mkdirSync(join(outside, 'inner'), {recursive: true})
  return outside
}

const intact = () => {
  assert.is(readFileSync(join(outside, 'upload'), 'utf8'), 'secret')
  assert.ok(existsSync(join(outside, 'inner')))
}

/** Valid data of a job with this id, as the server writes it. */
const valid = (id: string) => ({id, source: 'clip.mp4', fps: 1, minFrames: 1, stopOnViolation: false, created_at: new Date().toISOString()})

/** A job folder with its upload, as the upload route leaves it. */
function upload(id: string): string {
  const jobDir = join(storage, id)
  mkdirSync(jobDir, {recursive: true})
  writeFileSync(join(jobDir, 'upload'), `video of ${id}`)
  return jobDir
}

/** Waits until BullMQ has finished the job; its outcome as the worker returned it. */
async function outcome(id: string): Promise<any> {
  const end = Date.now() + 20_000
  for (;;) {
    const state = await intruder.getJobState(id)
    if (state === 'completed') return (await intruder.getJob(id))?.returnvalue
    if (Date.now() > end) throw new Error(`job ${id} still ${state}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

const REFUSED = {status: 'failed', error: {code: 'internal', message: 'the job was not run: its data in the queue is not valid'}}

test.before(async () => {
  mkdirSync(storage)
  redis = await startRedis()
  sentinel = createServer((_req, res) => {
    sentinelHits++
    res.end()
  })
  await new Promise<void>((resolve) => sentinel.listen(0, '127.0.0.1', resolve))
  const {jobs} = readSettings({}, {MOD_JOB_STORAGE: storage, MOD_REDIS_URL: redis.url}).server
  const log = (line: string) => logged.push(line)
  queue = createBullQueue({
    ...queueHooks(jobs, log, callbacksUnderWay(), {callback: {attempts: 1}}),
    url: redis.url,
    storage,
    limit: 10,
    ttlSeconds: 60,
    log,
  })
  queue.work(async (spec) => {
    ran.push({spec, bytes: readFileSync(spec.file, 'utf8')})
    return RESULT
  })
  intruder = new Queue('mod-video-jobs', {connection: {host: '127.0.0.1', port: redis.port}})
  raw = new Redis(redis.url)
})

test.before.each(() => {
  ran.length = 0
  logged.length = 0
  victim()
})

test.after(async () => {
  await queue.close()
  await intruder.close()
  raw.disconnect()
  sentinel.close()
  await redis.remove()
  dir.remove()
})

test('a job naming a folder and an upload outside the storage is refused: not run, nothing read or removed', async () => {
  const id = randomUUID()
  await intruder.add('video', {...valid(id), dir: outside, file: join(outside, 'upload')}, {jobId: id})
  assert.equal(await outcome(id), REFUSED)
  assert.equal(ran, [])
  intact()
  assert.is(await queue.get(id), undefined, 'GET answers 404')
  assert.ok(logged.some((l) => l.includes(`job "${id}" in the queue was refused: its folder is not ${join(storage, id)}`)), logged.join('\n'))
})

test('paths with .. that lead out of the storage, and an id that is a path, are refused', async () => {
  const id = randomUUID()
  const dotted = {...valid(id), dir: join(storage, id, '..', '..', 'outside'), file: join(storage, id, '..', '..', 'outside', 'upload')}
  await intruder.add('video', dotted, {jobId: id})
  assert.equal(await outcome(id), REFUSED)
  for (const bad of ['../outside', '../../outside', outside, `${randomUUID()}/../../outside`]) {
    await intruder.add('video', valid(bad), {jobId: bad})
    assert.equal(await outcome(bad), REFUSED, bad)
  }
  assert.equal(ran, [])
  intact()
  assert.equal(readdirSync(storage), [])
})

test('a queued job whose data is overwritten in Redis to name another folder is refused, its own files kept', async () => {
  const id = randomUUID()
  const own = upload(id)
  // Queued while no worker runs: this is the moment an intruder rewrites it.
  await intruder.pause()
  await queue.submit({id, source: 'clip.mp4', dir: own, file: join(own, 'upload'), fps: 1, minFrames: 1, stopOnViolation: false})
  const stored = JSON.parse((await raw.hget(`bull:mod-video-jobs:${id}`, 'data')) ?? '{}')
  assert.equal(Object.keys(stored).sort(), ['created_at', 'fps', 'id', 'minFrames', 'source', 'stopOnViolation'], 'Redis holds no paths')
  await raw.hset(`bull:mod-video-jobs:${id}`, 'data', JSON.stringify({...stored, dir: outside}))
  await intruder.resume()
  assert.equal(await outcome(id), REFUSED)
  assert.equal(ran, [])
  intact()
  assert.ok(existsSync(join(own, 'upload')), 'a refused job removes nothing, not even its own folder')
})

test('fields out of their range or of the wrong type are refused', async () => {
  const cases: Record<string, unknown>[] = [
    {fps: 1e9},
    {fps: '1'},
    {fps: null},
    {minFrames: 0},
    {minFrames: 1.5},
    {stopOnViolation: 'yes'},
    {callbackUrl: 'file:///etc/passwd'},
    {callbackUrl: 42},
    {source: {name: 'x'}},
    {created_at: 'yesterday'},
    {deleted: 'yes'},
    {shell: 'rm -rf /'},
  ]
  for (const change of cases) {
    const id = randomUUID()
    upload(id)
    await intruder.add('video', {...valid(id), ...change}, {jobId: id})
    assert.equal(await outcome(id), REFUSED, JSON.stringify(change))
    assert.ok(existsSync(join(storage, id, 'upload')), JSON.stringify(change))
  }
  for (const data of [null, 'text', [1, 2]]) {
    const id = randomUUID()
    await intruder.add('video', data as never, {jobId: id})
    assert.equal(await outcome(id), REFUSED, JSON.stringify(data))
  }
  assert.equal(ran, [])
})

test('a job folder that is a link out of the storage is not read and not removed through', async () => {
  const id = randomUUID()
  symlinkSync(outside, join(storage, id))
  await intruder.add('video', valid(id), {jobId: id})
  const end = await outcome(id)
  assert.is(end.status, 'failed')
  assert.is(end.error.code, 'internal')
  assert.equal(ran, [])
  intact()
  assert.ok(lstatSync(join(storage, id)).isSymbolicLink(), 'the link itself is left alone')
  assert.ok(logged.some((l) => l.includes(`job ${id}: its upload is not a file in ${join(storage, id)}`)), logged.join('\n'))
})

test('an upload that is a link out of the storage is not read; the job folder is removed, the link target kept', async () => {
  const id = randomUUID()
  mkdirSync(join(storage, id))
  symlinkSync(join(outside, 'upload'), join(storage, id, 'upload'))
  await intruder.add('video', valid(id), {jobId: id})
  assert.is((await outcome(id)).status, 'failed')
  assert.equal(ran, [])
  intact()
  assert.is(existsSync(join(storage, id)), false)
})

test('a valid job runs on the upload its id names, also one queued with its paths spelled out (earlier versions)', async () => {
  const a = randomUUID()
  const b = randomUUID()
  upload(a)
  upload(b)
  await intruder.add('video', valid(a), {jobId: a})
  await intruder.add('video', {...valid(b), dir: join(storage, b), file: join(storage, b, 'upload')}, {jobId: b})
  assert.is((await outcome(a)).status, 'done')
  assert.is((await outcome(b)).status, 'done')
  assert.equal(
    ran.map((r) => [r.spec.dir, r.spec.file, r.bytes]),
    [
      [join(storage, a), join(storage, a, 'upload'), `video of ${a}`],
      [join(storage, b), join(storage, b, 'upload'), `video of ${b}`],
    ],
  )
  assert.is(existsSync(join(storage, a)), false)
  assert.is(existsSync(join(storage, b)), false)
  assert.is((await queue.get(a))?.status, 'done')
})

test('a callback URL from Redis goes through the address checks: a loopback receiver is never called', async () => {
  const id = randomUUID()
  upload(id)
  const {port} = sentinel.address() as {port: number}
  await intruder.add('video', {...valid(id), callbackUrl: `http://127.0.0.1:${port}/hook`}, {jobId: id})
  assert.is((await outcome(id)).status, 'done')
  const end = Date.now() + 10_000
  while (!logged.some((l) => l.includes('callback')) && Date.now() < end) await new Promise((resolve) => setTimeout(resolve, 20))
  assert.equal(
    logged.filter((l) => l.includes('callback')),
    [
      `job ${id}: the callback could not be delivered: url_blocked: the callback URL http://127.0.0.1:${port} is a loopback address; only public addresses are called (MOD_CALLBACK_ALLOW_PRIVATE)`,
    ],
  )
  assert.is(sentinelHits, 0)
})

test('what Redis holds of a job besides its data (its outcome) is answered only if it is a job', async () => {
  const id = randomUUID()
  upload(id)
  await intruder.add('video', valid(id), {jobId: id})
  assert.is((await outcome(id)).status, 'done')
  assert.is((await queue.get(id))?.status, 'done')
  await raw.hset(`bull:mod-video-jobs:${id}`, 'returnvalue', JSON.stringify({status: 'done', result: {is_safe: 'maybe'}, injected: true}))
  assert.is(await queue.get(id), undefined)
  assert.ok(logged.some((l) => l.includes(`job "${id}" in the queue was not answered: what the queue holds of it is not valid`)), logged.join('\n'))
})

test('the server refuses to queue a job whose files are not where its id puts them', async () => {
  const id = randomUUID()
  try {
    await queue.submit({id, source: 'clip.mp4', dir: outside, file: join(outside, 'upload'), fps: 1, minFrames: 1, stopOnViolation: false})
    assert.unreachable()
  } catch (e) {
    assert.is((e as {code?: string}).code, 'internal')
  }
  assert.is(await intruder.getJob(id), undefined)
})

test.run()
