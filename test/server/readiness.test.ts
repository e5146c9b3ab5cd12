// GET /ready for load balancers: 503 not_ready until the model is loaded and from the start of a shutdown
// (MOD_DRAIN_DELAY_MS keeps serving meanwhile); GET /health stays the liveness check.
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {readSettings} from '../../src/lib/config/settings.js'
import {runServer} from '../../src/server/run.js'
import {call, fakeEngine, start, tempDir, testSettings, until} from './harness.js'

const dir = tempDir('mod-server-readiness-')
const settings = testSettings(join(dir.path, 'cache'), {apiKey: 'ready-key', preload: false})

test.after(() => dir.remove())

const notReady = (message: string) => ({status: 503, retryAfter: '5', body: {error: {code: 'not_ready', message}}})
const answer = (r: {status: number; headers: Headers; body: unknown}) => ({status: r.status, retryAfter: r.headers.get('retry-after'), body: r.body})

test('before the model is loaded /ready is 503 not_ready and starts loading it; then 200, without a key', async () => {
  let release = () => {}
  let loads = 0
  const engine = fakeEngine()
  const load = engine.load
  engine.load = () => {
    loads++
    return new Promise<void>((resolve) => (release = () => void load().then(resolve)))
  }
  const server = await start(engine, settings)
  try {
    assert.equal(answer(await call(`${server.base}/ready`)), notReady('the model is loading'))
    assert.is(loads, 1)
    assert.is((await call(`${server.base}/health`)).status, 200)
    release()
    await until(() => engine.isLoaded())
    assert.equal(answer(await call(`${server.base}/ready`)), {status: 200, retryAfter: null, body: {status: 'ready', coverage: {evaluated: 0, total: 0, not_evaluated: []}}})
  } finally {
    await server.stop()
  }
})

test('once the server drains /ready is 503 while /health and the other endpoints still answer', async () => {
  const engine = fakeEngine()
  await engine.load()
  const server = await start(engine, settings)
  try {
    assert.is((await call(`${server.base}/ready`)).status, 200)
    server.handle.drain()
    assert.equal(answer(await call(`${server.base}/ready`)), notReady('the server is shutting down'))
    assert.is((await call(`${server.base}/health`)).status, 200)
    assert.is((await call(`${server.base}/v1/categories`, {headers: {'x-api-key': 'ready-key'}})).status, 200)
  } finally {
    await server.stop()
  }
})

test('on stop with MOD_DRAIN_DELAY_MS the port stays open, /ready says 503, then the server exits 0', async () => {
  const engine = fakeEngine()
  let stop = () => {}
  let port = 0
  const logs: string[] = []
  const exit = runServer({
    engine,
    settings: {...settings, preload: true, drainDelayMs: 800},
    host: '127.0.0.1',
    port: 0,
    log: (line) => logs.push(line),
    onListening: (p) => (port = p),
    stop: new Promise<void>((resolve) => (stop = resolve)),
  })
  await until(() => port > 0)
  const base = `http://127.0.0.1:${port}`
  assert.is((await call(`${base}/ready`)).status, 200)
  stop()
  await until(() => logs.some((l) => l.startsWith('draining:')))
  assert.equal(answer(await call(`${base}/ready`)), notReady('the server is shutting down'))
  assert.is(await exit, 0)
  // A sweep of uploads left by ended processes (other test servers of this host) may log a line too.
  const own = logs.filter((l) => !l.startsWith('removed the uploads left by ended processes'))
  assert.equal(own, ['draining: /ready answers 503 for 800 ms before the port closes', 'stopping'])
})

test('MOD_DRAIN_DELAY_MS and MOD_LOG_LEVEL are read and checked', () => {
  assert.equal(readSettings({}, {}).server.drainDelayMs, 0)
  assert.equal(readSettings({}, {}).server.logLevel, 'info')
  const set = readSettings({}, {MOD_DRAIN_DELAY_MS: '5000', MOD_LOG_LEVEL: 'DEBUG'}).server
  assert.equal([set.drainDelayMs, set.logLevel], [5000, 'debug'])
  assert.throws(() => readSettings({}, {MOD_LOG_LEVEL: 'verbose'}), /MOD_LOG_LEVEL="verbose" is not valid: expected one of error, warn, info, debug/)
  assert.throws(() => readSettings({}, {MOD_DRAIN_DELAY_MS: '-1'}), /MOD_DRAIN_DELAY_MS/)
})

test.run()
