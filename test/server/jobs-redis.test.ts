// The jobs API on BullMQ with a real redis-server: the same suite as the in-process queue.
import {mkdirSync} from 'node:fs'
import {join} from 'node:path'

import {Redis} from 'ioredis'

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
