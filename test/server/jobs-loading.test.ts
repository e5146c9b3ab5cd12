// BullMQ and ioredis load only when MOD_REDIS_URL is set: a server without Redis never pays their start-up
// time and memory. This file runs in its own process, so the module cache shows what the queue loaded.
import {createRequire} from 'node:module'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {readSettings} from '../../src/lib/config/settings.js'
import {jobQueue} from '../../src/server/jobs/service.js'

const loaded = () => Object.keys(createRequire(import.meta.url).cache).filter((p) => /[/\\]node_modules[/\\](bullmq|ioredis)[/\\]/.test(p))

test('without MOD_REDIS_URL the in-process queue serves jobs and neither bullmq nor ioredis is loaded', async () => {
  const queue = jobQueue(readSettings({}, {}).server, () => {})
  await queue.checkRoom()
  assert.is(await queue.get('no-such-job'), undefined)
  await queue.close()
  assert.equal(loaded(), [])
})

test('with MOD_REDIS_URL the queue loads them when it is created', async () => {
  const logged: string[] = []
  // Port 9 (discard) on loopback: nothing answers, so the queue's calls fail as a Redis outage does.
  const queue = jobQueue(readSettings({}, {MOD_REDIS_URL: 'redis://127.0.0.1:9'}).server, (line) => logged.push(line))
  const e = await queue.checkRoom().then(
    () => undefined,
    (err: {code: string}) => err.code,
  )
  assert.is(e, 'overloaded')
  assert.ok(loaded().some((p) => /ioredis/.test(p)), 'ioredis loaded')
  await queue.close()
})

test.run()
