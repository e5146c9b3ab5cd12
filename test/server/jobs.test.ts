// The jobs API on the in-process queue (no MOD_REDIS_URL), and what only that queue does.
import {mkdirSync} from 'node:fs'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {createMemoryQueue} from '../../src/server/jobs/memory.js'
import {start, tempDir, testSettings, toyEngine, type Running} from './harness.js'
import {holdingEngine, jobsSuite, type JobsTarget} from './jobs/suite.js'

const dir = tempDir('mod-server-jobs-')
const storage = join(dir.path, 'jobs')
mkdirSync(storage)
const settings = testSettings(join(dir.path, 'cache'))
settings.jobs = {...settings.jobs, storage}
const engine = toyEngine(settings)
let real: Running
let holding: Running
let target: JobsTarget

const api = jobsSuite('jobs API, in-process queue', () => target)

api.before.each(async () => {
  const held = holdingEngine()
  holding = await start(held.engine, {...settings, limits: {...settings.limits, queueLimit: 1}}, {tmpDir: dir.path})
  // The queue's jobs are only in this process: GET and DELETE are the view of them.
  target = {base: real.base, holding: {base: holding.base, ...held}, storage, scratch: dir.path, stored: async () => []}
})
api.after.each(async () => {
  target.holding.release()
  await holding.stop()
})
api.before(async () => {
  await engine.load()
  real = await start(engine, settings, {tmpDir: dir.path})
})
api.after(async () => {
  await real.stop()
  await engine.close()
  dir.remove()
})

api.run()

test('a finished job is forgotten after its TTL', async () => {
  let ended: () => void = () => {}
  const done = new Promise<void>((r) => (ended = r))
  const queue = createMemoryQueue({
    limit: 1,
    ttlSeconds: 0.05,
    describeError: () => ({code: 'internal', message: 'x'}),
    onEnd: () => ended(),
  })
  queue.work(async (spec) => ({source: spec.source, is_safe: true, duration: 0, fps: 1, frames_analyzed: 0, stopped_early: false, violations: [], not_evaluated: []}))
  await queue.submit({id: 'a', source: 'a.mp4', dir: join(dir.path, 'gone'), file: 'x', fps: 1, minFrames: 1, stopOnViolation: false})
  await done
  assert.is((await queue.get('a'))?.status, 'done')
  const end = Date.now() + 5000
  while ((await queue.get('a')) !== undefined && Date.now() < end) await new Promise((r) => setTimeout(r, 10))
  assert.is(await queue.get('a'), undefined)
  await queue.close()
})

test.run()
