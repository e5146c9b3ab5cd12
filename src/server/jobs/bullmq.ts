import {rm} from 'node:fs/promises'

import {Queue, Worker, type Job as BullJob} from 'bullmq'
import {Redis} from 'ioredis'

import {ModError} from '../../lib/errors.js'
import type {Log} from '../errors.js'
import type {JobBody} from './schema.js'
import {queueFull} from './memory.js'
import {newJob, type JobError, type JobQueue, type JobRunner, type JobSpec, type QueueHooks} from './types.js'

export interface BullQueueOptions extends QueueHooks {
  /** MOD_REDIS_URL. */
  url: string
  /** Jobs waiting before submit refuses with `overloaded`. */
  limit: number
  ttlSeconds: number
  log: Log
  /** BullMQ's stalled-job handling: how long a worker's lock on a job lasts without renewal. Default 30 000 ms. */
  lockDurationMs?: number
  /** How often workers look for jobs whose worker died. Default 30 000 ms. */
  stalledIntervalMs?: number
  /** Times a job whose worker died is put back before it fails. Default 2. */
  maxStalledCount?: number
  /** Deadline of one Redis command from a request, so that a Redis outage answers 503 instead of waiting. Default 2000 ms. */
  commandTimeoutMs?: number
}

const QUEUE_NAME = 'mod-video-jobs'
const CANCEL_CHANNEL = 'mod:jobs:cancel'
const cancelledKey = (id: string) => `mod:jobs:cancelled:${id}`

/** What the processor stores beside the spec while it runs (BullMQ's job progress). */
interface Progress {
  frames_analyzed: number
  seconds: number
  segments: JobBody['segments']
  updated_at: string
}

/** How a run ended; the job completes in BullMQ with this, so only a worker's death fails it there. */
type Outcome = {status: 'done'; result: NonNullable<JobBody['result']>} | {status: 'failed'; error: JobError} | {status: 'cancelled'}

type Data = JobSpec & {created_at: string}

/** The client is not told Redis's own error (it names addresses and client internals); it stays in details. */
const unreachable = (e: unknown): ModError =>
  new ModError('overloaded', 'the job queue is not reachable; retry later', {cause: e instanceof Error ? e.message : String(e)})

/** Redis errors become `overloaded` (503 + Retry-After): the jobs API is down, the rest of the server is not. */
async function guarded<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work()
  } catch (e) {
    if (e instanceof ModError) throw e
    throw unreachable(e)
  }
}

/** Waits until every promise has settled, or `ms` has passed. */
async function settled(promises: Promise<unknown>[], ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  const deadline = new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))
  await Promise.race([Promise.allSettled(promises), deadline])
  clearTimeout(timer)
}

const STALLED: JobError = {
  code: 'internal',
  message: 'the job was interrupted too many times (its worker stopped while running it)',
}

/**
 * Jobs on BullMQ: any process with the same MOD_REDIS_URL accepts them, and any that calls `work` runs them
 * (one at a time each). A worker that dies mid-job loses its lock; BullMQ's stalled-job check puts the job
 * back for another worker, up to `maxStalledCount` times, then fails it. Uploads live in MOD_JOB_STORAGE,
 * which every node must mount at the same path.
 */
export function createBullQueue(o: BullQueueOptions): JobQueue {
  const logged = new Set<string>()
  const logOnce = (what: string) => (e: Error) => {
    const line = `${what}: ${e.message}`
    if (logged.has(line)) return
    logged.add(line)
    o.log(line)
  }
  const client = new Redis(o.url, {maxRetriesPerRequest: 1, commandTimeout: o.commandTimeoutMs ?? 2000})
  client.on('error', logOnce('job queue (redis)'))
  client.on('ready', () => logged.clear())
  const queue = new Queue<Data, Outcome>(QUEUE_NAME, {
    connection: client,
    skipWaitingForReady: true,
    defaultJobOptions: {
      removeOnComplete: {age: o.ttlSeconds},
      removeOnFail: {age: o.ttlSeconds},
    },
  })
  queue.on('error', logOnce('job queue'))
  let worker: Worker<Data, Outcome> | undefined
  // Connections BullMQ was handed are not closed by it.
  const connections: Redis[] = [client]
  const running = new Map<string, AbortController>()

  async function body(job: BullJob<Data, Outcome>): Promise<JobBody | undefined> {
    const state = await job.getState()
    const base = newJob(job.data, new Date(job.data.created_at))
    const progress = job.progress as Partial<Progress> | number
    const seen = typeof progress === 'object' ? progress : {}
    const current: JobBody = {
      ...base,
      updated_at: seen.updated_at ?? base.updated_at,
      progress: {frames_analyzed: seen.frames_analyzed ?? 0, seconds: seen.seconds ?? 0},
      segments: seen.segments ?? [],
    }
    const finished = job.finishedOn === undefined ? undefined : new Date(job.finishedOn).toISOString()
    if (job.finishedOn !== undefined && job.finishedOn + o.ttlSeconds * 1000 < Date.now()) return undefined
    if (state === 'completed' && job.returnvalue) return {...current, ...job.returnvalue, updated_at: finished ?? current.updated_at}
    if (state === 'failed') return {...current, status: 'failed', error: STALLED, updated_at: finished ?? current.updated_at}
    if (state === 'active') return {...current, status: 'running'}
    if (state === 'unknown') return undefined
    return current
  }

  async function finish(spec: JobSpec, end: JobBody): Promise<void> {
    await rm(spec.dir, {recursive: true, force: true})
    o.onEnd?.(end, spec)
  }

  async function process(job: BullJob<Data, Outcome>, runner: JobRunner): Promise<Outcome> {
    const spec = job.data
    const controller = new AbortController()
    running.set(spec.id, controller)
    let progress: Progress = {frames_analyzed: 0, seconds: 0, segments: [], updated_at: new Date().toISOString()}
    // Progress is written in order; a write that fails (Redis away for a moment) is dropped, not fatal.
    let writing = Promise.resolve()
    const save = (change: Partial<Progress>) => {
      progress = {...progress, ...change, updated_at: new Date().toISOString()}
      const snapshot = progress
      writing = writing.then(() => job.updateProgress(snapshot as unknown as object)).catch(() => {})
    }
    let outcome: Outcome
    try {
      if ((await client.exists(cancelledKey(spec.id)).catch(() => 0)) === 1) controller.abort()
      save({})
      const result = await runner(spec, {
        signal: controller.signal,
        onProgress: (frames, seconds) => save({frames_analyzed: frames, seconds}),
        onSegment: (label, segment) => save({segments: [...progress.segments, {label, ...segment}]}),
      })
      outcome = controller.signal.aborted ? {status: 'cancelled'} : {status: 'done', result}
    } catch (e) {
      outcome = controller.signal.aborted ? {status: 'cancelled'} : {status: 'failed', error: o.describeError(e)}
    } finally {
      running.delete(spec.id)
    }
    await writing
    const end = await body(job)
    await finish(spec, {...(end ?? newJob(spec)), ...progressOf(progress), ...outcome, updated_at: new Date().toISOString()})
    return outcome
  }

  const progressOf = (p: Progress) => ({progress: {frames_analyzed: p.frames_analyzed, seconds: p.seconds}, segments: p.segments})

  return {
    async checkRoom() {
      const waiting = await guarded(() => queue.getWaitingCount())
      if (waiting >= o.limit) throw queueFull(o.limit)
    },
    async submit(spec) {
      await this.checkRoom()
      const data: Data = {...spec, created_at: new Date().toISOString()}
      const job = await guarded(() => queue.add('video', data, {jobId: spec.id}))
      return newJob(job.data, new Date(data.created_at))
    },
    async get(id) {
      return guarded(async () => {
        const job = await queue.getJob(id)
        if (job) return body(job)
        const tombstone = await client.get(cancelledKey(id))
        return tombstone ? (JSON.parse(tombstone) as JobBody) : undefined
      })
    },
    async cancel(id) {
      return guarded(async () => {
        const job = await queue.getJob(id)
        if (!job) return this.get(id)
        const current = await body(job)
        if (!current || (current.status !== 'queued' && current.status !== 'running')) return current
        if (current.status === 'queued') {
          // remove() refuses a job a worker has just locked; then it is cancelled as a running one below.
          const removed = await job.remove().then(
            () => true,
            () => false,
          )
          if (removed) {
            const cancelled: JobBody = {...current, status: 'cancelled', updated_at: new Date().toISOString()}
            await client.set(cancelledKey(id), JSON.stringify(cancelled), 'EX', o.ttlSeconds)
            await finish(job.data, cancelled)
            return cancelled
          }
        }
        // The worker running it may be another process: it hears this and aborts; the mark covers a worker that
        // locks the job just now.
        await client.set(cancelledKey(id), JSON.stringify({...current, status: 'cancelled'}), 'EX', o.ttlSeconds)
        await client.publish(CANCEL_CHANNEL, id)
        return current
      })
    },
    work(runner) {
      const connection = new Redis(o.url, {maxRetriesPerRequest: null})
      connection.on('error', logOnce('job worker (redis)'))
      connections.push(connection)
      worker = new Worker<Data, Outcome>(QUEUE_NAME, (job) => process(job, runner), {
        connection,
        concurrency: 1,
        lockDuration: o.lockDurationMs ?? 30_000,
        stalledInterval: o.stalledIntervalMs ?? 30_000,
        maxStalledCount: o.maxStalledCount ?? 2,
      })
      worker.on('error', logOnce('job worker'))
      // Only a job whose workers kept dying ends failed in BullMQ; its files and callback are handled here.
      worker.on('failed', (job) => {
        if (!job) return
        void body(job).then((end) => finish(job.data, end ?? {...newJob(job.data), status: 'failed', error: STALLED}))
      })
      const subscriber = new Redis(o.url, {maxRetriesPerRequest: null})
      subscriber.on('error', logOnce('job worker (redis)'))
      connections.push(subscriber)
      subscriber.on('message', (_channel, id: string) => running.get(id)?.abort())
      void subscriber.subscribe(CANCEL_CHANNEL).catch(() => {})
    },
    async close() {
      // BullMQ reports a connection closed while it is still being set up as an 'error' on an object that no
      // longer has a listener, which ends the process: a queue closed right after it started (a short-lived
      // server) first lets its connections finish, for no longer than a Redis command may take.
      await settled([queue.waitUntilReady(), ...(worker ? [worker.waitUntilReady()] : [])], o.commandTimeoutMs ?? 2000)
      await worker?.close()
      await queue.close()
      for (const c of connections) c.disconnect()
    },
  }
}
