// A `mod serve` started before its Redis (the usual order of `compose up`): its job routes answer 503 while Redis
// is not there, and take jobs once it is, without a restart; and one whose Redis went away still stops.
import {randomUUID} from 'node:crypto'
import {mkdirSync} from 'node:fs'
import {join} from 'node:path'

import {Redis} from 'ioredis'
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {freePort, startRedis, type RedisServer} from '../helpers/redis.js'
import {warmCacheDir} from '../helpers/warm-cache.js'
import {blue, call, errorOf, form, start, tempDir, testSettings, toyEngine, type Running} from './harness.js'

const dir = tempDir('mod-jobs-redis-late-')
const storage = join(dir.path, 'jobs')
mkdirSync(storage)
const settings = testSettings(warmCacheDir(join(dir.path, 'cache')))
const engine = toyEngine(settings)
let redis: RedisServer | undefined
let server: Running

test.after(async () => {
  await server.stop()
  await engine.close()
  await redis?.remove()
  dir.remove()
})

test('a server started before its Redis takes image and video jobs once Redis is up, and runs them; /health says whether it reaches Redis', async () => {
  await engine.load()
  const port = await freePort()
  server = await start(engine, {...settings, jobs: {...settings.jobs, storage, redisUrl: `redis://127.0.0.1:${port}`}}, {tmpDir: dir.path})
  const image = async () => call(`${server.base}/v1/jobs/images`, {method: 'POST', body: form('files', [{name: 'b.png', data: await blue()}])})
  const video = () => call(`${server.base}/v1/jobs/video`, {method: 'POST', body: form('file', [{name: 'v.mp4', data: 'not a video'}])})
  assert.equal(errorOf(await image()), {status: 503, code: 'overloaded'})
  assert.equal(errorOf(await video()), {status: 503, code: 'overloaded'})
  // The probes: ready (the synchronous API works), and /health says where the jobs are.
  assert.is((await call(`${server.base}/ready`)).status, 200)
  assert.is((await call(`${server.base}/health`)).body.jobs, 'redis_unreachable')
  redis = await startRedis({port})
  let accepted = await image()
  const end = Date.now() + 10_000
  while (accepted.status !== 202 && Date.now() < end) {
    await new Promise((resolve) => setTimeout(resolve, 200))
    accepted = await image()
  }
  assert.is(accepted.status, 202, `still ${accepted.status} 10 s after Redis came up`)
  // /health says redis once both job queues reach it: the video queue's connection may come back after the image one's.
  let jobs = (await call(`${server.base}/health`)).body.jobs
  while (jobs !== 'redis' && Date.now() < end) {
    await new Promise((resolve) => setTimeout(resolve, 200))
    jobs = (await call(`${server.base}/health`)).body.jobs
  }
  assert.is(jobs, 'redis')
  // The server's own worker takes the job's chunk.
  let job = accepted.body
  while (job.status !== 'done' && Date.now() < end + 10_000) {
    await new Promise((resolve) => setTimeout(resolve, 100))
    job = (await call(`${server.base}/v1/jobs/${accepted.body.id}`)).body
  }
  assert.equal([job.status, job.progress.items_done], ['done', 1])
  // The video queue's own BullMQ queue is back too: the upload is read (and refused for what it is, not for Redis).
  assert.is.not(errorOf(await video()).code, 'overloaded')
})

test('a server whose Redis went away stops when asked, instead of waiting for ever on the job queues\' commands', async () => {
  const own = await startRedis()
  const running = await start(engine, {...settings, jobs: {...settings.jobs, storage, redisUrl: own.url}}, {tmpDir: dir.path})
  await own.remove()
  // Past a Redis command's 2 s, as a rollout during an outage finds it, just after a probe of the server.
  await new Promise((resolve) => setTimeout(resolve, 3000))
  assert.is((await call(`${running.base}/health`)).body.jobs, 'redis_unreachable')
  // A deadline for a hang, not a timing: the stop waits a Redis command's 2 s at most.
  const hung = new Promise<string>((resolve) => setTimeout(() => resolve('still stopping after 30 s'), 30_000).unref())
  assert.is(await Promise.race([running.stop().then(() => 'stopped'), hung]), 'stopped')
})

test('/health says redis_unreachable while Redis answers nothing on an open connection (paused), and redis once it answers again', async () => {
  const own = await startRedis()
  const admin = new Redis(own.url)
  const running = await start(engine, {...settings, jobs: {...settings.jobs, storage, redisUrl: own.url}}, {tmpDir: dir.path})
  const jobs = async () => (await call(`${running.base}/health`)).body.jobs
  const until = async (want: string, ms: number) => {
    const end = Date.now() + ms
    let got = await jobs()
    while (got !== want && Date.now() < end) {
      await new Promise((resolve) => setTimeout(resolve, 100))
      got = await jobs()
    }
    return got
  }
  try {
    assert.is(await until('redis', 10_000), 'redis')
    // Every client's commands wait, the connections stay open: as a stalled Redis, or a partition that sends no reset.
    await admin.client('PAUSE', 6000, 'ALL')
    const paused = Date.now()
    assert.is(await until('redis_unreachable', 3500), 'redis_unreachable')
    // The job routes say the same meanwhile.
    assert.equal(errorOf(await call(`${running.base}/v1/jobs/${randomUUID()}`)), {status: 503, code: 'overloaded'})
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, 6000 - (Date.now() - paused))))
    assert.is(await until('redis', 10_000), 'redis')
  } finally {
    await running.stop()
    admin.disconnect()
    await own.remove()
  }
})

test.run()
