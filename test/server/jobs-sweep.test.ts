// Job folders whose job the queue no longer has (lost with a Redis that kept nothing) are removed once old;
// nothing else in the job storage is ever touched.
import {randomUUID} from 'node:crypto'
import {existsSync, lstatSync, lutimesSync, mkdirSync, readdirSync, readFileSync, symlinkSync, utimesSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {Queue} from 'bullmq'
import {Redis} from 'ioredis'
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {createBullQueue} from '../../src/server/jobs/bullmq.js'
import {jobPaths} from '../../src/server/jobs/storage.js'
import {sweepJobFolders} from '../../src/server/jobs/sweep.js'
import type {JobQueue} from '../../src/server/jobs/types.js'
import {entriesNaming, startRedis, type RedisServer} from '../helpers/redis.js'
import {tempDir} from './harness.js'

const dir = tempDir('mod-jobs-sweep-')
const HOUR = 3600_000
const NOW = Date.now()
let n = 0

/** A fresh storage folder and, beside it, a folder that must survive. */
function place() {
  const base = join(dir.path, String(n++))
  const storage = join(base, 'jobs')
  const outside = join(base, 'outside')
  mkdirSync(storage, {recursive: true})
  mkdirSync(outside)
  writeFileSync(join(outside, 'keep'), 'keep')
  return {storage, outside}
}

/** Sets the modification time of each path to `ms` ago. */
function age(ms: number, ...paths: string[]) {
  const when = new Date(NOW - ms)
  for (const p of paths) utimesSync(p, when, when)
}

/** A job folder with its upload, last changed `ms` ago. */
function jobFolder(storage: string, ms: number, id = randomUUID()): string {
  const folder = join(storage, id)
  mkdirSync(folder)
  writeFileSync(join(folder, 'upload'), 'video')
  age(ms, join(folder, 'upload'), folder)
  return id
}

test('old folders of unknown jobs are removed; known, recent and still-written ones stay', async () => {
  const {storage} = place()
  const orphan = jobFolder(storage, 2 * HOUR)
  const known = jobFolder(storage, 2 * HOUR)
  const recent = jobFolder(storage, HOUR / 2)
  // An old folder whose upload is still being written.
  const writing = jobFolder(storage, 2 * HOUR)
  age(0, join(storage, writing, 'upload'))
  const asked: string[] = []
  const removed = await sweepJobFolders({
    storage,
    graceMs: HOUR,
    now: NOW,
    isKnown: async (id) => {
      asked.push(id)
      return id === known
    },
  })
  assert.equal(removed, [orphan])
  assert.equal(readdirSync(storage).sort(), [known, recent, writing].sort())
  assert.equal(asked.sort(), [orphan, known].sort(), 'only old folders cost a query')
})

test('nothing but a folder named by a job id is touched: other names, files, links and what links point to', async () => {
  const {storage, outside} = place()
  const linkId = randomUUID()
  const fileId = randomUUID()
  mkdirSync(join(storage, 'not-a-job'))
  writeFileSync(join(storage, fileId), 'a file named like a job')
  symlinkSync(outside, join(storage, linkId))
  mkdirSync(join(storage, randomUUID().toUpperCase()))
  // A job folder holding a link out of the storage: the folder goes, the link's target stays.
  const orphan = jobFolder(storage, 2 * HOUR)
  symlinkSync(outside, join(storage, orphan, 'link'))
  lutimesSync(join(storage, orphan, 'link'), new Date(NOW - 2 * HOUR), new Date(NOW - 2 * HOUR))
  age(2 * HOUR, join(storage, orphan))
  for (const name of readdirSync(storage)) {
    const when = new Date(NOW - 2 * HOUR)
    const path = join(storage, name)
    if (lstatSync(path).isSymbolicLink()) continue
    utimesSync(path, when, when)
  }
  const before = readdirSync(storage).filter((name) => name !== orphan).sort()
  const removed = await sweepJobFolders({storage, graceMs: HOUR, now: NOW, isKnown: async () => false})
  assert.equal(removed, [orphan])
  assert.equal(readdirSync(storage).sort(), before)
  assert.equal(readdirSync(outside), ['keep'])
  assert.is(readFileSync(join(outside, 'keep'), 'utf8'), 'keep')
})

test('when the queue cannot say whether a job exists, nothing is removed', async () => {
  const {storage} = place()
  const orphan = jobFolder(storage, 2 * HOUR)
  try {
    await sweepJobFolders({storage, graceMs: HOUR, now: NOW, isKnown: async () => Promise.reject(new Error('redis away'))})
    assert.unreachable()
  } catch (e) {
    assert.is((e as Error).message, 'redis away')
  }
  assert.equal(readdirSync(storage), [orphan])
})

test('a missing storage folder is no error', async () => {
  assert.equal(await sweepJobFolders({storage: join(dir.path, 'none'), graceMs: HOUR, isKnown: async () => false}), [])
})

let redis: RedisServer
let queue: JobQueue | undefined

test('a worker on Redis sweeps at start and then periodically, keeping the folders of jobs the queue has', async () => {
  redis = await startRedis()
  const {storage, outside} = place()
  // A job the queue has but that does not run yet (delayed), and two left by jobs Redis lost.
  const waiting = jobFolder(storage, 2 * HOUR)
  const other = new Queue('mod-video-jobs', {connection: {host: '127.0.0.1', port: redis.port}})
  await other.add('video', {}, {jobId: waiting, delay: HOUR})
  // An image job's uploads wait in the same storage: its record in Redis keeps them.
  const images = jobFolder(storage, 2 * HOUR)
  const raw = new Redis(redis.url)
  await raw.hset(`mod:imagejob:${images}`, 'id', images)
  raw.disconnect()
  const lost = jobFolder(storage, 2 * HOUR)
  const logged: string[] = []
  queue = createBullQueue({
    url: redis.url,
    storage,
    limit: 10,
    ttlSeconds: 60,
    log: (line) => logged.push(line),
    describeError: () => ({code: 'internal', message: 'x'}),
    sweepGraceMs: HOUR,
    sweepIntervalMs: 50,
  })
  queue.work(async () => Promise.reject(new Error('no job runs here')))
  // The sweep logs once its removals are done: wait for the line, not only for the folder to go.
  await until(() => !existsSync(join(storage, lost)) && logged.length > 0)
  assert.equal(logged, ['job storage: removed 1 folder(s) of jobs the queue no longer has'])
  // Lost after the worker started: found by a later sweep.
  const later = jobFolder(storage, 2 * HOUR)
  await until(() => !existsSync(join(storage, later)))
  assert.equal(readdirSync(storage).sort(), [waiting, images].sort())
  assert.equal(readdirSync(outside), ['keep'])
  await other.close()
})

test('a worker on Redis removes the jobs that ended more than MOD_JOB_TTL ago, also when no later job ends', async () => {
  // A Redis of its own: the earlier test's worker, still running, would take the job and fail it.
  const own = await startRedis()
  const {storage} = place()
  const ended = createBullQueue({
    url: own.url,
    storage,
    limit: 10,
    ttlSeconds: 1,
    log: () => {},
    describeError: () => ({code: 'internal', message: 'x'}),
    sweepIntervalMs: 50,
  })
  try {
    ended.work(async (spec) => ({source: spec.source, is_safe: true, duration: 1, fps: 1, frames_analyzed: 1, stopped_early: false, violations: [], not_evaluated: []}))
    const id = randomUUID()
    const paths = jobPaths(storage, id)
    mkdirSync(paths.dir)
    writeFileSync(paths.file, 'video')
    await ended.submit({id, source: 'a.mp4', ...paths, fps: 1, minFrames: 1, stopOnViolation: false, callbackUrl: 'https://hooks.example/x'})
    await untilAsync(async () => (await ended.get(id))?.status === 'done')
    // Unanswered once its MOD_JOB_TTL is over, and then gone from Redis: its name, callback URL and result with it.
    const raw = new Redis(own.url)
    try {
      await untilAsync(async () => (await raw.exists(`bull:mod-video-jobs:${id}`)) === 0)
      assert.equal(await entriesNaming(raw, id), [])
    } finally {
      raw.disconnect()
    }
  } finally {
    await ended.close()
    await own.remove()
  }
})

async function untilAsync(done: () => Promise<boolean>): Promise<void> {
  const end = Date.now() + 10_000
  while (!(await done())) {
    if (Date.now() > end) throw new Error('not done in time')
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

async function until(done: () => boolean): Promise<void> {
  const end = Date.now() + 10_000
  while (!done()) {
    if (Date.now() > end) throw new Error('not done in time')
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

test.after(async () => {
  await queue?.close()
  await redis?.remove()
  dir.remove()
})

test.run()
