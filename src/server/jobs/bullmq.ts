import {Queue, Worker, type Job as BullJob} from 'bullmq'
import {Redis} from 'ioredis'

import {ModError} from '../../lib/errors.js'
import {createAjv} from '../ajv.js'
import type {Log} from '../errors.js'
import {jobData, readJobData, type JobData} from './data.js'
import {queueFull} from './admission.js'
import {LOCK_DURATION_MS, MAX_STALLED_COUNT, STALLED_INTERVAL_MS} from './recovery.js'
import {Job, jobSegment, type JobBody} from './schema.js'
import {metaKey} from './images/keys.js'
import {visibleTo} from './owner.js'
import {jobFilesInPlace, jobPaths, removeJobFolder} from './storage.js'
import {DEFAULT_COMMAND_TIMEOUT_MS, guarded, redisConnection} from './redis-connection.js'
import {SWEEP_GRACE_MS, SWEEP_INTERVAL_MS, sweepJobFolders} from './sweep.js'
import {newJob, type JobError, type JobQueue, type JobRunner, type JobSpec, type QueueHooks} from './types.js'

export interface BullQueueOptions extends QueueHooks {
  /** MOD_REDIS_URL. */
  url: string
  /** Jobs waiting before submit refuses with `overloaded`. */
  limit: number
  ttlSeconds: number
  /** MOD_JOB_STORAGE: every job's files are in the folder its id names here, and nowhere else. */
  storage: string
  log: Log
  /** BullMQ's stalled-job handling (recovery.ts): how long a worker's lock on a job lasts without renewal. */
  lockDurationMs?: number
  /** How often workers look for jobs whose worker died. */
  stalledIntervalMs?: number
  /** Times a job whose worker died is put back before it fails. */
  maxStalledCount?: number
  /** Age of an orphan job folder before a worker removes it (sweep.ts). */
  sweepGraceMs?: number
  sweepIntervalMs?: number
  /** Deadline of one Redis command from a request, so that a Redis outage answers 503 instead of waiting. Default 2000 ms. */
  commandTimeoutMs?: number
}

export const QUEUE_NAME = 'mod-video-jobs'
const CANCEL_CHANNEL = 'mod:jobs:cancel'
/** Held by the one DELETE of a job that is under way, so that a second one at the same time finds no job. */
const deletingKey = (id: string) => `mod:jobs:deleting:${id}`
/** Longest a DELETE holds it (a few Redis commands), should its process die meanwhile. */
const DELETING_MS = 30_000

/** What the processor stores beside the spec while it runs (BullMQ's job progress). */
interface Progress {
  frames_analyzed: number
  seconds: number
  segments: JobBody['segments']
  updated_at: string
}

/** How a run ended; the job completes in BullMQ with this, so only a worker's death fails it there. */
type Outcome = {status: 'done'; result: NonNullable<JobBody['result']>} | {status: 'failed'; error: JobError} | {status: 'cancelled'}

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

const REFUSED: JobError = {code: 'internal', message: 'the job was not run: its data in the queue is not valid'}

/**
 * Jobs on BullMQ: any process with the same MOD_REDIS_URL accepts them, and any that calls `work` runs them
 * (one at a time each). A worker that dies mid-job loses its lock; BullMQ's stalled-job check puts the job
 * back for another worker, up to `maxStalledCount` times, then fails it. Uploads live in MOD_JOB_STORAGE,
 * which every node must mount at the same path. Redis holds no paths: what a job reads and removes is the
 * folder its id names in the storage, and a job whose data this server could not have written is refused.
 */
export function createBullQueue(o: BullQueueOptions): JobQueue {
  const {client, logOnce} = redisConnection(o.url, 'job queue', o.log, o.commandTimeoutMs)
  const queue = new Queue<JobData, Outcome>(QUEUE_NAME, {
    connection: client,
    skipWaitingForReady: true,
    defaultJobOptions: {
      removeOnComplete: {age: o.ttlSeconds},
      removeOnFail: {age: o.ttlSeconds},
    },
  })
  queue.on('error', logOnce('job queue'))
  let worker: Worker<JobData, Outcome> | undefined
  // Connections BullMQ was handed are not closed by it.
  const connections: Redis[] = [client]
  const running = new Map<string, AbortController>()
  /** Removals of deleted jobs whose worker has just let them go; close() waits for them. */
  const purges = new Set<Promise<void>>()
  let sweeper: NodeJS.Timeout | undefined

  /** The job's spec, or undefined (logged) for a job this server could not have queued. */
  function specOf(job: BullJob<JobData, Outcome>): (JobSpec & {created_at: string; deleted: boolean}) | undefined {
    try {
      return readJobData(job.data, job.id, o.storage)
    } catch (e) {
      logOnce('job queue')(e as Error)
      return undefined
    }
  }

  /** The job as a client sees it; undefined when it is unknown, deleted, or what Redis holds of it is not valid. */
  async function body(job: BullJob<JobData, Outcome>): Promise<JobBody | undefined> {
    const spec = specOf(job)
    if (!spec || spec.deleted) return undefined
    const state = await job.getState()
    const base = newJob(spec, new Date(spec.created_at))
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
    return checked(spec.id, stateBody())

    function stateBody(): JobBody | undefined {
      if (state === 'completed' && job.returnvalue) return {...current, ...job.returnvalue, updated_at: finished ?? current.updated_at}
      if (state === 'failed') return {...current, status: 'failed', error: STALLED, updated_at: finished ?? current.updated_at}
      if (state === 'active') return {...current, status: 'running'}
      if (state === 'unknown') return undefined
      return current
    }
  }

  /** Progress and outcomes come from Redis too: a body that is not a job's is not answered. */
  function checked(id: string, job: unknown): JobBody | undefined {
    if (job === undefined || validJob(job)) return job
    logOnce('job queue')(new Error(`job ${JSON.stringify(id)} in the queue was not answered: what the queue holds of it is not valid`))
    return undefined
  }

  async function finish(spec: JobSpec, end: JobBody): Promise<void> {
    await removeJobFolder(o.storage, spec.id)
    o.onEnd?.(end, spec)
  }

  /** Whether DELETE has marked the job, as Redis holds it now (a worker's copy of the job is older). */
  async function isDeleted(id: string): Promise<boolean> {
    const job = await queue.getJob(id)
    return job?.data.deleted === true
  }

  /**
   * Removes a deleted job once its worker has let it go. DELETE marks the job before it tries to remove it, and
   * this looks at the mark after the worker's lock is released, so one of the two removes it.
   */
  function purge(id: string | undefined): void {
    if (id === undefined) return
    const purging = isDeleted(id)
      .then(async (deleted) => {
        if (deleted) await queue.remove(id)
      })
      .catch(logOnce('job queue'))
      .finally(() => purges.delete(purging))
    purges.add(purging)
  }

  /** DELETE of one job (remove() makes sure it is the only one under way). */
  async function deleteJob(id: string, owner: string | undefined): Promise<JobBody | undefined> {
    const job = await queue.getJob(id)
    const spec = job && specOf(job)
    if (!spec || !visibleTo(spec.owner, owner)) return undefined
    const current = await body(job)
    if (!current) return undefined
    const ending = current.status === 'queued' || current.status === 'running'
    const answer: JobBody = ending ? {...current, status: 'cancelled', updated_at: new Date().toISOString()} : current
    // Redis refuses to remove a job a worker holds. The mark makes it unknown at once, makes a worker that takes
    // it now drop it, and has its worker remove it when the run stops (purge).
    try {
      await job.updateData({...job.data, deleted: true})
    } catch (e) {
      // It expired just now.
      if ((await queue.getJob(id)) === undefined) return undefined
      throw e
    }
    // The worker running it may be another process: it hears this and aborts.
    if (current.status === 'running') await client.publish(CANCEL_CHANNEL, id)
    const removed = (await queue.remove(id)) === 1
    // A running job's upload goes now too: its worker has it open or never opens it.
    await removeJobFolder(o.storage, id)
    // A job removed before any worker took it ends here; a running one ends (callback included) in its worker.
    if (removed && current.status === 'queued') o.onEnd?.(answer, spec)
    return answer
  }

  async function sweep(): Promise<void> {
    const removed = await sweepJobFolders({
      storage: o.storage,
      graceMs: o.sweepGraceMs ?? SWEEP_GRACE_MS,
      // A folder of the same storage may hold an image job's uploads.
      isKnown: async (id) => (await queue.getJob(id)) !== undefined || (await client.exists(metaKey(id))) === 1,
    })
    if (removed.length > 0) o.log(`job storage: removed ${removed.length} folder(s) of jobs the queue no longer has`)
  }

  async function process(job: BullJob<JobData, Outcome>, runner: JobRunner): Promise<Outcome> {
    // A refused job touches no file and calls no callback: nothing it names can be trusted.
    const spec = specOf(job)
    if (!spec) return {status: 'failed', error: REFUSED}
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
      // DELETE may have come while this worker was taking the job, before it listened for it.
      if (await isDeleted(spec.id).catch(() => false)) controller.abort()
      save({})
      if (!(await jobFilesInPlace(spec))) {
        throw new ModError('internal', `job ${spec.id}: its upload is not a file in ${spec.dir} (is MOD_JOB_STORAGE the same folder on every node?)`)
      }
      const result = await runner(spec, {
        signal: controller.signal,
        onProgress: (frames, seconds) => save({frames_analyzed: frames, seconds}),
        onSegment: (label, segment) => save({segments: [...progress.segments, jobSegment(label, segment)]}),
      })
      // A DELETE heard too late to stop the run still cancels it: the result is not kept.
      const deleted = controller.signal.aborted || (await isDeleted(spec.id).catch(() => false))
      outcome = deleted ? {status: 'cancelled'} : {status: 'done', result}
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
      const paths = jobPaths(o.storage, spec.id)
      if (spec.dir !== paths.dir || spec.file !== paths.file) {
        throw new ModError('internal', `job ${spec.id}: its files are not where its id puts them (${paths.file})`)
      }
      await this.checkRoom()
      const now = new Date()
      await guarded(() => queue.add('video', jobData(spec, now), {jobId: spec.id}))
      return newJob(spec, now)
    },
    async get(id, owner) {
      return guarded(async () => {
        const job = await queue.getJob(id)
        return job && visibleTo(specOf(job)?.owner, owner) ? body(job) : undefined
      })
    },
    async remove(id, owner) {
      return guarded(async () => {
        if ((await client.set(deletingKey(id), '1', 'PX', DELETING_MS, 'NX')) === null) return undefined
        try {
          return await deleteJob(id, owner)
        } finally {
          await client.del(deletingKey(id))
        }
      })
    },    work(runner) {
      const connection = new Redis(o.url, {maxRetriesPerRequest: null})
      connection.on('error', logOnce('job worker (redis)'))
      connections.push(connection)
      worker = new Worker<JobData, Outcome>(QUEUE_NAME, (job) => process(job, runner), {
        connection,
        concurrency: 1,
        lockDuration: o.lockDurationMs ?? LOCK_DURATION_MS,
        stalledInterval: o.stalledIntervalMs ?? STALLED_INTERVAL_MS,
        maxStalledCount: o.maxStalledCount ?? MAX_STALLED_COUNT,
      })
      worker.on('error', logOnce('job worker'))
      // Only a job whose workers kept dying ends failed in BullMQ; its files and callback are handled here.
      worker.on('failed', (job) => {
        const spec = job && specOf(job)
        if (!job || !spec) return
        void body(job)
          .then((end) => finish(spec, end ?? {...newJob(spec), status: 'failed', error: STALLED}))
          .finally(() => purge(job.id))
      })
      worker.on('completed', (job) => purge(job.id))
      // Folders of jobs lost with Redis (one that keeps nothing across restarts) would stay forever otherwise.
      // One sweep at a time: on a slow disk or a busy machine a sweep can outlast the interval, and two sweeps
      // of the same folders would both count (and try to remove) the same orphans.
      let sweepRunning = false
      const sweeping = (): void => {
        if (sweepRunning) return
        sweepRunning = true
        void sweep()
          .catch(logOnce('job storage'))
          .finally(() => (sweepRunning = false))
      }
      sweeping()
      sweeper = setInterval(sweeping, o.sweepIntervalMs ?? SWEEP_INTERVAL_MS)
      sweeper.unref()
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
      await settled([queue.waitUntilReady(), ...(worker ? [worker.waitUntilReady()] : [])], o.commandTimeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS)
      clearInterval(sweeper)
      await worker?.close()
      await Promise.all(purges)
      await queue.close()
      for (const c of connections) c.disconnect()
    },
  }
}

const validJob = createAjv().compile<JobBody>(Job)
