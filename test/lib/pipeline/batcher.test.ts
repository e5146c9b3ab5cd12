import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {createBatcher} from '../../../src/lib/pipeline/batcher.js'

/** A runner that records each batch and finishes it when the test says so. */
function recorder() {
  const batches: number[][] = []
  const finish: (() => void)[] = []
  const run = (items: number[]) =>
    new Promise<number[]>((resolve) => {
      batches.push(items)
      finish.push(() => resolve(items.map((x) => x * 10)))
    })
  return {batches, run, finishNext: () => finish.shift()?.()}
}

const tick = () => new Promise((resolve) => setImmediate(resolve))

test('a lone item runs at once, in a batch of one', async () => {
  const r = recorder()
  const b = createBatcher(r.run, 8)
  const out = b.submit(1)
  await tick()
  assert.equal(r.batches, [[1]])
  r.finishNext()
  assert.is(await out, 10)
})

test('items submitted in the same turn share a run; those arriving during a run go together in the next', async () => {
  const r = recorder()
  const b = createBatcher(r.run, 8)
  const first = [b.submit(1), b.submit(2)]
  await tick()
  assert.equal(r.batches, [[1, 2]])
  const later = [b.submit(3), b.submit(4), b.submit(5)]
  await tick()
  assert.is(b.waiting, 3)
  assert.equal(r.batches.length, 1)
  r.finishNext()
  assert.equal(await Promise.all(first), [10, 20])
  await tick()
  assert.equal(r.batches, [[1, 2], [3, 4, 5]])
  r.finishNext()
  assert.equal(await Promise.all(later), [30, 40, 50])
})

test('a run takes at most maxBatch items, in submission order', async () => {
  const r = recorder()
  const b = createBatcher(r.run, 2)
  const all = [1, 2, 3, 4, 5].map((x) => b.submit(x))
  for (let i = 0; i < 3; i++) {
    await tick()
    r.finishNext()
  }
  assert.equal(await Promise.all(all), [10, 20, 30, 40, 50])
  assert.equal(r.batches, [[1, 2], [3, 4], [5]])
})

test('a failed run rejects its own items only; the next run goes ahead', async () => {
  let calls = 0
  const b = createBatcher(async (items: number[]) => {
    calls++
    if (calls === 1) throw new Error('model fell over')
    return items
  }, 8)
  const failed = b.submit(1).then(
    () => 'resolved',
    (e: Error) => e.message,
  )
  await tick()
  const later = b.submit(2)
  assert.is(await failed, 'model fell over')
  assert.is(await later, 2)
})

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

test('a run about to start waits for the items said to be on their way, up to maxBatch, then runs them together', async () => {
  const r = recorder()
  const b = createBatcher(r.run, 3, undefined, 1000)
  const second = b.expect()
  const third = b.expect()
  const fourth = b.expect()
  const out = [b.submit(1)]
  await sleep(20)
  assert.equal(r.batches, [], 'waits for the items on their way')
  out.push(b.submit(2))
  second()
  await sleep(20)
  assert.equal(r.batches, [])
  out.push(b.submit(3))
  third()
  await tick()
  // Full at three: the fourth, still on its way, goes in the next run.
  assert.equal(r.batches, [[1, 2, 3]])
  r.finishNext()
  assert.equal(await Promise.all(out), [10, 20, 30])
  fourth()
  fourth()
})

test('an item that will not come, said so, no longer holds the run; nor does one that takes longer than the gap', async () => {
  const r = recorder()
  const b = createBatcher(r.run, 8, undefined, 1000)
  const never = b.expect()
  const first = b.submit(1)
  await sleep(20)
  assert.equal(r.batches, [])
  never()
  await tick()
  assert.equal(r.batches, [[1]])
  r.finishNext()
  assert.is(await first, 10)

  const short = createBatcher(r.run, 8, undefined, 40)
  const late = short.expect()
  const started = performance.now()
  const alone = short.submit(2)
  await until(() => r.batches.length === 2)
  assert.ok(performance.now() - started >= 35, 'waited about the gap')
  assert.equal(r.batches[1], [2])
  r.finishNext()
  assert.is(await alone, 20)
  late()
})

test('a lone caller that said its item was coming pays nothing once it has submitted it', async () => {
  const r = recorder()
  const b = createBatcher(r.run, 8, undefined, 1000)
  const coming = b.expect()
  const out = b.submit(1)
  coming()
  await tick()
  assert.equal(r.batches, [[1]])
  r.finishNext()
  assert.is(await out, 10)
})

async function until(done: () => boolean): Promise<void> {
  while (!done()) await sleep(2)
}

test.run()
