// The per-client job limit (MOD_MAX_JOBS_PER_CLIENT, 4) cannot be raced: 32 image-job uploads sent at once from one
// address get exactly 4 accepted, on the in-process queue and on Redis. No chunk runs here, so no accepted job ends
// while the others are counted.
import {readdir} from 'node:fs/promises'
import {join} from 'node:path'

import {Redis} from 'ioredis'
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {createMemoryImageQueue} from '../../src/server/jobs/images/memory.js'
import {startRedis, type RedisServer} from '../helpers/redis.js'
import {call, concurrentJobUploads, errorOf, fakeEngine, form, red, start, tempDir, testSettings, type Running} from './harness.js'

const dir = tempDir('mod-jobs-admission-')
const settings = testSettings(join(dir.path, 'cache'))
let redis: RedisServer
let inProcess: Running
let onRedis: Running

const storageOf = (name: string) => join(dir.path, name)

test.before(async () => {
  redis = await startRedis()
  const jobs = (name: string) => ({...settings.jobs, storage: storageOf(name), images: {...settings.jobs.images, maxPerClient: 4}})
  // An in-process queue that runs nothing: its jobs stay queued.
  const queue = createMemoryImageQueue({storage: storageOf('memory'), ttlSeconds: 60, maxPerClient: 4, describeError: () => ({code: 'internal', message: 'x'})})
  ;[inProcess, onRedis] = await Promise.all([
    start(fakeEngine(), {...settings, jobs: jobs('memory')}, {tmpDir: dir.path, imageJobs: queue}),
    start(fakeEngine(), {...settings, jobs: {...jobs('redis'), redisUrl: redis.url, serveJobs: false}}, {tmpDir: dir.path}),
  ])
})

test.after(async () => {
  await Promise.all([inProcess.stop(), onRedis.stop()])
  await redis.remove()
  dir.remove()
})

for (const [queue, target, storage] of [['in-process', () => inProcess, 'memory'], ['Redis', () => onRedis, 'redis']] as const) {
  test(`32 job uploads at once from one address (${queue}): exactly 4 are accepted, the others get 429 too_many_jobs and leave nothing`, async () => {
    const {base} = target()
    const answers = await concurrentJobUploads(base, 32, await red())
    const accepted = answers.filter((a) => a.status === 202)
    assert.is(accepted.length, 4, JSON.stringify(answers))
    assert.equal(answers.filter((a) => a.status !== 202), Array.from({length: 28}, () => ({status: 429, code: 'too_many_jobs'})))
    // Only the accepted jobs have folders: a refused upload was never written.
    assert.equal((await readdir(storageOf(storage))).sort(), accepted.map((a) => a.id).sort())
    for (const a of accepted) assert.is((await call(`${base}/v1/jobs/${a.id}`, {method: 'DELETE'})).status, 200)
    // Deleted, they count no more; the refused uploads' places were given back (none was taken on Redis).
    assert.is((await concurrentJobUploads(base, 1, await red()))[0].status, 202)
    if (queue === 'Redis') {
      const client = new Redis(redis.url)
      assert.equal(await client.keys('mod:imagejob:*:reserved'), [])
      client.disconnect()
    }
  })
}

test('an upload refused after its place was reserved gives the place back', async () => {
  // Four uploads in the wrong field: each reserves a place, is refused 400 once read, and gives it back.
  for (let i = 0; i < 4; i++) {
    const wrong = await call(`${onRedis.base}/v1/jobs/images`, {method: 'POST', body: form('file', [{name: 'a.png', data: 'x'}])})
    assert.equal(errorOf(wrong), {status: 400, code: 'bad_request'})
  }
  const answers = await concurrentJobUploads(onRedis.base, 3, await red())
  assert.equal(answers.map((a) => a.status), [202, 202, 202])
})

test.run()
