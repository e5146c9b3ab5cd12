// Keys with owners (MOD_API_KEYS): a job belongs to the key that made it, and any other key is told it does not
// exist (404, as for an id that never did); MOD_API_KEY alone behaves as one key that owns every job.
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {startRedis, type RedisServer} from '../helpers/redis.js'
import {call, errorOf, fakeEngine, form, start, tempDir, testSettings, type Running} from './harness.js'

const dir = tempDir('mod-server-key-owners-')
let server: Running
let single: Running
/** The same keys, jobs on Redis (BullMQ for videos, chunks for images); no job runs there. */
let onRedis: Running
let redis: RedisServer

const KEYS = {default: 'k-default', alice: 'k-alice', bob: 'k-bob'}
const as = (name: keyof typeof KEYS, init: RequestInit = {}): RequestInit => ({...init, headers: {'X-API-Key': KEYS[name]}})

test.before(async () => {
  const settings = testSettings(join(dir.path, 'cache'))
  const jobs = {...settings.jobs, storage: join(dir.path, 'jobs')}
  const keyed = {...settings, jobs, apiKey: KEYS.default, apiKeys: [{name: 'alice', key: KEYS.alice}, {name: 'bob', key: KEYS.bob}]}
  redis = await startRedis()
  ;[server, single, onRedis] = await Promise.all([
    start(fakeEngine(), keyed, {tmpDir: dir.path}),
    start(fakeEngine(), {...settings, jobs, apiKey: KEYS.default}, {tmpDir: dir.path}),
    start(fakeEngine(), {...keyed, jobs: {...jobs, redisUrl: redis.url, serveJobs: false}}, {tmpDir: dir.path}),
  ])
})

test.after(async () => {
  await Promise.all([server.stop(), single.stop(), onRedis.stop()])
  await redis.remove()
  dir.remove()
})

const imageJob = (base: string, init: RequestInit) => call(`${base}/v1/jobs/images`, {...init, method: 'POST', body: form('files', [{name: 'a.png', data: 'x'}])})
const videoJob = (base: string, init: RequestInit) => call(`${base}/v1/jobs/video`, {...init, method: 'POST', body: form('file', [{name: 'clip.mp4', data: 'not a video'}])})

test('every named key is let in; a key of none is 401 and the answer says it matches none of them', async () => {
  for (const name of ['default', 'alice', 'bob'] as const) assert.is((await call(`${server.base}/v1/categories`, as(name))).status, 200, name)
  const wrong = await call(`${server.base}/v1/categories`, {headers: {'X-API-Key': 'k-eve'}})
  assert.equal(errorOf(wrong), {status: 401, code: 'unauthorized'})
  assert.is(wrong.body.error.message, 'the X-API-Key header does not match any of the configured keys')
})

for (const [queue, target] of [['in-process', () => server], ['Redis', () => onRedis]] as const) {
  test(`another key gets 404 on reading, deleting and reading the results of a job (${queue}); the owner's key still has it`, async () => {
    await anotherKeysJob(target().base)
  })
}

async function anotherKeysJob(base: string): Promise<void> {
  for (const submit of [imageJob, videoJob]) {
    const made = await submit(base, as('alice'))
    assert.is(made.status, 202)
    const {id} = made.body
    for (const name of ['bob', 'default'] as const) {
      const read = await call(`${base}/v1/jobs/${id}`, as(name))
      assert.equal(errorOf(read), {status: 404, code: 'not_found'})
      // As for an id that never existed: the same message.
      assert.is(read.body.error.message, `no job "${id}": it never existed, was deleted, or ended more than MOD_JOB_TTL ago`)
      assert.equal(errorOf(await call(`${base}/v1/jobs/${id}`, as(name, {method: 'DELETE'}))), {status: 404, code: 'not_found'})
      const results = await call(`${base}/v1/jobs/${id}/results`, as(name))
      assert.equal(errorOf(results), {status: 404, code: 'not_found'})
      // Not even that it is a video job.
      assert.is(results.body.error.message, `no job "${id}": it never existed, was deleted, or ended more than MOD_JOB_TTL ago`)
    }
    // Nothing of it went: its owner reads it, then deletes it.
    const mine = await call(`${base}/v1/jobs/${id}`, as('alice'))
    assert.equal([mine.status, mine.body.id], [200, id])
    if (submit === imageJob) assert.is((await fetch(`${base}/v1/jobs/${id}/results`, as('alice'))).status, 200)
    else assert.match((await call(`${base}/v1/jobs/${id}/results`, as('alice'))).body.error.message, `job "${id}" is a video job`)
    assert.is((await call(`${base}/v1/jobs/${id}`, as('alice', {method: 'DELETE'}))).status, 200)
    assert.is((await call(`${base}/v1/jobs/${id}`, as('alice'))).status, 404)
  }
}

test("MOD_API_KEY's key owns its jobs like any named key: alice cannot read them", async () => {
  const made = await imageJob(server.base, as('default'))
  assert.is(made.status, 202)
  assert.is((await call(`${server.base}/v1/jobs/${made.body.id}`, as('alice'))).status, 404)
  assert.is((await call(`${server.base}/v1/jobs/${made.body.id}`, as('default'))).status, 200)
})

test('with MOD_API_KEY alone, its key makes, reads and deletes jobs as before', async () => {
  for (const submit of [imageJob, videoJob]) {
    const made = await submit(single.base, as('default'))
    assert.is(made.status, 202)
    assert.is((await call(`${single.base}/v1/jobs/${made.body.id}`, as('default'))).status, 200)
    assert.is((await call(`${single.base}/v1/jobs/${made.body.id}`, as('default', {method: 'DELETE'}))).status, 200)
  }
})

test.run()
