import {ModError} from '../../lib/errors.js'
import {plural} from '../../lib/plural.js'

/** The refusals of a job at admission, the same from either backend. */

/** A video job finds `limit` jobs already waiting. */
export const queueFull = (limit: number): ModError =>
  new ModError('overloaded', `the job queue is full (${plural(limit, 'job')} waiting); retry later`)

/** An image job's client already has `limit` jobs not done (or places reserved for their uploads). */
export const tooManyJobs = (limit: number): ModError =>
  new ModError('too_many_jobs', `this client already has ${plural(limit, 'image job')} not done (MOD_MAX_JOBS_PER_CLIENT); wait for one to end`)

/** An in-process queue that is closing takes no more jobs. */
export const serverStopping = (): ModError => new ModError('overloaded', 'the server is stopping; retry on another one')
