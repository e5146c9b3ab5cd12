import type {JobSettings} from '../../lib/config/jobs.js'
import type {ServerSettings} from '../../lib/config/settings.js'
import type {Engine} from '../../lib/engine.js'
import {ModError} from '../../lib/errors.js'
import {sendCallback, type CallbackOptions} from '../../lib/fetch/callback.js'
import {describe, toHttpError, type Log} from '../errors.js'
import type {BullQueueOptions} from './bullmq.js'
import {callbacksUnderWay, settlingCallbacks, type CallbacksUnderWay} from './callbacks.js'
import {createMemoryQueue} from './memory.js'
import {videoJobRunner} from './runner.js'
import type {JobQueue, QueueHooks} from './types.js'
import {jobsUnavailable} from './availability.js'

/** Test hooks: where callbacks connect and how fast they retry; BullMQ's stall timings. */
export interface JobOptions {
  callback?: Pick<CallbackOptions, 'connect' | 'resolve' | 'backoffMs' | 'attempts'>
  bull?: Pick<BullQueueOptions, 'lockDurationMs' | 'stalledIntervalMs' | 'maxStalledCount' | 'sweepGraceMs' | 'sweepIntervalMs'>
}

/**
 * What every queue reports through: errors as the client would see them (internal details to the log), the
 * callback of a job that ended, sent by the process that saw it end, and the jobs a stopping process dropped.
 */
export function queueHooks(jobs: JobSettings, log: Log, callbacks: CallbacksUnderWay, options: JobOptions = {}): QueueHooks {
  return {
    describeError: (e) => {
      const {code, message} = toHttpError(e, log)
      return {code, message}
    },
    onEnd: (body, spec) => {
      if (spec.callbackUrl === undefined) return
      callbacks.track(
        sendCallback(spec.callbackUrl, JSON.stringify(body), {
          secret: jobs.callbackSecret,
          allowPrivate: jobs.callbackAllowPrivate,
          ...options.callback,
        }).catch((e: unknown) => log(`job ${spec.id}: the callback could not be delivered: ${describe(e)}`)),
      )
    },
    onDropped: (ids) => log(`stopping: ${ids.length} video job(s) still waiting are cancelled (jobs without MOD_REDIS_URL end with the process): ${ids.join(', ')}`, 'warn'),
  }
}


/**
 * BullMQ and ioredis are loaded only when MOD_REDIS_URL is set: they cost every other `mod serve` ~120 ms of
 * start-up and ~25 MiB. The queue's methods wait for the module; `work` starts once it is there.
 */
function loadingBullQueue(o: BullQueueOptions): JobQueue {
  let current: JobQueue | undefined
  const loaded = import('./bullmq.js').then((m) => (current = m.createBullQueue(o)))
  // A failure is reported by the first call that needs the queue.
  loaded.catch(() => {})
  return {
    checkRoom: async () => (await loaded).checkRoom(),
    submit: async (spec) => (await loaded).submit(spec),
    get: async (id, owner) => (await loaded).get(id, owner),
    remove: async (id, owner) => (await loaded).remove(id, owner),
    work: (runner) => void loaded.then((q) => q.work(runner), (e: Error) => o.log(`the job queue could not start: ${e.message}`)),
    stopping: () => {},
    reachable: () => current?.reachable() ?? false,
    close: async () => (await loaded).close(),
  }
}

/** Every job route refuses with `jobs_unavailable`: the queue of a server whose jobs API is off. */
function refusingQueue(reason: string): JobQueue {
  const refuse = async (): Promise<never> => {
    throw new ModError('jobs_unavailable', reason)
  }
  return {checkRoom: refuse, submit: refuse, get: refuse, remove: refuse, work: () => {}, stopping: () => {}, reachable: () => false, close: async () => {}}
}

/**
 * The queue MOD_REDIS_URL selects: BullMQ on Redis, or the in-process queue (one worker only; several refuse
 * every job request). It runs no job until `work`.
 */
export function jobQueue(settings: ServerSettings, log: Log, options: JobOptions = {}): JobQueue {
  const {jobs, limits} = settings
  const off = jobsUnavailable(settings)
  if (off !== undefined) return refusingQueue(off)
  const callbacks = callbacksUnderWay()
  const hooks = queueHooks(jobs, log, callbacks, options)
  const queue =
    jobs.redisUrl === undefined
      ? createMemoryQueue({...hooks, limit: limits.queueLimit, ttlSeconds: jobs.ttlSeconds})
      : loadingBullQueue({...hooks, ...options.bull, url: jobs.redisUrl, storage: jobs.storage, limit: limits.queueLimit, ttlSeconds: jobs.ttlSeconds, log})
  return settlingCallbacks(queue, callbacks, log)
}

/** The job queue of one `mod serve` process, running jobs on this engine unless MOD_SERVE_JOBS=false. */
export function createJobs(engine: Engine, settings: ServerSettings, log: Log): JobQueue {
  const queue = jobQueue(settings, log)
  if (settings.jobs.serveJobs) queue.work(videoJobRunner(engine))
  return queue
}
