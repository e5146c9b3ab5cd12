/** Every MOD_* variable mod reads, and the names in an environment that look like one and are not. */
import {closest} from '../suggest.js'
import type {Env} from './env.js'

/** The MOD_* variables any command or the server reads (docs/operations.md lists what each does). */
export const MOD_VARIABLES: readonly string[] = Object.freeze([
  'MOD_ALLOW_URLS', 'MOD_API_KEY', 'MOD_API_KEYS', 'MOD_BODY_MIN_RATE', 'MOD_BODY_TIMEOUT_MS', 'MOD_CACHE_DIR',
  'MOD_CALLBACK_ALLOW_PRIVATE', 'MOD_CALLBACK_SECRET', 'MOD_CONFIG', 'MOD_CORS_ORIGINS', 'MOD_DRAIN_DELAY_MS',
  'MOD_FFMPEG', 'MOD_HEAD', 'MOD_HOST', 'MOD_INT8_WEIGHTS', 'MOD_JOB_STORAGE', 'MOD_JOB_TTL', 'MOD_JOURNAL_KEY',
  'MOD_KEEPALIVE_TIMEOUT_MS', 'MOD_LOG_LEVEL', 'MOD_MAX_BATCH', 'MOD_MAX_BATCH_BYTES', 'MOD_MAX_BUFFERED_BYTES', 'MOD_MAX_BYTES',
  'MOD_MAX_JOBS_PER_CLIENT', 'MOD_MAX_JOB_BYTES', 'MOD_MAX_JOB_ITEMS', 'MOD_MAX_PIXELS', 'MOD_MAX_UPLOADS',
  'MOD_MAX_UPLOADS_PER_CLIENT', 'MOD_MAX_VIDEO_BYTES', 'MOD_MAX_VIDEO_SECONDS', 'MOD_MODEL_DIR', 'MOD_PORT',
  'MOD_PRECISION', 'MOD_PRELOAD', 'MOD_PRESET', 'MOD_QUEUE_LIMIT', 'MOD_REDIS_URL', 'MOD_SERVER', 'MOD_SERVER_TIMING',
  'MOD_SERVE_JOBS', 'MOD_TEXT_BUDGET', 'MOD_THREADS', 'MOD_URL_TIMEOUT_MS', 'MOD_WORKERS',
])

/**
 * One line for each MOD_* name of `env` that mod does not read, with the nearest it does: a typo (`MOD_APIKEY`)
 * would otherwise be ignored without a word, and a server run with no key.
 */
export function unknownVariables(env: Env): string[] {
  const known = new Set(MOD_VARIABLES)
  return Object.keys(env)
    .filter((name) => name.startsWith('MOD_') && !known.has(name))
    .sort()
    .map((name) => {
      const near = closest(name, MOD_VARIABLES)
      return `${name} is not a variable mod reads, and is ignored${near ? ` (did you mean ${near}?)` : ''}`
    })
}
