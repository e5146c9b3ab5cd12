import type {Settings} from '../../lib/config/settings.js'
import type {Engine} from '../../lib/engine.js'
import {toHttpError, type Log} from '../errors.js'
import {createMemoryQueue} from './memory.js'
import {videoJobRunner} from './runner.js'
import type {JobQueue, QueueHooks} from './types.js'

/** What every queue reports through: errors as the client would see them, internal details to the log. */
export function queueHooks(log: Log): QueueHooks {
  return {
    describeError: (e) => {
      const {code, message} = toHttpError(e, log)
      return {code, message}
    },
  }
}

/**
 * The job queue of one `mod serve` process: the in-process queue, which runs its jobs on this engine
 * unless MOD_SERVE_JOBS=false.
 */
export function createJobs(engine: Engine, settings: Settings, log: Log): JobQueue {
  const {jobs, limits} = settings
  const queue = createMemoryQueue({...queueHooks(log), limit: limits.queueLimit, ttlSeconds: jobs.ttlSeconds})
  if (jobs.serveJobs) queue.work(videoJobRunner(engine))
  return queue
}
