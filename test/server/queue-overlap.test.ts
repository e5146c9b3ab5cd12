import {request, type ClientRequest} from 'node:http'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {ModError} from '../../src/lib/errors.js'
import type {ModerationResult} from '../../src/lib/types.js'
import {createGate, PREPARED_SLOTS} from '../../src/server/queue.js'
import {call, errorOf, fakeEngine, form, multipartParts, start, tempDir, testSettings, until} from './harness.js'

const dir = tempDir('mod-server-overlap-')

test.after(() => dir.remove())

/** Steps a test ends one by one: `events` records each start and end, in order. */
function steps() {
  const events: string[] = []
  const ends = new Map<string, (fail?: Error) => void>()
  return {
    events,
    step: (label: string) =>
      new Promise<void>((resolve, reject) => {
        events.push(`start ${label}`)
        ends.set(label, (fail) => {
          events.push(`end ${label}`)
          if (fail) reject(fail)
          else resolve()
        })
      }),
    started: (label: string) => events.includes(`start ${label}`),
    /** Ends the step once it has started. */
    async end(label: string, fail?: Error) {
      await until(() => ends.has(label))
      ends.get(label)?.(fail)
    },
  }
}

/** One request through the gate: prepare, then infer, as the engine does; its outcome or its error's code. */
async function job(gate: ReturnType<typeof createGate>, s: ReturnType<typeof steps>, name: string, signal?: AbortSignal): Promise<string> {
  const ticket = gate.admit()
  try {
    const scheduler = ticket.scheduler(signal)
    await scheduler.prepare(
      () => s.step(`prepare ${name}`),
      () => s.events.push(`placed ${name}`),
    )
    await scheduler.infer(() => s.step(`infer ${name}`))
    return 'done'
  } catch (e) {
    return (e as ModError).code ?? (e as Error).message
  } finally {
    ticket.release()
  }
}

/** Names for `n` requests with a prefix: a0, a1, ... */
const names = (prefix: string, n: number) => Array.from({length: n}, (_, i) => `${prefix}${i}`)

test(`preparing goes on while others infer, but at most ${PREPARED_SLOTS} items are prepared or inferring: the next waits for an inference to end`, async () => {
  assert.is(PREPARED_SLOTS, 4)
  const gate = createGate(10)
  const s = steps()
  const holders = names('h', PREPARED_SLOTS)
  const all = [...holders, 'next', 'last'].map((name) => job(gate, s, name))
  for (const name of holders) {
    await until(() => s.started(`prepare ${name}`))
    await s.end(`prepare ${name}`)
  }
  await until(() => s.started(`infer ${holders.at(-1)}`))
  // The holders hold every slot (one inferring, the others prepared): next is not decoded while they wait, and not
  // placed, so that a run about to start does not wait for it.
  await new Promise((resolve) => setTimeout(resolve, 30))
  assert.not.ok(s.started('prepare next'))
  assert.not.ok(s.events.includes('placed next'))
  await s.end(`infer ${holders[0]}`)
  await until(() => s.started('prepare next'))
  assert.ok(s.events.indexOf('placed next') < s.events.indexOf('start prepare next'))
  await s.end('prepare next')
  await until(() => s.started('infer next'))
  assert.not.ok(s.started('prepare last'))
  for (const name of [...holders.slice(1), 'next']) await s.end(`infer ${name}`)
  await until(() => s.started('prepare last'))
  await s.end('prepare last')
  await until(() => s.started('infer last'))
  await s.end('infer last')
  assert.equal(await Promise.all(all), Array(PREPARED_SLOTS + 2).fill('done'))
  // First come, first served: each preparing started in the order the requests came.
  assert.equal(
    s.events.filter((e) => e.startsWith('start prepare')),
    [...holders, 'next', 'last'].map((n) => `start prepare ${n}`),
  )
  assert.is(gate.admitted, 0)
})

test('a request whose client goes away while it waits for a slot leaves the line; one whose preparing fails gives its slot back', async () => {
  const gate = createGate(10)
  const s = steps()
  const fillers = names('c', PREPARED_SLOTS - 2)
  const a = job(gate, s, 'a')
  const b = job(gate, s, 'b')
  const cs = fillers.map((name) => job(gate, s, name))
  const controller = new AbortController()
  const d = job(gate, s, 'd', controller.signal)
  const e = job(gate, s, 'e')
  await s.end('prepare a')
  await until(() => s.started('prepare b'))
  await s.end('prepare b', new Error('broken image'))
  for (const name of fillers) {
    await until(() => s.started(`prepare ${name}`))
    await s.end(`prepare ${name}`)
  }
  // b's failure gave its slot to d, whose client goes away while it prepares.
  await until(() => s.started('prepare d'))
  controller.abort()
  await s.end('prepare d')
  assert.is(await b, 'broken image')
  await until(() => s.started('infer a') && fillers.every((name) => s.started(`infer ${name}`)))
  // d prepared, but its client is gone: it is not inferred, and its slot goes to e.
  assert.is(await d, 'bad_request')
  await until(() => s.started('prepare e'))
  await s.end('prepare e')
  for (const name of ['a', ...fillers, 'e']) {
    await until(() => s.started(`infer ${name}`))
    await s.end(`infer ${name}`)
  }
  assert.equal(await Promise.all([a, ...cs, e]), Array(PREPARED_SLOTS).fill('done'))
  assert.not.ok(s.started('infer d'))
  assert.is(gate.admitted, 0)
})

test('a client gone while it waits for a slot never prepares, and takes no slot', async () => {
  const gate = createGate(10)
  const s = steps()
  const held = names('h', PREPARED_SLOTS)
  const holders = held.map((name) => job(gate, s, name))
  for (const name of held) {
    await until(() => s.started(`prepare ${name}`))
    await s.end(`prepare ${name}`)
  }
  const controller = new AbortController()
  const gone = job(gate, s, 'gone', controller.signal)
  const next = job(gate, s, 'next')
  controller.abort()
  assert.is(await gone, 'bad_request')
  await s.end(`infer ${held[0]}`)
  await until(() => s.started('prepare next'))
  await s.end('prepare next')
  for (const name of [...held.slice(1), 'next']) {
    await until(() => s.started(`infer ${name}`))
    await s.end(`infer ${name}`)
  }
  assert.equal(await Promise.all([...holders, next]), Array(PREPARED_SLOTS + 1).fill('done'))
  assert.not.ok(s.started('prepare gone'))
  assert.not.ok(s.events.includes('placed gone'))
})

/**
 * An engine that moderates through the request's scheduler as the real one does: preparing (here: reading the
 * upload; a file named bad* fails to decode) then an inference the test ends, one call at a time.
 */
function steppedEngine() {
  const s = steps()
  const engine = fakeEngine({
    async moderateImage(data, source, o = {}) {
      const scheduler = o.scheduler
      if (!scheduler) throw new Error('no scheduler')
      await scheduler.prepare(async () => {
        await s.step(`prepare ${source}`)
        if (source.startsWith('bad')) throw new ModError('unsupported_media', `${source} is not an image`)
      })
      await scheduler.infer(() => s.step(`infer ${source}`))
      return {source, is_safe: true, violations: [], labels: [], not_evaluated: []} satisfies ModerationResult
    },
  })
  return {engine, ...s}
}

const image = (name: string) => ({method: 'POST', body: form('file', [{name, data: 'x'}])})

/** A client that sends a whole upload, then may go away (destroy) before its answer. */
function goneClient(url: string, name: string): ClientRequest {
  const {head, tail, type} = multipartParts('file', name)
  const body = Buffer.concat([head, Buffer.from('x'), tail])
  const req = request(url, {method: 'POST', headers: {'content-type': type, 'content-length': body.length}})
  req.on('error', () => {})
  req.end(body)
  return req
}

test('over HTTP: the next uploads are received and prepared while one infers, in order; a broken one is answered at once; a client gone leaves the line', async () => {
  const stepped = steppedEngine()
  const server = await start(stepped.engine, testSettings(join(dir.path, 'cache'), {limits: {queueLimit: 8}}))
  const url = `${server.base}/v1/moderate`
  try {
    const first = call(url, image('1.png'))
    await until(() => stepped.started('prepare 1.png'))
    await stepped.end('prepare 1.png')
    await until(() => stepped.started('infer 1.png'))
    // 1 is in inference: 2 is received and prepared meanwhile, and a broken upload is answered without waiting.
    const second = call(url, image('2.png'))
    await until(() => stepped.started('prepare 2.png'))
    await stepped.end('prepare 2.png')
    const broken = call(url, image('bad.png'))
    await until(() => stepped.started('prepare bad.png'))
    await stepped.end('prepare bad.png')
    assert.equal(errorOf(await broken), {status: 415, code: 'unsupported_media'})
    // 1 inferring and the prepared ones hold every slot: the next is received and waits; one more client goes away.
    const prepared = [second]
    const more = Array.from({length: PREPARED_SLOTS - 2}, (_, i) => `${i + 3}.png`)
    for (const name of more) {
      prepared.push(call(url, image(name)))
      await until(() => stepped.started(`prepare ${name}`))
      await stepped.end(`prepare ${name}`)
    }
    const waiting = `${PREPARED_SLOTS + 1}.png`
    const gone = `${PREPARED_SLOTS + 2}.png`
    const next = call(url, image(waiting))
    const leaving = goneClient(url, gone)
    await until(() => server.handle.gate.admitted === PREPARED_SLOTS + 2)
    leaving.destroy()
    // The server sees the connection close and the request leaves the line.
    await until(() => server.handle.gate.admitted === PREPARED_SLOTS + 1)
    assert.not.ok(stepped.started(`prepare ${waiting}`))
    await stepped.end('infer 1.png')
    assert.is((await first).body.source, '1.png')
    await until(() => stepped.started(`prepare ${waiting}`))
    await stepped.end(`prepare ${waiting}`)
    const after = ['2.png', ...more, waiting]
    for (const name of after) {
      await until(() => stepped.started(`infer ${name}`))
      await stepped.end(`infer ${name}`)
    }
    assert.equal(
      (await Promise.all([...prepared, next])).map((a) => [a.status, a.body.source]),
      after.map((name) => [200, name]),
    )
    await until(() => server.handle.gate.admitted === 0)
    assert.not.ok(stepped.started(`prepare ${gone}`))
    assert.equal(
      stepped.events.filter((e) => e.startsWith('start prepare')),
      ['1.png', '2.png', 'bad.png', ...more, waiting].map((n) => `start prepare ${n}`),
    )
  } finally {
    await server.stop()
  }
})

test.run()
