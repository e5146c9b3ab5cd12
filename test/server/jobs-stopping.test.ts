// A `mod serve` on the in-process queue stopping (SIGTERM, Ctrl-C): its jobs are lost with it, so from the moment
// it stops it accepts none (503 overloaded, also to an upload under way that ends after), and the jobs still
// waiting end `cancelled` at once, with their callback and a log line naming them, while the running one finishes.
import {request} from 'node:http'
import {mkdirSync, writeFileSync} from 'node:fs'
import {readdir} from 'node:fs/promises'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {createMemoryImageQueue} from '../../src/server/jobs/images/memory.js'
import type {ImageJobBody} from '../../src/server/jobs/images/schema.js'
import {CHUNK_SIZE} from '../../src/server/jobs/images/types.js'
import {callbackReceiver, errorOf, start, tempDir, testSettings, until, type CallbackReceiver, type Running} from './harness.js'
import {holdingEngine, submit} from './jobs/suite.js'

const dir = tempDir('mod-jobs-stopping-')
const storage = join(dir.path, 'jobs')
mkdirSync(storage)
const settings = testSettings(join(dir.path, 'cache'))

test.after(() => dir.remove())

/** A video job upload whose request is sent now and whose body ends when `finish` is called; `answer` is its answer. */
function uploadUnderWay(base: string) {
  const boundary = 'mod-test-boundary'
  const req = request(`${base}/v1/jobs/video`, {method: 'POST', headers: {'Content-Type': `multipart/form-data; boundary=${boundary}`}})
  const answer = new Promise<{status: number; body: any}>((resolve, reject) => {
    req.on('response', (res) => {
      let body = ''
      res.setEncoding('utf8').on('data', (d: string) => (body += d))
      res.on('end', () => resolve({status: res.statusCode ?? 0, body: JSON.parse(body)}))
    })
    req.on('error', reject)
  })
  // Cut when a failed check closes the server: that failure is the one to report.
  answer.catch(() => {})
  req.write(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="late.mp4"\r\nContent-Type: video/mp4\r\n\r\nsome bytes`)
  return {answer, finish: () => req.end(` and the rest\r\n--${boundary}--\r\n`)}
}

test('a stopping server refuses new video jobs, and the queued ones end cancelled with their callback and a log line', async () => {
  const receiver = await callbackReceiver()
  const held = holdingEngine()
  const server = await start(held.engine, {...settings, jobs: {...settings.jobs, storage, callbackAllowPrivate: true}}, {tmpDir: dir.path})
  try {
    await stoppingServer(server, held, receiver)
  } finally {
    // A failed check leaves nothing running that would hold the test's process.
    held.release()
    server.handle.server.closeAllConnections()
    await Promise.all([server.stop().catch(() => {}), receiver.close()])
  }
})

async function stoppingServer(server: Running, held: ReturnType<typeof holdingEngine>, receiver: CallbackReceiver): Promise<void> {
  const query = `?callback_url=${encodeURIComponent(receiver.url)}`
  const running = await submit(server.base, 'a.mp4', 'a', query)
  await held.started
  const queued = [await submit(server.base, 'b.mp4', 'b', query), await submit(server.base, 'c.mp4', 'c', query)]
  assert.equal(queued.map((r) => r.status), [202, 202])
  const late = uploadUnderWay(server.base)
  await until(() => server.handle.gate.receiving > 0)

  server.handle.drain()
  const refused = await submit(server.base, 'd.mp4', 'd')
  assert.equal(errorOf(refused), {status: 503, code: 'overloaded'})
  assert.match(refused.body.error.message, 'stopping')
  // The waiting jobs will never run: they end at once, while the running one still runs (a SIGKILL after a grace
  // shorter than that job would otherwise lose their callbacks), and a poll during the drain sees them cancelled.
  const early = await Promise.all(queued.map((r) => receiver.callbackFor(r.body.id, 5000)))
  assert.equal(early.map((c) => JSON.parse(c.body).status), ['cancelled', 'cancelled'])
  const polled = await fetch(`${server.base}/v1/jobs/${queued[0].body.id}`)
  assert.is(((await polled.json()) as {status: string}).status, 'cancelled')
  assert.ok(server.logs.some((l) => /stopping/.test(l) && queued.every((r) => l.includes(r.body.id))), server.logs.join('\n'))
  const stopped = server.stop()
  late.finish()
  const lateAnswer = await late.answer
  held.release()
  await stopped
  assert.equal(errorOf(lateAnswer), {status: 503, code: 'overloaded'})

  const ends = await Promise.all([running, ...queued].map((r) => receiver.callbackFor(r.body.id, 5000)))
  assert.equal(ends.map((c) => JSON.parse(c.body).status), ['done', 'cancelled', 'cancelled'])
  assert.is(receiver.received.length, 3)
  const dropped = server.logs.filter((l) => /lost with the process|stopping/.test(l) && queued.every((r) => l.includes(r.body.id)))
  assert.is(dropped.length, 1, server.logs.join('\n'))
  assert.equal(await readdir(storage), [])
}

/** An in-process image job queue in `storage` whose ended jobs go to `ended`. */
function imageQueue(ended: ImageJobBody[], onDropped?: (ids: string[]) => void) {
  return createMemoryImageQueue({storage, ttlSeconds: 60, maxPerClient: 4, describeError: () => ({code: 'internal', message: 'x'}), onEnd: (body) => ended.push(body), onDropped})
}

test('image jobs left waiting when the in-process queue closes end cancelled, their uploads removed; a stopping queue takes none', async () => {
  const ended: ImageJobBody[] = []
  const dropped: string[][] = []
  const queue = imageQueue(ended, (ids) => dropped.push(ids))
  let release = () => {}
  const released = new Promise<void>((resolve) => (release = resolve))
  queue.work(async (chunk) => {
    await released
    return chunk.items.map((_, i) => JSON.stringify({index: chunk.start + i}))
  })
  const ids = ['0b6f3c52-6d2e-4f7e-9a0e-5f8d1c2b3a4d', '1b6f3c52-6d2e-4f7e-9a0e-5f8d1c2b3a4d']
  for (const id of ids) {
    mkdirSync(join(storage, id))
    writeFileSync(join(storage, id, 'item-0'), 'x')
    await queue.submit({id, client: 'c', items: [{file: 'a.png'}], callbackUrl: 'https://example.com/hook'})
  }
  queue.stopping()
  const refused = await queue.reserve('c', '2b6f3c52-6d2e-4f7e-9a0e-5f8d1c2b3a4d').then(
    () => 'taken',
    (e: {code?: string}) => e.code,
  )
  assert.is(refused, 'overloaded')
  // The waiting job ends as the queue starts stopping, not once the chunk running (held) is done.
  await until(() => ended.length === 1)
  assert.equal(ended.map((b) => [b.id, b.status]), [[ids[1], 'cancelled']])
  assert.equal(dropped, [[ids[1]]])
  const closed = queue.close()
  release()
  await closed
  assert.equal(ended.map((b) => [b.id, b.status]), [[ids[1], 'cancelled'], [ids[0], 'done']])
  assert.equal(dropped, [[ids[1]]])
  assert.equal(await readdir(storage), [])
})

test('an image job with chunks left waiting ends cancelled as the in-process queue starts stopping, its running chunk stopped', async () => {
  const ended: ImageJobBody[] = []
  const queue = imageQueue(ended)
  let started = () => {}
  const running = new Promise<void>((resolve) => (started = resolve))
  const stopped: boolean[] = []
  queue.work(async (chunk, signal) => {
    started()
    // Held until stopped: a chunk that went on would be scored for a job already cancelled.
    await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), {once: true}))
    stopped.push(signal.aborted)
    throw new Error('stopped')
  })
  const id = '3b6f3c52-6d2e-4f7e-9a0e-5f8d1c2b3a4d'
  mkdirSync(join(storage, id))
  await queue.submit({id, client: 'c', items: Array.from({length: CHUNK_SIZE + 1}, (_, i) => ({file: `${i}.png`}))})
  await running
  queue.stopping()
  const late = new Promise<never>((_, reject) => setTimeout(() => reject(new Error('close still waits for the chunk of a cancelled job')), 5000).unref())
  await Promise.race([queue.close(), late])
  assert.equal(stopped, [true])
  assert.equal(ended.map((b) => [b.id, b.status]), [[id, 'cancelled']])
  assert.equal(await readdir(storage), [])
})

test.run()
