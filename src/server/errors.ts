import type {Limits, LogLevel} from '../lib/config/settings.js'
import {isModError, type ErrorCode} from '../lib/errors.js'
import type {ItemResult} from '../lib/engine.js'
import type {ItemErrorCode} from '../lib/types.js'
import {MAX_SIDE} from '../lib/image/decode.js'
import {formatSize, formatSizeExact, grouped} from '../lib/sizes.js'
import {humanSeconds} from '../lib/durations.js'
import {plural} from '../lib/plural.js'
import {jobsUnavailable} from './jobs/availability.js'

/** An error as the API answers it: `{error: {code, message}}` with this status. */
export interface HttpError {
  status: number
  code: HttpErrorCode
  message: string
  /** The row's headers (Retry-After, WWW-Authenticate), and Allow for 405. */
  headers?: Record<string, string>
}

/** Seconds a client should wait (Retry-After): a full queue drains quickly, a model that failed to load does not. */
const RETRY_OVERLOADED_S = '1'
const RETRY_MODEL_S = '10'
/** A model still loading is usually ready within seconds. */
const RETRY_NOT_READY_S = '5'
/** An image job takes a while to end: a client over its job limit should not poll fast. */
const RETRY_JOBS_S = '30'

/** The answer to an Expect the server does not meet; the header's value is not repeated (it may be 16 KiB long). */
export const EXPECTATION_FAILED = 'the server meets no expectation but 100-continue: send the request without its Expect header'

/** Sent with 401: the scheme, and the header that carries the key. */
export const WWW_AUTHENTICATE = 'ApiKey header="X-API-Key"'

/** The codes a client can see in an error body. */
export const HTTP_ERROR_CODES = [
  'bad_request',
  'unauthorized',
  'url_fetch_disabled',
  'url_blocked',
  'url_fetch_failed',
  'url_fetch_timeout',
  'payload_too_large',
  'request_timeout',
  'too_many_files',
  'video_too_long',
  'unsupported_media',
  'too_many_uploads',
  'overloaded',
  'model_unavailable',
  'jobs_unavailable',
  'too_many_jobs',
  'not_ready',
  'internal',
  'not_found',
  'method_not_allowed',
  'headers_too_large',
  'expectation_failed',
] as const

export type HttpErrorCode = (typeof HTTP_ERROR_CODES)[number]

export interface HttpErrorRow {
  status: number
  /** Headers every answer with this code carries: the one place they are set. */
  headers?: {'Retry-After'?: string; 'WWW-Authenticate'?: string}
  /** When a client gets it, for the documentation; the limits are this server's. */
  when: (limits: Limits) => string
  /** A message as a client would read it, for the documentation. */
  example: string
}

/** Every code a client can see → its status: the one place where statuses are decided, and what the document says. */
export const HTTP_ERRORS: Record<HttpErrorCode, HttpErrorRow> = {
  bad_request: {
    status: 400,
    when: () =>
      'a missing file field (or a text value in its place), more than one file for a single-file endpoint, a ' +
      'malformed multipart body, bad JSON (a name given twice in one object too), a JSON body that does not match its schema (bad base64, both or neither ' +
      'of `image_base64` and `url`, a missing or unknown field; the first problem is named by its path, as in ' +
      '`items[0].url is missing`), a bad or repeated query value (a number not in plain decimal too), a query parameter a POST or DELETE route does not take, or a malformed job id',
    example: 'the multipart field "file" is missing: send the file in "file"',
  },
  unauthorized: {
    status: 401,
    headers: {'WWW-Authenticate': WWW_AUTHENTICATE},
    when: () => 'the `X-API-Key` header is missing or matches neither `MOD_API_KEY` nor a key of `MOD_API_KEYS`',
    example: 'this server needs an API key: send it in the X-API-Key header',
  },
  url_fetch_disabled: {
    status: 403,
    when: () => '`url` was given while URL fetching is disabled (`MOD_ALLOW_URLS` is false)',
    example: 'fetching URLs is disabled on this server (MOD_ALLOW_URLS); send image_base64 instead',
  },
  url_blocked: {
    status: 422,
    when: () => '`url` is not http(s), or it or a redirect resolves to a non-public address',
    example: 'the URL resolves to a loopback address; only public addresses are fetched',
  },
  url_fetch_failed: {
    status: 502,
    when: () => "the URL's server failed, answered non-2xx, or redirected too often",
    example: 'https://example.com answered HTTP 404',
  },
  url_fetch_timeout: {
    status: 504,
    when: (l) => `fetching the URL took longer than ${humanSeconds(l.urlTimeoutMs)}`,
    example: 'fetching https://example.com took longer than 10000 ms',
  },
  payload_too_large: {
    status: 413,
    when: (l) =>
      `an image over ${formatSizeExact(l.maxBytes)} or ${grouped(l.maxPixels)} decoded pixels (a share of that for ` +
      'formats that cost more to decode: a third for GIF, a quarter for WebP, progressive JPEG and interlaced ' +
      `PNG, a sixth for AVIF, an eighth for CMYK JPEG) or with a side over ${grouped(MAX_SIDE)} px, batch files over ` +
      `${formatSizeExact(l.maxBatchBytes)} together, a request body over the upload limit (the setting that bounds ` +
      'its files, plus room for the multipart form or for base64; its Content-Length is checked before reading, and ' +
      `the message names the setting), a video over ${formatSizeExact(l.maxVideoBytes)}, or the uploads of one image job over ` +
      `\`MOD_MAX_JOB_BYTES\``,
    example: 'the image is larger than 25 MiB (MOD_MAX_BYTES)',
  },
  request_timeout: {
    status: 408,
    when: (l) =>
      `an upload sent nothing for ${humanSeconds(l.bodyTimeoutMs)} while the server was reading it (\`MOD_BODY_TIMEOUT_MS\`), ` +
      `or after its first ${humanSeconds(l.bodyTimeoutMs)} arrived slower than ${formatSize(l.bodyMinRate)} per second on average ` +
      '(`MOD_BODY_MIN_RATE`), or arrived slower than that since its first byte while every upload place was taken, and ' +
      'gave its place to another request',
    example: 'no part of the request body arrived for 30000 ms (MOD_BODY_TIMEOUT_MS)',
  },
  too_many_files: {
    status: 413,
    when: (l) => `more than ${plural(l.maxBatch, 'file')} in one batch, or more items in one image job than \`MOD_MAX_JOB_ITEMS\``,
    example: 'a batch holds at most 16 files (MOD_MAX_BATCH)',
  },
  video_too_long: {
    status: 422,
    when: (l) => `the video is longer than ${l.maxVideoSeconds} s, found while decoding`,
    example: 'the video is longer than the limit of 600 s (MOD_MAX_VIDEO_SECONDS)',
  },
  unsupported_media: {
    status: 415,
    when: () =>
      'a request body of the wrong media type (not multipart/form-data for an upload endpoint, not JSON for ' +
      '`/v1/moderate/json`), a request body with a `Content-Encoding` other than `identity` or a `Transfer-Encoding` ' +
      'other than `chunked` (request bodies are never decoded: send them uncompressed), an empty file (uploaded, in base64 or downloaded), or a file that is not an image, or ' +
      'not a video, that the decoder can read (a batch reports that per file instead)',
    example: 'the file is empty',
  },
  too_many_uploads: {
    status: 429,
    headers: {'Retry-After': RETRY_OVERLOADED_S},
    when: (l) =>
      `one client address (an IPv6 /64) is already sending ${l.maxUploadsPerClient} request bodies to the worker, ` +
      'a URL being fetched for it counting as one (`MOD_MAX_UPLOADS_PER_CLIENT`)',
    example: 'this client is already sending 32 uploads (a URL being fetched counts as one; MOD_MAX_UPLOADS_PER_CLIENT); wait for one to finish',
  },
  overloaded: {
    status: 503,
    headers: {'Retry-After': RETRY_OVERLOADED_S},
    when: (l) =>
      `the worker queue is full (${plural(l.queueLimit, 'request')} waiting), ${plural(l.maxUploads, 'upload')} already being ` +
      `received (\`MOD_MAX_UPLOADS\`), the worker holds ${formatSizeExact(l.maxBufferedBytes)} of requests not ` +
      'answered yet (`MOD_MAX_BUFFERED_BYTES`), as many jobs wait, or the job queue (Redis) is unreachable; and an ' +
      'upload whose place went to a request of a network holding at least two fewer upload places',
    example: 'the server is busy (64 requests already waiting); retry shortly',
  },
  model_unavailable: {
    status: 503,
    headers: {'Retry-After': RETRY_MODEL_S},
    when: () => 'the model could not be loaded',
    example: 'the model could not be loaded; try again later',
  },
  jobs_unavailable: {
    status: 503,
    when: () =>
      'a job route on a server of more than one worker without `MOD_REDIS_URL`: each worker would keep its own jobs, ' +
      'so a job could not be found from the next request (set `MOD_REDIS_URL`, or serve with one worker)',
    example: jobsUnavailable({workers: 2, jobs: {}}) ?? '',
  },
  too_many_jobs: {
    status: 429,
    headers: {'Retry-After': RETRY_JOBS_S},
    when: () => 'one client address (an IPv6 /64) already has as many image jobs running as `MOD_MAX_JOBS_PER_CLIENT` allows',
    example: 'this client already has 4 image jobs running (MOD_MAX_JOBS_PER_CLIENT); wait for one to end',
  },
  not_ready: {
    status: 503,
    headers: {'Retry-After': RETRY_NOT_READY_S},
    when: () => '`GET /ready` while the model is not loaded yet, or while the server is shutting down',
    example: 'the model is loading',
  },
  internal: {
    status: 500,
    when: () => 'anything else (the body never carries a stack trace)',
    example: 'internal error',
  },
  not_found: {
    status: 404,
    when: () =>
      'a path the document does not list (paths are exact: one ending in a slash is 404, naming the endpoint without ' +
      'it), a job id that is unknown, deleted, expired, or of another API key, or a ' +
      "video job's id on `/v1/jobs/{id}/results` (only image jobs have results pages)",
    example: 'no such endpoint: /v2/moderate',
  },
  method_not_allowed: {
    status: 405,
    when: () => 'another method on a listed path (the `Allow` header names the right one), or `CONNECT` on any (the server is no proxy; `Allow` is empty)',
    example: 'GET is not allowed on /v1/moderate; use POST',
  },
  headers_too_large: {
    status: 431,
    when: () => "the request's headers are over Node's limit of 16 KiB, on any path (the connection is then closed)",
    example: 'the request headers are larger than the server accepts (16 KiB)',
  },
  expectation_failed: {
    status: 417,
    when: () => 'an `Expect` header other than `100-continue`, on any path (the only expectation the server meets)',
    example: EXPECTATION_FAILED,
  },
}

/** How an engine code reaches the client: under another code (`as`), and whether its message is hidden. */
interface EngineRow {
  as?: HttpErrorCode
  /** A server-side problem: the client gets a generic message, the log gets the real one. */
  hidden?: true
}

/** Every engine error code; the codes a client never sees name the code it sees instead. */
const FROM_ENGINE: {[C in ErrorCode]: C extends HttpErrorCode ? EngineRow : EngineRow & {as: HttpErrorCode}} = {
  bad_request: {},
  unauthorized: {},
  url_fetch_disabled: {},
  url_blocked: {},
  url_fetch_failed: {},
  url_fetch_timeout: {},
  payload_too_large: {},
  request_timeout: {},
  too_many_files: {},
  video_too_long: {},
  unsupported_media: {},
  too_many_uploads: {},
  // Only single-file endpoints raise it as a request error; a batch reports it as an entry instead.
  unreadable_image: {as: 'unsupported_media'},
  overloaded: {},
  model_unavailable: {},
  model_missing: {as: 'model_unavailable', hidden: true},
  invalid_config: {as: 'internal', hidden: true},
  ffmpeg_missing: {as: 'internal', hidden: true},
  download_failed: {as: 'internal', hidden: true},
  // A local path that does not exist (the CLI); the server never raises it for an image.
  not_found: {},
  jobs_unavailable: {},
  too_many_jobs: {},
  // The CLI's: `mod scan --server` could not reach its server, or kept being refused; a server never raises it.
  server_unreachable: {as: 'internal', hidden: true},
  // The CLI's too: the server's answer was not what a mod serve sends (malformed, too large, too slow).
  bad_server_answer: {as: 'internal', hidden: true},
  internal: {hidden: true},
}

const HIDDEN_MESSAGES: Record<number, string> = {
  500: 'internal error',
  503: 'the model is not available; try again later',
}

/**
 * Receives what the client is not told (internal errors), never request headers. A line without a level is an
 * error; `fields` go into the record beside it: `err` (an Error, logged with its stack) and `request_id`.
 */
export type Log = (line: string, level?: LogLevel, fields?: LogFields) => void

export interface LogFields {
  err?: unknown
  request_id?: string
  [field: string]: unknown
}

/** One line about an error for the log: `code: message` for a ModError, else its message. */
export function describe(e: unknown): string {
  if (isModError(e)) return `${e.code}: ${e.message}`
  return e instanceof Error ? e.message : String(e)
}

/** The answer of `code` with its status and the headers of its row (plus `extra`, e.g. Allow). */
export function httpError(code: HttpErrorCode, message: string, extra?: Record<string, string>): HttpError {
  const {status, headers} = HTTP_ERRORS[code]
  return {status, code, message, ...(headers || extra ? {headers: {...headers, ...extra}} : {})}
}

/** The code a client sees for an engine's code: what a single-file endpoint answers, a batch entry and a job line carry. */
export function clientCode(code: ErrorCode): HttpErrorCode {
  return FROM_ENGINE[code].as ?? (code as HttpErrorCode)
}

/**
 * A batch entry or an image job's line as the client gets it: an error entry carries the code `/v1/moderate` would
 * have answered for the same file (a corrupt image is `unsupported_media` there, not the engine's `unreadable_image`).
 */
export function clientEntry(entry: ItemResult): ItemResult {
  if (!('error' in entry)) return entry
  // Every item code maps to an item code (unreadable_image → unsupported_media, the others to themselves).
  return {...entry, error: {...entry.error, code: clientCode(entry.error.code) as ItemErrorCode}}
}

/** Anything thrown by a route → the answer; server-side problems are logged (with the error and its stack) and answered generically. */
export function toHttpError(e: unknown, log: Log): HttpError {
  if (!isModError(e)) {
    log('internal error', 'error', {err: e})
    return httpError('internal', HIDDEN_MESSAGES[500])
  }
  const from: EngineRow = FROM_ENGINE[e.code]
  const code = clientCode(e.code)
  if (from.hidden) log(describe(e), 'error', {err: e})
  return httpError(code, from.hidden ? HIDDEN_MESSAGES[HTTP_ERRORS[code].status] : e.message)
}

/** /ready's refusal: the server is up but should not get traffic now. */
export function notReady(message: string): HttpError {
  return httpError('not_ready', message)
}

/** Characters of a request's path that an answer repeats: enough to recognise it, where a path may be 16 KiB. */
const ECHOED_PATH = 200

/** The path as an error message repeats it: its first ECHOED_PATH characters, then an ellipsis. */
const echoed = (path: string): string => (path.length > ECHOED_PATH ? `${path.slice(0, ECHOED_PATH)}…` : path)

/** 404; `instead`: the endpoint the client most likely meant, named in the message. */
export function notFound(path: string, instead?: string): HttpError {
  return httpError('not_found', `no such endpoint: ${echoed(path)}${instead === undefined ? '' : `; did you mean ${echoed(instead)}?`}`)
}

export function methodNotAllowed(method: string, path: string, allowed: string[]): HttpError {
  return httpError('method_not_allowed', `${method} is not allowed on ${echoed(path)}; use ${allowed.join(' or ')}`, {Allow: allowed.join(', ')})
}
