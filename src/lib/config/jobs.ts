import {tmpdir} from 'node:os'
import {join, resolve} from 'node:path'

import {ModError} from '../errors.js'
import {MAX_TIMER_MS, parseBoolean, parseCount, type Env} from './env.js'

/** Asynchronous video jobs (POST /v1/jobs/video): where they queue, where uploads wait, how long results stay. */
export interface JobSettings {
  /** MOD_REDIS_URL: jobs go through BullMQ on this Redis; unset, an in-process queue holds them. */
  redisUrl?: string
  /** MOD_JOB_STORAGE: uploads wait here until their job ends; with Redis, a folder every node mounts. */
  storage: string
  /** MOD_JOB_TTL: seconds a finished job (result or error) stays readable. */
  ttlSeconds: number
  /** MOD_SERVE_JOBS: whether `mod serve` runs jobs itself besides accepting them. */
  serveJobs: boolean
  /** MOD_CALLBACK_SECRET: key of the X-Mod-Signature HMAC-SHA256 of callbacks; unset, callbacks are unsigned. */
  callbackSecret?: string
  /** MOD_CALLBACK_ALLOW_PRIVATE: lets callbacks reach private and loopback addresses (a callback receiver on the same network). */
  callbackAllowPrivate: boolean
  /** Bounds of bulk image jobs (POST /v1/jobs/images). */
  images: ImageJobLimits
}

/** What one image job may hold, and how many one client may have at once. */
export interface ImageJobLimits {
  /** MOD_MAX_JOB_ITEMS: items (URLs or files) in one job; more is too_many_files (413). */
  maxItems: number
  /** MOD_MAX_JOB_BYTES: the uploaded files of one job together; more is payload_too_large (413). */
  maxBytes: number
  /** MOD_MAX_JOBS_PER_CLIENT: image jobs not ended yet of one client address; one more is too_many_jobs (429). */
  maxPerClient: number
}

export const DEFAULT_IMAGE_JOB_LIMITS: ImageJobLimits = {maxItems: 10_000, maxBytes: 2 * 1024 * 1024 * 1024, maxPerClient: 4}

export const DEFAULT_JOB_TTL_SECONDS = 3600

/**
 * The in-process queue's upload folder, this user's own under the OS temp folder (as the upload folders are); a
 * Redis deployment names a shared one.
 */
export const defaultJobStorage = (): string => join(tmpdir(), `mod-jobs-${process.getuid?.() ?? 'user'}`)

export function readJobSettings(env: Env, cwd: string): Omit<JobSettings, 'images'> {
  const redisUrl = env.MOD_REDIS_URL || undefined
  if (redisUrl !== undefined && !/^rediss?:\/\//.test(redisUrl)) {
    throw new ModError('invalid_config', `MOD_REDIS_URL=${JSON.stringify(redisUrl)} is not valid: expected redis://host:port`)
  }
  // The in-process queue expires a job with a timer: at most MAX_TIMER_MS.
  const ttlSeconds = parseCount('MOD_JOB_TTL', env.MOD_JOB_TTL, DEFAULT_JOB_TTL_SECONDS, 1, Math.floor(MAX_TIMER_MS / 1000))
  return {
    redisUrl,
    storage: env.MOD_JOB_STORAGE ? resolve(cwd, env.MOD_JOB_STORAGE) : defaultJobStorage(),
    ttlSeconds,
    serveJobs: parseBoolean('MOD_SERVE_JOBS', env.MOD_SERVE_JOBS, true),
    callbackSecret: env.MOD_CALLBACK_SECRET || undefined,
    callbackAllowPrivate: parseBoolean('MOD_CALLBACK_ALLOW_PRIVATE', env.MOD_CALLBACK_ALLOW_PRIVATE, false),
  }
}
