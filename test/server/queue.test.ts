import {getEventListeners} from 'node:events'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import type {ModerationResult} from '../../src/lib/types.js'
import {createGate} from '../../src/server/queue.js'
import {call, errorOf, fakeEngine, form, red, start, tempDir, testSettings, toyEngine, until} from './harness.js'

const dir = tempDir('mod-server-queue-')

test.after(() => dir.remove())

/** An engine whose moderations wait until the test lets them finish, one by one. */
function slowEngine() {
  const started: string[] = []
  const waiting: (() => void)[] = []
  const engine = fakeEngine({
    moderateImage: (_data, source) =>
      new Promise<ModerationResult>((resolve) => {
        started.push(source)
        waiting.push(() => resolve({source, is_safe: true, violations: [], labels: [], not_evaluated: []}))
      }),
  })
  return {engine, started, finishNext: () => waiting.shift()?.()}
}

const image = (name: string) => ({method: 'POST', body: form('file', [{name, data: 'x'}])})

test('preparations take turns, first come first served, while inference is left to the engine', async () => {
  const gate = createGate(5)
  const events: string[] = []
  const gates = new Map<string, () => void>()
  const step = (label: string) =>
    new Promise<void>((resolve) => {
      events.push(`start ${label}`)
      gates.set(label, () => {
        events.push(`end ${label}`)
        resolve()
      })
    })
  const job = async (name: string) => {
    const ticket = gate.admit()
    try {
      const scheduler = ticket.scheduler()
      await scheduler.prepare(() => step(`prepare ${name}`))
      await scheduler.infer(() => step(`infer ${name}`))
    } finally {
      ticket.release()
    }
  }
  const open = (label: string) => gates.get(label)?.()
  const all = Promise.all([job('a'), job('b'), job('c')])
  await until(() => events.includes('start prepare a'))
  assert.equal(events, ['start prepare a'])
  open('prepare a')
  await until(() => events.includes('start infer a') && events.includes('start prepare b'))
  // b is prepared while a infers; c waits for b's preparation to end.
  assert.not.ok(events.includes('start prepare c'))
  open('prepare b')
  await until(() => events.includes('start prepare c') && events.includes('start infer b'))
  // Two requests infer at once: the engine batches them.
  assert.not.ok(events.includes('end infer a'))
  open('prepare c')
  await until(() => events.includes('start infer c'))
  for (const name of ['a', 'b', 'c']) open(`infer ${name}`)
  await all
  assert.is(gate.admitted, 0)
})

test('the gate admits one running request plus queueLimit waiting ones, then refuses with overloaded', () => {
  const gate = createGate(2)
  const tickets = [gate.admit(), gate.admit(), gate.admit()]
  assert.throws(() => gate.admit(), (e: {code: string}) => e.code === 'overloaded')
  tickets[0].release()
  tickets[0].release()
  assert.is(gate.admitted, 2)
  gate.admit()
  assert.throws(() => gate.admit(), (e: {code: string}) => e.code === 'overloaded')
})

test('a request whose client went away leaves the line without preparing or inferring', async () => {
  const gate = createGate(5)
  let finishFirst = () => {}
  const first = gate.admit().scheduler().prepare(() => new Promise<void>((resolve) => (finishFirst = resolve)))
  const controller = new AbortController()
  let ran = false
  const gone = gate.admit().scheduler(controller.signal)
  const second = gone.prepare(async () => {
    ran = true
  })
  controller.abort()
  const code = (p: Promise<unknown>) => p.then(() => 'ran', (e: {code: string}) => e.code)
  assert.is(await code(second), 'bad_request')
  assert.is(await code(gone.infer(async () => (ran = true))), 'bad_request')
  let thirdRan = false
  const third = gate.admit().scheduler().prepare(async () => {
    thirdRan = true
  })
  finishFirst()
  await Promise.all([first, third])
  assert.is(ran, false)
  assert.is(thirdRan, true)
})

test("a request's items waiting in line share one abort listener, removed when the request is released", async () => {
  const gate = createGate(5)
  let finishFirst: (() => void) | undefined
  const first = gate.admit().scheduler().prepare(() => new Promise<void>((resolve) => (finishFirst = resolve)))
  const controller = new AbortController()
  const ticket = gate.admit()
  const scheduler = ticket.scheduler(controller.signal)
  const items = Array.from({length: 16}, (_, i) => scheduler.prepare(async () => i).then((n) => scheduler.infer(async () => n)))
  assert.is(getEventListeners(controller.signal, 'abort').length, 1)
  await until(() => finishFirst !== undefined)
  finishFirst?.()
  await first
  assert.equal(await Promise.all(items), Array.from({length: 16}, (_, i) => i))
  ticket.release()
  assert.is(getEventListeners(controller.signal, 'abort').length, 0)
})

test('concurrent batches of MOD_MAX_BATCH files emit no process warning (no listener leak on their signals)', async () => {
  const warnings: string[] = []
  const onWarning = (w: Error) => warnings.push(`${w.name}: ${w.message}`)
  process.on('warning', onWarning)
  const settings = testSettings(join(dir.path, 'cache'))
  const engine = toyEngine(settings)
  const server = await start(engine, settings)
  try {
    const png = await red()
    const files = Array.from({length: settings.limits.maxBatch}, (_, i) => ({name: `${i}.png`, data: png}))
    const batch = () => call(`${server.base}/v1/moderate/batch`, {method: 'POST', body: form('files', files)})
    const answers = await Promise.all([batch(), batch(), batch(), batch()])
    assert.equal(answers.map((a) => [a.status, a.body.results.length]), Array(4).fill([200, files.length]))
    // A warning is emitted on the next tick of the event loop.
    await new Promise((resolve) => setImmediate(resolve))
    assert.equal(warnings, [])
  } finally {
    process.off('warning', onWarning)
    await server.stop()
    await engine.close()
  }
})

test('beyond MOD_QUEUE_LIMIT waiting requests the server answers 503 overloaded with Retry-After', async () => {
  const slow = slowEngine()
  const settings = testSettings(join(dir.path, 'cache'), {limits: {queueLimit: 1}})
  const server = await start(slow.engine, settings)
  try {
    const a = call(`${server.base}/v1/moderate`, image('a.png'))
    await until(() => slow.started.length === 1)
    const b = call(`${server.base}/v1/moderate`, image('b.png'))
    await until(() => server.handle.gate.admitted === 2)

    const refused = await call(`${server.base}/v1/moderate`, image('c.png'))
    assert.equal(errorOf(refused), {status: 503, code: 'overloaded'})
    assert.is(refused.headers.get('retry-after'), '1')

    const health = await call(`${server.base}/health`)
    assert.equal([health.body.status, health.body.model_loaded], ['ok', true])
    assert.is((await call(`${server.base}/v1/categories`)).status, 200)

    slow.finishNext()
    assert.is((await a).body.source, 'a.png')
    await until(() => slow.started.length === 2)
    slow.finishNext()
    assert.is((await b).body.source, 'b.png')
    assert.equal(slow.started, ['a.png', 'b.png'])
    assert.is(server.handle.gate.admitted, 0)
  } finally {
    await server.stop()
  }
})

test('with MOD_QUEUE_LIMIT=0 a second request while one runs is refused', async () => {
  const slow = slowEngine()
  const server = await start(slow.engine, testSettings(join(dir.path, 'cache'), {limits: {queueLimit: 0}}))
  try {
    const a = call(`${server.base}/v1/moderate`, image('a.png'))
    await until(() => slow.started.length === 1)
    assert.equal(errorOf(await call(`${server.base}/v1/moderate/batch`, {method: 'POST', body: form('files', [{name: 'b', data: 'x'}])})), {
      status: 503,
      code: 'overloaded',
    })
    slow.finishNext()
    assert.is((await a).status, 200)
  } finally {
    await server.stop()
  }
})

test.run()
