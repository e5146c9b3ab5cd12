import {isModError, type ErrorCode} from '../lib/errors.js'

/** An error as the API answers it: `{error: {code, message}}` with this status (CONTRACTS §3). */
export interface HttpError {
  status: number
  code: string
  message: string
  /** Retry-After (seconds) for 503, Allow for 405. */
  headers?: Record<string, string>
}

interface Mapping {
  status: number
  /** The code the client sees, when it differs from the engine's. */
  code?: string
  retryAfter?: number
  /** A server-side problem: the client gets a generic message, the log gets the real one. */
  hidden?: boolean
}

/** Seconds a client should wait: a full queue drains quickly, a model that failed to load does not. */
const RETRY_OVERLOADED_S = 1
const RETRY_MODEL_S = 10

/** Every engine error code → what the API answers; the one place where statuses are decided. */
const MAPPINGS: Record<ErrorCode, Mapping> = {
  bad_request: {status: 400},
  unauthorized: {status: 401},
  url_fetch_disabled: {status: 403},
  url_blocked: {status: 422},
  url_fetch_failed: {status: 502},
  url_fetch_timeout: {status: 504},
  payload_too_large: {status: 413},
  too_many_files: {status: 413},
  video_too_long: {status: 422},
  unsupported_media: {status: 415},
  // Only single-file endpoints raise it as a request error; a batch reports it as an entry instead.
  unreadable_image: {status: 415, code: 'unsupported_media'},
  overloaded: {status: 503, retryAfter: RETRY_OVERLOADED_S},
  model_unavailable: {status: 503, retryAfter: RETRY_MODEL_S},
  model_missing: {status: 503, code: 'model_unavailable', retryAfter: RETRY_MODEL_S, hidden: true},
  invalid_config: {status: 500, code: 'internal', hidden: true},
  ffmpeg_missing: {status: 500, code: 'internal', hidden: true},
  download_failed: {status: 500, code: 'internal', hidden: true},
  // A local path that does not exist (the CLI); the server never raises it for an image.
  not_found: {status: 404},
  internal: {status: 500, hidden: true},
}

const HIDDEN_MESSAGES: Record<number, string> = {
  500: 'internal error',
  503: 'the model is not available; try again later',
}

/** Receives what the client is not told (internal errors, with their stack); never request headers. */
export type Log = (line: string) => void

/** One line about an error for the log: `code: message` for a ModError, else its message. */
export function describe(e: unknown): string {
  if (isModError(e)) return `${e.code}: ${e.message}`
  return e instanceof Error ? e.message : String(e)
}

/** Anything thrown by a route → the answer; server-side problems are logged and answered generically. */
export function toHttpError(e: unknown, log: Log): HttpError {
  if (!isModError(e)) {
    log(`internal error: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`)
    return {status: 500, code: 'internal', message: HIDDEN_MESSAGES[500]}
  }
  const m = MAPPINGS[e.code]
  if (m.hidden) log(`${e.code}: ${e.message}`)
  return {
    status: m.status,
    code: m.code ?? e.code,
    message: m.hidden ? HIDDEN_MESSAGES[m.status] : e.message,
    ...(m.retryAfter === undefined ? {} : {headers: {'Retry-After': String(m.retryAfter)}}),
  }
}

export function notFound(path: string): HttpError {
  return {status: 404, code: 'not_found', message: `no such endpoint: ${path}`}
}

export function methodNotAllowed(method: string, path: string, allowed: string[]): HttpError {
  return {
    status: 405,
    code: 'method_not_allowed',
    message: `${method} is not allowed on ${path}; use ${allowed.join(' or ')}`,
    headers: {Allow: allowed.join(', ')},
  }
}
