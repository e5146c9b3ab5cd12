// The jobs API on BullMQ with a real redis-server: the same suite as the in-process queue, and a job's callback body
// against what a read of the job answers after it.
import {randomUUID} from 'node:crypto'
import {mkdirSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {Redis} from 'ioredis'
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {createBullQueue} from '../../src/server/jobs/bullmq.js'
import type {JobBody} from '../../src/server/jobs/schema.js'
import {jobPaths} from '../../src/server/jobs/storage.js'
import {entriesNaming, startRedis, type RedisServer} from '../helpers/redis.js'
import {start, tempDir, testSettings, toyEngine, type Running} from './harness.js'
import {warmCacheDir} from '../helpers/warm-cache.js'
import {holdingEngine, jobsSuite, type JobsTarget} from './jobs/suite.js'

const dir = tempDir('mod-server-jobs-redis-')
const storage = join(dir.path, 'jobs')
mkdirSync(storage)
const settings = testSettings(warmCacheDir(join(dir.path, 'cache')))
const engine = toyEngine(settings)
let redis: RedisServer
let holdingRedis: RedisServer
let real: Running
let holding: Running
let target: JobsTarget
let clients: Redis[]

/** What either Redis server still holds of the job. */
async function stored(id: string): Promise<string[]> {
  return (await Promise.all(clients.map((client) => entriesNaming(client, id)))).flat()
}

const api = jobsSuite('jobs API, BullMQ on Redis', () => target)

api.before(async () => {
  ;[redis, holdingRedis] = await Promise.all([startRedis(), startRedis()])
  clients = [new Redis(redis.url), new Redis(holdingRedis.url)]
  await engine.load()
  real = await start(engine, {...settings, jobs: {...settings.jobs, storage, redisUrl: redis.url}}, {tmpDir: dir.path})
})
api.before.each(async () => {
  const held = holdingEngine()
  const jobs = {...settings.jobs, storage, redisUrl: holdingRedis.url}
  holding = await start(held.engine, {...settings, jobs, limits: {...settings.limits, queueLimit: 1}}, {tmpDir: dir.path})
  target = {base: real.base, holding: {base: holding.base, ...held}, storage, scratch: dir.path, stored}
})
api.after.each(async () => {
  target.holding.release()
  await holding.stop()
})
api.after(async () => {
  await real.stop()
  await engine.close()
  for (const client of clients) client.disconnect()
  await Promise.all([redis.remove(), holdingRedis.remove()])
  dir.remove()
})

api.run()

test('the job a callback reports is the job a read answers after it, to its updated_at', async () => {
  // A Redis, a worker and a storage of its own: the servers above take every job on theirs, and are gone.
  const own = await startRedis()
  const ownDir = tempDir('mod-server-jobs-redis-end-')
  const ends: JobBody[] = []
  const queue = createBullQueue({
    url: own.url,
    storage: ownDir.path,
    limit: 10,
    ttlSeconds: 60,
    log: () => {},
    describeError: () => ({code: 'internal', message: 'x'}),
    onEnd: (body) => ends.push(body),
  })
  try {
    queue.work(async (spec) => ({source: spec.source, is_safe: true, duration: 1, fps: 1, frames_analyzed: 1, stopped_early: false, violations: [], not_evaluated: []}))
    const id = randomUUID()
    const paths = jobPaths(ownDir.path, id)
    mkdirSync(paths.dir)
    writeFileSync(paths.file, 'video')
    await queue.submit({id, source: 'a.mp4', ...paths, fps: 1, minFrames: 1, stopOnViolation: false})
    let read = await queue.get(id)
    for (const end = Date.now() + 10_000; read?.status !== 'done' && Date.now() < end; read = await queue.get(id)) {
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    assert.equal(read, ends[0])
  } finally {
    await queue.close()
    await own.remove()
    ownDir.remove()
  }
})

test.run()
