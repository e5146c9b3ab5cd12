import {PassThrough} from 'node:stream'

import {test} from 'uvu'
import * as assert from 'uvu/assert'
import type {Dispatcher} from 'undici'

import {exchange} from '../../src/cli/remote/exchange.js'
import {ModError} from '../../src/lib/errors.js'

const SERVER = 'http://127.0.0.1:1/'

/** A body that starts and never ends, as a trickling server's does. */
function endless(): Dispatcher.ResponseData {
  const body = new PassThrough()
  body.write('{')
  return {statusCode: 200, headers: {'content-type': 'application/json'}, body} as unknown as Dispatcher.ResponseData
}

async function failure(leftAtArm: number, leftAfter: number, bodyMs: number): Promise<ModError> {
  // The clock's readings in turn: the headers' alarm, the body's, then a clock that has not quite reached the
  // deadline, as when Node's timer fires a few ms before Date.now() gets there.
  const readings = [leftAtArm + 10, leftAtArm]
  const clock = {
    timeoutMs: 1000,
    left: () => readings.shift() ?? leftAfter,
    overTime: () => new ModError('server_unreachable', 'over time'),
  }
  const ctx = {server: SERVER, limits: {headersMs: 1000, bodyMs, idleMs: 1000}, clock}
  try {
    await exchange(ctx, async () => endless(), () => true, 1024, 'POST /v1/moderate/batch')
  } catch (e) {
    return e as ModError
  }
  return assert.unreachable('the body never ended') as never
}

test("a body cut off by the run's deadline says so, even when the timer fires before the clock reads zero", async () => {
  const e = await failure(60, 5, 30_000)
  assert.is(e.message, 'over time')
})

test("a body slower than its own limit, with the run's deadline further off, is called too slow", async () => {
  const e = await failure(5000, 4900, 60)
  assert.is(e.code, 'server_unreachable')
  assert.is(e.message, `POST /v1/moderate/batch to ${SERVER}: the answer's body was not whole 0.1 s after its headers: a server or proxy sends it too slowly`)
})

test.run()
