// A BullMQ queue closed right after it was created (a server stopped as soon as it started) closes cleanly:
// BullMQ would otherwise report the connection it was still setting up as an unhandled 'error' and end the process.
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {readSettings} from '../../src/lib/config/settings.js'
import {jobQueue} from '../../src/server/jobs/service.js'
import {startRedis, type RedisServer} from '../helpers/redis.js'

let redis: RedisServer

test.before(async () => {
  redis = await startRedis()
})
test.after(async () => {
  await redis.remove()
})

test('twenty queues with a worker, each closed as soon as it is created, close without an error', async () => {
  const settings = readSettings({}, {MOD_REDIS_URL: redis.url}).server
  for (let i = 0; i < 20; i++) {
    const queue = jobQueue(settings, () => {})
    queue.work(async () => ({status: 'cancelled'}) as never)
    await queue.close()
  }
  // The process is still here, and a queue opened afterwards answers.
  const queue = jobQueue(settings, () => {})
  await queue.checkRoom()
  assert.is(await queue.get('no-such-job'), undefined)
  await queue.close()
})

test.run()
