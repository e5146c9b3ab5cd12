// An image job whose Redis stalls for longer than a command may take: a chunk's record reaches Redis after its
// worker gave up waiting, so BullMQ runs the chunk again. The lines recorded stay as they are (also once the job is
// done and its uploads removed), a chunk of a job that is done does not run again, and the job still ends once: its
// uploads removed and its end reported once.
import {randomUUID} from 'node:crypto'
import {existsSync, mkdirSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {Redis} from 'ioredis'
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {createRedisImageQueue} from '../../src/server/jobs/images/redis.js'
import type {ImageJobBody} from '../../src/server/jobs/images/schema.js'
import type {Chunk, ImageJobQueue} from '../../src/server/jobs/images/types.js'
import {startRedis, type RedisServer} from '../helpers/redis.js'
import {tempDir} from './harness.js'

const dir = tempDir('mod-jobs-images-pause-')
/** Redis holds every client this long: longer than a command may take here. */
const PAUSE_MS = 700
let redis: RedisServer
let admin: Redis
let queue: ImageJobQueue
const ended: ImageJobBody[] = []
/** Runs of each chunk, by `<job>.<index>`. */
const runs = new Map<string, number>()
/** The chunk whose first run ends with Redis paused, so that its record lands after its worker stopped waiting. */
let pausing = ''

test.before(async () => {
  redis = await startRedis()
  admin = new Redis(redis.url)
  queue = createRedisImageQueue({
    url: redis.url,
    storage: dir.path,
    ttlSeconds: 600,
    maxPerClient: 2,
    log: () => {},
    describeError: (e) => ({code: 'internal', message: String(e)}),
    onEnd: (body) => ended.push(body),
    commandTimeoutMs: 200,
  })
  queue.work(async (chunk: Chunk) => {
    const name = `${chunk.job}.${chunk.index}`
    const run = (runs.get(name) ?? 0) + 1
    runs.set(name, run)
    if (name === pausing && run === 1) await admin.client('PAUSE', PAUSE_MS, 'ALL')
    return chunk.items.map((_, i) => JSON.stringify({index: chunk.start + i, run}))
  })
})

test.after(async () => {
  await queue.close()
  admin.disconnect()
  await redis.remove()
  dir.remove()
})

/** A job of `count` uploaded items, their files in its folder; chunk `paused` ends its first run with Redis paused. */
async function submitted(count: number, paused: number): Promise<string> {
  const id = randomUUID()
  pausing = `${id}.${paused}`
  mkdirSync(join(dir.path, id))
  for (let i = 0; i < count; i++) writeFileSync(join(dir.path, id, `item-${i}`), 'x')
  await queue.submit({id, client: 'c', items: Array.from({length: count}, (_, i) => ({file: `${i}.png`}))})
  return id
}

/** Waits until BullMQ holds none of the job's chunks: each completed (and removed), the retried one included. */
async function settled(id: string, chunks: number): Promise<void> {
  const end = Date.now() + 10_000
  while (Date.now() < end) {
    const left = await Promise.all(Array.from({length: chunks}, (_, i) => admin.exists(`bull:mod-image-chunks:${id}.${i}`)))
    if (left.every((n) => n === 0)) return
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  assert.unreachable(`the chunks of job ${id} were still in the queue after 10 s`)
}

test('a chunk recorded late, run again after its job is done, neither runs nor overwrites a line', async () => {
  const ITEMS = 40
  const id = await submitted(ITEMS, 0)
  await settled(id, 2)
  assert.is(runs.get(`${id}.0`), 1, 'the chunk of a job that is done ran again')
  const lines = (await queue.lines(id, 0, ITEMS)).map((l) => JSON.parse(l ?? 'null'))
  assert.equal(lines, Array.from({length: ITEMS}, (_, index) => ({index, run: 1})))
  assert.equal(ended.filter((b) => b.id === id).map((b) => b.status), ['done'])
  assert.not.ok(existsSync(join(dir.path, id)))
})

test('a job whose last record lands late still ends: its uploads removed, its end reported once', async () => {
  const id = await submitted(5, 0)
  await settled(id, 1)
  await new Promise((resolve) => setTimeout(resolve, 300))
  assert.equal(ended.filter((b) => b.id === id).map((b) => [b.status, b.progress.items_done]), [['done', 5]])
  assert.not.ok(existsSync(join(dir.path, id)), 'the uploads of a job that is done are still there')
  assert.is(runs.get(`${id}.0`), 1)
})

test('job places whose taking timed out are given back: the client is not refused for jobs that do not exist', async () => {
  await admin.client('PAUSE', PAUSE_MS, 'ALL')
  const refused = await Promise.all([randomUUID(), randomUUID()].map((id) => queue.reserve('d', id).then(() => 'taken', (e: {code?: string}) => e.code)))
  assert.equal(refused, ['overloaded', 'overloaded'])
  await new Promise((resolve) => setTimeout(resolve, PAUSE_MS))
  const place = await queue.reserve('d', randomUUID())
  await place.release()
})

test('a job whose record times out is refused and leaves no record, and its place is given back', async () => {
  const id = randomUUID()
  const place = await queue.reserve('e', id)
  await admin.client('PAUSE', PAUSE_MS, 'ALL')
  const refused = await queue.submit({id, client: 'e', items: [{url: 'https://example.com/a.png'}]}).then(
    () => 'queued',
    (e: {code?: string}) => e.code,
  )
  assert.is(refused, 'overloaded')
  await place.release()
  await new Promise((resolve) => setTimeout(resolve, PAUSE_MS))
  assert.is(await admin.exists(`mod:imagejob:${id}`), 0)
  assert.is(await admin.zcard('mod:imagejobs:client:e'), 0)
})

test.run()
