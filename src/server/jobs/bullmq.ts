import type {Job as BullJob} from 'bullmq'

import {ModError} from '../../lib/errors.js'
import {createAjv} from '../ajv.js'
import type {Log} from '../errors.js'
import {queueFull} from './admission.js'
import {bullBackend, type BullBackend} from './bull-backend.js'
import {jobData, readJobData, type JobData} from './data.js'
import {LOCK_DURATION_MS, MAX_STALLED_COUNT, STALLED_INTERVAL_MS} from './recovery.js'
import {closedSegment, Job, openSegments, type JobBody} from './schema.js'
import {metaKey} from './images/keys.js'
import {visibleTo} from './owner.js'
import {attempt, jobSkeleton, type Attempt, type JobSkeleton} from './skeleton.js'
import {jobFilesInPlace, jobPaths, removeJobFolder} from './storage.js'
import {guarded} from './redis-connection.js'
import {SWEEP_GRACE_MS, SWEEP_INTERVAL_MS, sweepEvery, sweepJobFolders} from './sweep.js'
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
  open_segments: JobBody['open_segments']
  updated_at: string
}

/**
 * How a run ended; the job completes in BullMQ with this, so only a worker's death fails it there. `updated_at`, when
 * the worker ended it (its callback's), is what a read of the job says too.
 */
type Outcome = ({status: 'done'; result: NonNullable<JobBody['result']>} | {status: 'failed'; error: JobError} | {status: 'cancelled'}) & {updated_at?: string}

type VideoJob = BullJob<JobData, Outcome>

/** What the parts of the queue share: the backend, the options, and the removals under way. */
interface Video extends BullBackend<JobData, Outcome> {
  o: BullQueueOptions
  /** Removals of deleted jobs whose worker has just let them go; close() waits for them. */
  purges: Set<Promise<void>>
}

const STALLED: JobError = {
  code: 'internal',
  message: 'the job was interrupted too many times (its worker stopped while running it)',
}

const REFUSED: JobError = {code: 'internal', message: 'the job was not run: its data in the queue is not valid'}

const validJob = createAjv().compile<JobBody>(Job)

/** The job's spec, or undefined (logged) for a job this server could not have queued. */
function specOf(v: Video, job: VideoJob): (JobSpec & {created_at: string; deleted: boolean}) | undefined {
  try {
    return readJobData(job.data, job.id, v.o.storage)
  } catch (e) {
    v.logOnce('job queue')(e as Error)
    return undefined
  }
}

/** The job as a client sees it; undefined when it is unknown, deleted, or what Redis holds of it is not valid. */
async function body(v: Video, job: VideoJob): Promise<JobBody | undefined> {
  const spec = specOf(v, job)
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
    // Only while a worker runs it (a job that ended or waits again has none open); absent from the progress a
    // server before this field saved.
    open_segments: state === 'active' ? (seen.open_segments ?? []) : [],
  }
  const finished = job.finishedOn === undefined ? undefined : new Date(job.finishedOn).toISOString()
  if (job.finishedOn !== undefined && job.finishedOn + v.o.ttlSeconds * 1000 < Date.now()) return undefined
  return checked(v, spec.id, stateBody())

  function stateBody(): JobBody | undefined {
    if (state === 'completed' && job.returnvalue) return {...current, updated_at: finished ?? current.updated_at, ...job.returnvalue}
    if (state === 'failed') return {...current, status: 'failed', error: STALLED, updated_at: finished ?? current.updated_at}
    if (state === 'active') return {...current, status: 'running'}
    if (state === 'unknown') return undefined
    return current
  }
}

/** Progress and outcomes come from Redis too: a body that is not a job's is not answered. */
function checked(v: Video, id: string, job: unknown): JobBody | undefined {
  if (job === undefined || validJob(job)) return job
  v.logOnce('job queue')(new Error(`job ${JSON.stringify(id)} in the queue was not answered: what the queue holds of it is not valid`))
  return undefined
}

async function finish(v: Video, spec: JobSpec, end: JobBody): Promise<void> {
  await removeJobFolder(v.o.storage, spec.id)
  v.o.onEnd?.(end, spec)
}

/** Whether DELETE has marked the job, as Redis holds it now (a worker's copy of the job is older). */
async function isDeleted(v: Video, id: string): Promise<boolean> {
  const job = await v.queue.getJob(id)
  return job?.data.deleted === true
}

/**
 * Removes a deleted job once its worker has let it go. DELETE marks the job before it tries to remove it, and
 * this looks at the mark after the worker's lock is released, so one of the two removes it.
 */
function purge(v: Video, id: string | undefined): void {
  if (id === undefined) return
  const purging = isDeleted(v, id)
    .then(async (deleted) => {
      if (deleted) await v.queue.remove(id)
    })
    .catch(v.logOnce('job queue'))
    .finally(() => v.purges.delete(purging))
  v.purges.add(purging)
}

/** DELETE of one job (the queue's remove makes sure it is the only one under way). */
async function deleteJob(v: Video, jobs: JobSkeleton<JobRunner>, id: string, owner: string | undefined): Promise<JobBody | undefined> {
  const job = await v.queue.getJob(id)
  const spec = job && specOf(v, job)
  if (!spec || !visibleTo(spec.owner, owner)) return undefined
  const current = await body(v, job)
  if (!current) return undefined
  const ending = current.status === 'queued' || current.status === 'running'
  // A job stopped here ends as a cancelled run does: the runs open at its last progress are segments as they stood.
  const answer: JobBody = ending
    ? {...current, status: 'cancelled', segments: [...current.segments, ...current.open_segments], open_segments: [], updated_at: new Date().toISOString()}
    : current
  // Redis refuses to remove a job a worker holds. The mark makes it unknown at once, makes a worker that takes
  // it now drop it, and has its worker remove it when the run stops (purge).
  try {
    await job.updateData({...job.data, deleted: true})
  } catch (e) {
    // It expired just now.
    if ((await v.queue.getJob(id)) === undefined) return undefined
    throw e
  }
  // The worker running it may be another process: it hears this and aborts.
  if (current.status === 'running') await jobs.cancel(id)
  const removed = (await v.queue.remove(id)) === 1
  // A running job's upload goes now too: its worker has it open or never opens it.
  await removeJobFolder(v.o.storage, id)
  // A job removed before any worker took it ends here; a running one ends (callback included) in its worker.
  if (removed && current.status === 'queued') v.o.onEnd?.(answer, spec)
  return answer
}

/** Removes the folders of jobs lost with Redis (one that keeps nothing across restarts); they would stay forever otherwise. */
async function sweep(v: Video): Promise<void> {
  const removed = await sweepJobFolders({
    storage: v.o.storage,
    graceMs: v.o.sweepGraceMs ?? SWEEP_GRACE_MS,
    // A folder of the same storage may hold an image job's uploads.
    isKnown: async (id) => (await v.queue.getJob(id)) !== undefined || (await v.client.exists(metaKey(id))) === 1,
  })
  if (removed.length > 0) v.o.log(`job storage: removed ${removed.length} folder(s) of jobs the queue no longer has`)
}

/**
 * Removes from Redis the jobs that ended more than MOD_JOB_TTL ago. BullMQ's removeOnComplete and removeOnFail only
 * act when a later job ends: without one, the last jobs' names, callback URLs and results stayed in Redis for good.
 */
async function forgetEnded(v: Video): Promise<void> {
  for (const state of ['completed', 'failed'] as const) await v.queue.clean(v.o.ttlSeconds * 1000, 0, state)
}

/** The job's progress as its worker saves it: in order; a write that fails (Redis away for a moment) is dropped, not fatal. */
function progressOf(job: VideoJob) {
  let progress: Progress = {frames_analyzed: 0, seconds: 0, segments: [], open_segments: [], updated_at: new Date().toISOString()}
  let writing = Promise.resolve()
  return {
    save(change: Partial<Progress>): void {
      progress = {...progress, ...change, updated_at: new Date().toISOString()}
      const snapshot = progress
      writing = writing.then(() => job.updateProgress(snapshot as unknown as object)).catch(() => {})
    },
    current: (): Progress => progress,
    /** What the job's body takes from it, once every write is done. */
    async written(): Promise<Pick<JobBody, 'progress' | 'segments' | 'open_segments'>> {
      await writing
      // Called once the run has ended: the runs it left open were announced as segments.
      return {progress: {frames_analyzed: progress.frames_analyzed, seconds: progress.seconds}, segments: progress.segments, open_segments: []}
    },
  }
}

function outcome(ran: Attempt<Outcome>, describeError: QueueHooks['describeError']): Outcome {
  if (ran.status === 'failed') return {status: 'failed', error: describeError(ran.error)}
  return ran.status === 'done' ? ran.value : {status: 'cancelled'}
}

/** Runs one job taken from the queue, and ends it: files removed, callback sent. */
async function processJob(v: Video, job: VideoJob, runner: JobRunner, controller: AbortController): Promise<Outcome> {
  // A refused job touches no file and calls no callback: nothing it names can be trusted.
  const spec = specOf(v, job)
  if (!spec) return {status: 'failed', error: REFUSED}
  const {signal} = controller
  const progress = progressOf(job)
  const ran = await attempt<Outcome>(signal, async () => {
    // DELETE may have come while this worker was taking the job, before it listened for it.
    if (await isDeleted(v, spec.id).catch(() => false)) controller.abort()
    progress.save({})
    if (!(await jobFilesInPlace(spec))) {
      throw new ModError('internal', `job ${spec.id}: its upload is not a file in ${spec.dir} (is MOD_JOB_STORAGE the same folder on every node?)`)
    }
    const result = await runner(spec, {
      signal,
      onProgress: (frames, seconds, open) =>
        progress.save({frames_analyzed: frames, seconds, open_segments: openSegments(open)}),
      onSegment: (label, segment) => progress.save(closedSegment(progress.current(), label, segment)),
    })
    // A DELETE heard too late to stop the run still cancels it: the result is not kept.
    const deleted = signal.aborted || (await isDeleted(v, spec.id).catch(() => false))
    return deleted ? {status: 'cancelled'} : {status: 'done', result}
  })
  const ended = outcome(ran, v.o.describeError)
  const seen = await progress.written()
  const end = await body(v, job)
  const at = new Date().toISOString()
  await finish(v, spec, {...(end ?? newJob(spec)), ...seen, ...ended, updated_at: at})
  // BullMQ's finishedOn comes later: the job read after its callback would say another time than the callback.
  return {...ended, updated_at: at}
}

/** Only a job whose workers kept dying ends failed in BullMQ; its files and callback are handled here. */
function failed(v: Video, job: VideoJob | undefined): void {
  const spec = job && specOf(v, job)
  if (!job || !spec) return
  void body(v, job)
    .then((end) => finish(v, spec, end ?? {...newJob(spec), status: 'failed', error: STALLED}))
    .finally(() => purge(v, job.id))
}

/**
 * Jobs on BullMQ (bull-backend.ts), run through the job skeleton: any process with the same MOD_REDIS_URL accepts
 * them, and any that calls `work` runs them (one at a time each). A worker that dies mid-job loses its lock; BullMQ's
 * stalled-job check puts the job back for another worker, up to `maxStalledCount` times, then fails it. Uploads live
 * in MOD_JOB_STORAGE, which every node must mount at the same path. Redis holds no paths: what a job reads and removes
 * is the folder its id names in the storage, and a job whose data this server could not have written is refused.
 */
export function createBullQueue(o: BullQueueOptions): JobQueue {
  const purges = new Set<Promise<void>>()
  const backend = bullBackend<JobData, Outcome>({
    url: o.url,
    log: o.log,
    what: 'job',
    name: QUEUE_NAME,
    cancelChannel: CANCEL_CHANNEL,
    commandTimeoutMs: o.commandTimeoutMs,
    defaultJobOptions: {removeOnComplete: {age: o.ttlSeconds}, removeOnFail: {age: o.ttlSeconds}},
    lockDurationMs: o.lockDurationMs ?? LOCK_DURATION_MS,
    stalledIntervalMs: o.stalledIntervalMs ?? STALLED_INTERVAL_MS,
    maxStalledCount: o.maxStalledCount ?? MAX_STALLED_COUNT,
    onFailed: (job) => failed(v, job),
    onCompleted: (job) => purge(v, job.id),
    drain: () => Promise.all(purges),
  })
  const v: Video = {...backend, o, purges}
  const {client, queue} = backend
  const jobs = jobSkeleton<VideoJob, JobRunner, Outcome>(backend.source, {
    jobOf: (job) => String(job.id),
    process: (job, runner, controller) => processJob(v, job, runner, controller),
  })
  let sweeper: NodeJS.Timeout | undefined

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
    get: (id, owner) =>
      guarded(async () => {
        const job = await queue.getJob(id)
        return job && visibleTo(specOf(v, job)?.owner, owner) ? body(v, job) : undefined
      }),
    remove: (id, owner) =>
      guarded(async () => {
        if ((await client.set(deletingKey(id), '1', 'PX', DELETING_MS, 'NX')) === null) return undefined
        try {
          return await deleteJob(v, jobs, id, owner)
        } finally {
          await client.del(deletingKey(id))
        }
      }),
    work(runner) {
      jobs.work(runner)
      sweeper = sweepEvery(
        async () => {
          await sweep(v)
          await forgetEnded(v)
        },
        o.sweepIntervalMs ?? SWEEP_INTERVAL_MS,
        v.logOnce('job storage'),
      )
    },
    // Its jobs wait in Redis for any worker: it goes on taking them.
    stopping: () => {},
    reachable: backend.reachable,
    async close() {
      clearInterval(sweeper)
      await jobs.close()
    },
  }
}
