// Jobs across processes through a real redis-server: `mod serve` accepts, a separate `mod worker` runs,
// the callback arrives signed; accepted jobs survive a Redis restart; images keep working while Redis is down.
import {mkdirSync} from 'node:fs'
import {readdir, readFile} from 'node:fs/promises'
import {join} from 'node:path'

import {Redis} from 'ioredis'
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {entriesNaming, startRedis, type RedisServer} from '../helpers/redis.js'
import {colourClip} from '../lib/video/helpers.js'
import {
  call,
  callbackReceiver,
  errorOf,
  form,
  red,
  serveProcess,
  signature,
  tempDir,
  TOY_MODEL,
  writeRednessPolicy,
  type CallbackReceiver,
  type ServeProcess,
} from './harness.js'
import {finished, submit} from './jobs/suite.js'
import {warmCacheDir} from '../helpers/warm-cache.js'

const SECRET = 'callback-secret'
const dir = tempDir('mod-jobs-processes-')
const storage = join(dir.path, 'jobs')
mkdirSync(storage)
const policy = writeRednessPolicy(dir.path)
let redis: RedisServer
let receiver: CallbackReceiver
const children: ServeProcess[] = []

function env(): Record<string, string> {
  return {
    MOD_CACHE_DIR: warmCacheDir(join(dir.path, 'cache')),
    MOD_MODEL_DIR: TOY_MODEL,
    MOD_CONFIG: policy,
    MOD_REDIS_URL: redis.url,
    MOD_JOB_STORAGE: storage,
    MOD_CALLBACK_SECRET: SECRET,
    MOD_CALLBACK_ALLOW_PRIVATE: 'true',
  }
}

function launch(command: 'serve' | 'worker', extra: Record<string, string> = {}): ServeProcess {
  const p = serveProcess(command === 'serve' ? ['--port', '0'] : [], {...env(), ...extra}, command)
  children.push(p)
  return p
}

test.before(async () => {
  // appendfsync always: a job Redis acknowledged is on disk, so a crash of Redis loses none.
  ;[redis, receiver] = await Promise.all([startRedis({appendonly: true}), callbackReceiver()])
})

test.after(async () => {
  for (const c of children) c.child.kill('SIGKILL')
  await receiver.close()
  await redis.remove()
  dir.remove()
})

let serving: Promise<{serve: ServeProcess; base: string}> | undefined
let working: ServeProcess | undefined

/** One `mod serve` that runs no jobs, started once for the tests that use it. */
function serveOnce(): Promise<{serve: ServeProcess; base: string}> {
  serving ??= (async () => {
    const serve = launch('serve', {MOD_SERVE_JOBS: 'false'})
    const [, base] = await serve.waitFor(/^listening on (http:\/\/127\.0\.0\.1:\d+)$/)
    return {serve, base: base as string}
  })()
  return serving
}

/** One `mod worker` that runs the jobs, started once: by the first test once Redis is back, or by the next that needs it. */
function workerOnce(): ServeProcess {
  working ??= launch('worker')
  return working
}

// First: jobs are accepted while no worker runs. The worker it starts then runs the jobs of the tests after it.
test('accepted jobs survive a Redis crash; while Redis is down jobs answer 503 and images are still moderated', async () => {
  const {base} = await serveOnce()
  assert.is(working, undefined, 'no worker runs yet')
  const clip = await readFile(await colourClip(join(dir.path, 'short.mp4'), ['red'], 2))
  const accepted = await submit(base, 'short.mp4', clip)
  assert.is(accepted.status, 202)

  await redis.stop('SIGKILL')
  const refused = await submit(base, 'short.mp4', clip)
  assert.equal(errorOf(refused), {status: 503, code: 'overloaded'})
  assert.is(refused.headers.get('retry-after'), '1')
  const image = await call(`${base}/v1/moderate`, {method: 'POST', body: form('file', [{name: 'red.png', data: await red()}])})
  assert.equal({status: image.status, safe: image.body.is_safe}, {status: 200, safe: false})

  await redis.restart()
  workerOnce()
  const job = await finished(base, accepted.body.id)
  assert.equal({status: job.status, safe: job.result.is_safe}, {status: 'done', safe: false})
})

test('a 30 s clip sent to mod serve is run by a separate mod worker; the callback arrives signed', async () => {
  const [{base}, clip] = await Promise.all([
    serveOnce(),
    colourClip(join(dir.path, 'thirty.mp4'), ['blue', 'red', 'blue'], 10, {rate: 2}).then((path) => readFile(path)),
    workerOnce().waitFor(/taking jobs from redis:\/\/127\.0\.0\.1:\d+$/),
  ])
  const r = await submit(base, 'thirty.mp4', clip, `?fps=1&callback_url=${encodeURIComponent(receiver.url)}`)
  assert.is(r.status, 202)
  const callback = await receiver.callbackFor(r.body.id)
  assert.is(callback.signature, signature(SECRET, callback.body))
  const job = JSON.parse(callback.body)
  assert.is(job.status, 'done')
  assert.equal(job.result.violations[0].segments, [{start: 10, end: 20, frames: 10, max_confidence: 1}])
  assert.equal({duration: job.result.duration, frames: job.result.frames_analyzed}, {duration: 30, frames: 30})
  const polled = await finished(base, r.body.id)
  assert.equal(polled.result, job.result)
  assert.equal(await readdir(storage), [])
})

test('a job running in a mod worker and deleted through mod serve stops, leaves nothing behind and stays gone', async () => {
  const {serve, base} = await serveOnce()
  const worker = workerOnce()
  await worker.waitFor(/taking jobs from redis:\/\/127\.0\.0\.1:\d+$/)
  // 1200 frames to score at fps=10: still running when the DELETE comes.
  const clip = await readFile(await colourClip(join(dir.path, 'long.mp4'), ['blue', 'red'], 60, {rate: 1}))
  const r = await submit(base, 'long.mp4', clip, `?fps=10&callback_url=${encodeURIComponent(receiver.url)}`)
  let job = r.body
  while (job.status === 'queued' || (job.status === 'running' && job.progress.frames_analyzed === 0)) {
    await new Promise((resolve) => setTimeout(resolve, 20))
    job = (await call(`${base}/v1/jobs/${r.body.id}`)).body
  }
  assert.is(job.status, 'running')
  const deleted = await call(`${base}/v1/jobs/${r.body.id}`, {method: 'DELETE'})
  assert.equal([deleted.status, deleted.body.status], [200, 'cancelled'])
  assert.equal(errorOf(await call(`${base}/v1/jobs/${r.body.id}`)), {status: 404, code: 'not_found'})
  assert.equal(errorOf(await call(`${base}/v1/jobs/${r.body.id}`, {method: 'DELETE'})), {status: 404, code: 'not_found'})
  assert.equal(await readdir(storage), [], 'the upload is removed by the DELETE')
  // The worker stops the run, reports it cancelled, and lets Redis drop the job.
  const callback = JSON.parse((await receiver.callbackFor(r.body.id)).body)
  assert.equal([callback.status, callback.result], ['cancelled', undefined])
  const client = new Redis(redis.url)
  const end = Date.now() + 10_000
  while ((await entriesNaming(client, r.body.id)).length > 0 && Date.now() < end) await new Promise((resolve) => setTimeout(resolve, 20))
  assert.equal(await entriesNaming(client, r.body.id), [])
  client.disconnect()
  assert.equal(errorOf(await call(`${base}/v1/jobs/${r.body.id}`)), {status: 404, code: 'not_found'})
  serve.child.kill('SIGTERM')
  worker.child.kill('SIGTERM')
  assert.equal([await serve.exited, await worker.exited], [0, 0])
})

test('mod worker without MOD_REDIS_URL refuses to start (exit 2)', async () => {
  const worker = launch('worker', {MOD_REDIS_URL: ''})
  assert.is(await worker.exited, 2)
  assert.match(worker.lines.join('\n'), /mod: invalid_config: mod worker takes jobs from Redis: set MOD_REDIS_URL/)
})

test.run()
