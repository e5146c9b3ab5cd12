// A MOD_REDIS_URL whose password Redis refuses is a setting to mend: `mod serve` and `mod worker` do not start, and
// say so, where they used to start and answer 503 "retry later" on every job route for good. A Redis that is not
// up yet is not a refusal (a server may start before it).
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {Redis} from 'ioredis'

import {refusedCredentials} from '../../src/server/jobs/redis-connection.js'
import {runServer} from '../../src/server/run.js'
import {runCli} from '../helpers/cli.js'
import {freePort, startRedis, type RedisServer} from '../helpers/redis.js'
import {fakeEngine, tempDir, testSettings} from './harness.js'

const dir = tempDir('mod-redis-credentials-')
let redis: RedisServer

test.before(async () => {
  redis = await startRedis()
  const admin = new Redis(redis.url)
  await admin.config('SET', 'requirepass', 'right-secret')
  admin.disconnect()
})

test.after(async () => {
  await redis.remove()
  dir.remove()
})

const at = (auth: string) => `redis://${auth}127.0.0.1:${redis.port}`

test('a wrong password, or none, is refused; the right one, and a Redis not up yet, are not', async () => {
  assert.match((await refusedCredentials(at(':wrong-secret@'))) ?? '', /^WRONGPASS/)
  assert.match((await refusedCredentials(at(''))) ?? '', /^NOAUTH/)
  assert.is(await refusedCredentials(at(':right-secret@')), undefined)
  assert.is(await refusedCredentials(`redis://127.0.0.1:${await freePort()}`), undefined)
})

test('mod serve with a password Redis refuses does not start, naming the setting and not the password', async () => {
  const logs: string[] = []
  const settings = testSettings(join(dir.path, 'cache'), {preload: false})
  let listening = false
  const code = await runServer({
    engine: fakeEngine(),
    settings: {...settings, jobs: {...settings.jobs, storage: join(dir.path, 'jobs'), redisUrl: at(':wrong-secret@')}},
    host: '127.0.0.1',
    port: 0,
    log: (line) => logs.push(line),
    onListening: () => (listening = true),
    stop: new Promise((resolve) => setTimeout(resolve, 3000).unref()),
  })
  assert.equal([code, listening], [2, false])
  assert.equal(logs.filter((l) => l.startsWith('MOD_REDIS_URL')).length, 1)
  assert.match(logs.join('\n'), 'MOD_REDIS_URL: Redis refused its credentials (WRONGPASS')
  assert.not.match(logs.join('\n'), 'wrong-secret')
})

test('mod worker with a password Redis refuses exits 2 with one line, before loading a model', async () => {
  const r = await runCli(['worker'], {env: {MOD_REDIS_URL: at(':wrong-secret@'), MOD_JOB_STORAGE: join(dir.path, 'jobs'), MOD_CACHE_DIR: join(dir.path, 'cache')}})
  assert.is(r.code, 2)
  assert.match(r.stderr, /^mod: invalid_config: MOD_REDIS_URL: Redis refused its credentials \(WRONGPASS[^\n]*\): mend the password in the URL\n$/)
  assert.not.match(r.stderr, 'wrong-secret')
})

test.run()
