// A worker killed mid-job: BullMQ's stalled-job check gives the job to another worker, up to the limit
// (maxStalledCount), after which the job fails; its upload is removed either way.
import {spawn, type ChildProcess} from 'node:child_process'
import {randomUUID} from 'node:crypto'
import {existsSync, mkdirSync, readFileSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {createBullQueue} from '../../src/server/jobs/bullmq.js'
import {LOCK_DURATION_MS, recoverySeconds, STALLED_INTERVAL_MS} from '../../src/server/jobs/recovery.js'
import type {JobQueue} from '../../src/server/jobs/types.js'
import {ROOT, runInProcess} from '../helpers/cli.js'
import {startRedis, type RedisServer} from '../helpers/redis.js'
import {nodeArgs} from '../helpers/ts-script.js'
import {tempDir} from './harness.js'

const dir = tempDir('mod-jobs-stalled-')
let redis: RedisServer
let queue: JobQueue
const children: ChildProcess[] = []

/** A worker process; resolves once it printed `line` (e.g. "ready", "started <id>"). */
function worker(mode: 'hang' | 'finish') {
  const child = spawn(process.execPath, [...nodeArgs(join(import.meta.dirname, 'jobs', 'stall-worker.ts')), redis.url, mode, dir.path], {
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  children.push(child)
  let out = ''
  const waiting = new Set<() => void>()
  child.stdout?.setEncoding('utf8').on('data', (d: string) => {
    out += d
    for (const w of waiting) w()
  })
  const printed = (line: string) =>
    new Promise<void>((resolve) => {
      const check = () => {
        if (!out.split('\n').includes(line)) return
        waiting.delete(check)
        resolve()
      }
      waiting.add(check)
      check()
    })
  const killed = () => {
    const exited = new Promise((resolve) => child.once('exit', resolve))
    child.kill('SIGKILL')
    return exited
  }
  return {printed, killed}
}

function spec() {
  const id = randomUUID()
  const jobDir = join(dir.path, id)
  mkdirSync(jobDir)
  writeFileSync(join(jobDir, 'upload'), 'video bytes')
  return {id, source: 'clip.mp4', dir: jobDir, file: join(jobDir, 'upload'), fps: 1, minFrames: 1, stopOnViolation: false}
}

async function ended(id: string): Promise<string> {
  const end = Date.now() + 30_000
  for (;;) {
    const job = await queue.get(id)
    if (job && !['queued', 'running'].includes(job.status)) return job.status
    if (Date.now() > end) throw new Error(`job ${id} still ${job?.status}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

test.before(async () => {
  redis = await startRedis()
  queue = createBullQueue({url: redis.url, storage: dir.path, limit: 10, ttlSeconds: 60, log: () => {}, describeError: () => ({code: 'internal', message: 'x'})})
})

// Every test starts without workers.
test.after.each(async () => {
  await Promise.all(
    children.splice(0).map((c) => (c.exitCode === null && c.signalCode === null ? new Promise((r) => c.once('exit', r).kill('SIGKILL')) : undefined)),
  )
})

test.after(async () => {
  await queue.close()
  await redis.remove()
  dir.remove()
})

test('the job of a worker killed mid-run is finished by another worker', async () => {
  const a = worker('hang')
  await a.printed('ready')
  const s = spec()
  await queue.submit(s)
  await a.printed(`started ${s.id}`)
  await a.killed()
  const b = worker('finish')
  await b.printed(`started ${s.id}`)
  assert.is(await ended(s.id), 'done')
  assert.is(existsSync(s.dir), false)
})

test('a job whose workers keep dying fails once the limit is reached', async () => {
  const a = worker('hang')
  const s = spec()
  await queue.submit(s)
  await a.printed(`started ${s.id}`)
  await a.killed()
  const b = worker('hang')
  await b.printed(`started ${s.id}`)
  // Its open run is stored while it runs.
  const stored = Date.now() + 5000
  while ((await queue.get(s.id))?.open_segments.length !== 1 && Date.now() < stored) await new Promise((resolve) => setTimeout(resolve, 20))
  assert.is((await queue.get(s.id))?.open_segments.length, 1)
  await b.killed()
  worker('finish')
  assert.is(await ended(s.id), 'failed')
  const job = await queue.get(s.id)
  // A job that ended has no run open.
  assert.equal(job?.open_segments, [])
  assert.equal(job?.error?.code, 'internal')
  assert.match(job?.error?.message ?? '', /interrupted too many times/)
  const end = Date.now() + 5000
  while (existsSync(s.dir) && Date.now() < end) await new Promise((resolve) => setTimeout(resolve, 20))
  assert.is(existsSync(s.dir), false)
})

test('the recovery time that docs/video.md and mod worker --help state is the bound of the timings the queue uses', async () => {
  // A lock that lasts 30 s after the dead worker's last renewal, then at most one check interval.
  assert.equal([LOCK_DURATION_MS, STALLED_INTERVAL_MS, recoverySeconds()], [30_000, 5_000, 35])
  // The bound holds only while the first check after a death (up to two intervals) comes before the lock expires.
  assert.ok(LOCK_DURATION_MS >= 2 * STALLED_INTERVAL_MS)
  const page = readFileSync(join(ROOT, 'docs', 'video.md'), 'utf8').replaceAll(/\s+/g, ' ')
  assert.ok(page.includes(`is run again by another worker within ${recoverySeconds()} s`), 'docs/video.md states the bound')
  const help = await runInProcess(['worker', '--help'])
  assert.ok(help.stdout.replaceAll(/\s+/g, ' ').includes(`to another worker within ${recoverySeconds()} s`), help.stdout)
})

test.run()
