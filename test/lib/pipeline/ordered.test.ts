import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {orderedMap} from '../../../src/lib/pipeline/ordered.js'

const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

test('results come in input order although later inputs finish first', async () => {
  const out: number[] = []
  for await (const x of orderedMap([30, 1, 15, 2], 4, async (ms) => (await delay(ms), ms))) out.push(x)
  assert.equal(out, [30, 1, 15, 2])
})

test('at most `depth` calls are in flight, and nothing past the window is read', async () => {
  let inFlight = 0
  let most = 0
  let read = 0
  async function* inputs() {
    for (let i = 0; i < 20; i++) {
      read++
      yield i
    }
  }
  const seenRead: number[] = []
  for await (const _ of orderedMap(inputs(), 3, async (i) => {
    inFlight++
    most = Math.max(most, inFlight)
    await delay(1)
    inFlight--
    return i
  })) {
    seenRead.push(read)
  }
  assert.is(most, 3)
  // When the first result is yielded, only the three inputs of the window have been read.
  assert.is(seenRead[0], 3)
})

test('an error is thrown at its place in the order, after the results before it', async () => {
  const out: number[] = []
  try {
    for await (const x of orderedMap([1, 2, 3], 3, async (x) => {
      if (x === 2) throw new Error('two')
      return x
    })) out.push(x)
    assert.unreachable()
  } catch (e) {
    assert.is((e as Error).message, 'two')
  }
  assert.equal(out, [1])
})

test('a consumer that stops early closes the input', async () => {
  let closed = false
  async function* inputs() {
    try {
      for (let i = 0; ; i++) yield i
    } finally {
      closed = true
    }
  }
  for await (const x of orderedMap(inputs(), 2, async (i) => i)) if (x === 3) break
  assert.is(closed, true)
})

test.run()
