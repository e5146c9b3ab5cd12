import type {ServerSettings} from '../../../lib/config/settings.js'
import type {Engine} from '../../../lib/engine.js'
import {ModError} from '../../../lib/errors.js'
import {sendCallback} from '../../../lib/fetch/callback.js'
import {fetchImageUrl, type ImageFetcher} from '../../../lib/fetch/url.js'
import {describe, toHttpError, type Log} from '../../errors.js'
import {jobsUnavailable} from '../availability.js'
import {callbacksUnderWay, settlingCallbacks, type CallbacksUnderWay} from '../callbacks.js'
import {createMemoryImageQueue} from './memory.js'
import type {RedisImageQueueOptions} from './redis.js'
import {imageChunkRunner} from './runner.js'
import type {JobError} from '../types.js'
import type {ChunkRunner, ImageJobQueue, ImageQueueHooks} from './types.js'

/** An error as a client would have been answered it; internal details go to the log. */
const describing =
  (log: Log) =>
  (e: unknown): JobError => {
    const {code, message} = toHttpError(e, log)
    return {code, message}
  }

/** Errors as a client would see them; the callback of a job that ended, signed as a video job's is; the jobs a stopping process dropped. */
function imageHooks(settings: ServerSettings, log: Log, callbacks: CallbacksUnderWay): ImageQueueHooks {
  const {jobs} = settings
  return {
    describeError: describing(log),
    onEnd: (body, url) => {
      if (url === undefined) return
      callbacks.track(
        sendCallback(url, JSON.stringify(body), {secret: jobs.callbackSecret, allowPrivate: jobs.callbackAllowPrivate}).catch((e: unknown) =>
          log(`image job ${body.id}: the callback could not be delivered: ${describe(e)}`),
        ),
      )
    },
    onDropped: (ids) => log(`stopping: ${ids.length} image job(s) not done are cancelled (jobs without MOD_REDIS_URL end with the process): ${ids.join(', ')}`, 'warn'),
  }
}

/** Loads BullMQ only when MOD_REDIS_URL is set (see the video queue's loadingBullQueue). */
function loadingRedisQueue(o: RedisImageQueueOptions): ImageJobQueue {
  let current: ImageJobQueue | undefined
  const loaded = import('./redis.js').then((m) => (current = m.createRedisImageQueue(o)))
  loaded.catch(() => {})
  return {
    reserve: async (c, id) => (await loaded).reserve(c, id),
    submit: async (spec) => (await loaded).submit(spec),
    get: async (id, owner) => (await loaded).get(id, owner),
    lines: async (id, from, count) => (await loaded).lines(id, from, count),
    remove: async (id, owner) => (await loaded).remove(id, owner),
    work: (runner) => void loaded.then((q) => q.work(runner), (e: Error) => o.log(`the image job queue could not start: ${e.message}`)),
    stopping: () => {},
    reachable: () => current?.reachable() ?? false,
    close: async () => (await loaded).close(),
  }
}

function refusingQueue(reason: string): ImageJobQueue {
  const refuse = async (): Promise<never> => {
    throw new ModError('jobs_unavailable', reason)
  }
  return {reserve: refuse, submit: refuse, get: async () => undefined, lines: refuse, remove: async () => undefined, work: () => {}, stopping: () => {}, reachable: () => false, close: async () => {}}
}

/** The image job queue MOD_REDIS_URL selects (BullMQ on Redis, or in-process); it runs no chunk until `work`. */
export function imageJobQueue(settings: ServerSettings, log: Log): ImageJobQueue {
  const {jobs} = settings
  const off = jobsUnavailable(settings)
  if (off !== undefined) return refusingQueue(off)
  const callbacks = callbacksUnderWay()
  const common = {...imageHooks(settings, log, callbacks), storage: jobs.storage, ttlSeconds: jobs.ttlSeconds, maxPerClient: jobs.images.maxPerClient}
  const queue = jobs.redisUrl === undefined ? createMemoryImageQueue(common) : loadingRedisQueue({...common, url: jobs.redisUrl, log})
  return settlingCallbacks(queue, callbacks, log)
}

/** Runs chunks on `engine`, URLs fetched under the process's URL rules and limits (`fetchImage`, for tests). */
export function chunkRunnerFor(engine: Engine, settings: ServerSettings, log: Log, fetchImage?: ImageFetcher): ChunkRunner {
  const {limits} = settings
  return imageChunkRunner(engine, {
    storage: settings.jobs.storage,
    allowUrls: settings.allowUrls,
    fetchImage: fetchImage ?? ((url, how) => fetchImageUrl(url, {...how, maxBytes: limits.maxBytes, timeoutMs: limits.urlTimeoutMs})),
    describeError: describing(log),
  })
}

/** The image job queue of one `mod serve` process, running chunks here unless MOD_SERVE_JOBS=false. */
export function createImageJobs(engine: Engine, settings: ServerSettings, log: Log, fetchImage?: ImageFetcher): ImageJobQueue {
  const queue = imageJobQueue(settings, log)
  if (settings.jobs.serveJobs) queue.work(chunkRunnerFor(engine, settings, log, fetchImage))
  return queue
}
