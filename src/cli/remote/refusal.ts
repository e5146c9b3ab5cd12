import {ModError, type ErrorCode} from '../../lib/errors.js'
import {visible} from '../visible.js'
import {serverMessage} from './answers.js'
import type {Answer} from './exchange.js'
import {isRetriedStatus, retryAfterMs} from './retry.js'

interface ErrorBody {
  error?: {code?: string; message?: string}
}

const KNOWN_CODES: ReadonlySet<string> = new Set<ErrorCode>([
  'bad_request', 'unauthorized', 'payload_too_large', 'request_timeout', 'too_many_files', 'video_too_long',
  'unsupported_media', 'too_many_uploads', 'overloaded', 'model_unavailable', 'not_found', 'jobs_unavailable',
])

/**
 * A refused request as the CLI reports it: the server's own code and message where it gave one, naming the server.
 * Without one (a proxy or another server answered), the status says what to look at.
 */
function refused(server: string, answer: Answer, body: ErrorBody | undefined, apiKey: string | undefined): ModError {
  const {status} = answer
  const given = body?.error?.message
  const message = typeof given === 'string' ? serverMessage(given) : `HTTP ${status}`
  if (status === 401) {
    const why = apiKey === undefined ? 'it wants an API key: give --api-key or MOD_API_KEY' : 'it refused the API key given (--api-key / MOD_API_KEY)'
    return new ModError('unauthorized', `the server ${server} answered 401: ${why}`)
  }
  const code = body?.error?.code
  if (typeof code === 'string' && KNOWN_CODES.has(code)) return new ModError(code as ErrorCode, `the server ${server} answered ${status}: ${message}`)
  if (status >= 300 && status < 400) {
    // Not followed: the API key would go along to wherever it points.
    const location = answer.headers.location
    const to = typeof location === 'string' ? ` to ${visible(location.slice(0, 200))}` : ''
    return new ModError('invalid_config', `the server ${server} answered ${status}, a redirect${to}: mod does not follow redirects (its API key would go along); give --server the address of the mod serve itself`)
  }
  if (status === 403) return new ModError('unauthorized', `the server ${server} answered 403: ${message} (a proxy in front of it may refuse this client)`)
  // mod serve's own 413 has its code (above): this one is a proxy's, whose body limit is lower than the server's.
  if (status === 413) {
    return new ModError(
      'payload_too_large',
      `the server ${server} answered 413: ${message} (a proxy in front of it takes smaller request bodies than mod serve: raise its limit, e.g. nginx's client_max_body_size, 1 MiB unless set)`,
    )
  }
  return new ModError('internal', `the server ${server} answered ${status}: ${message}`)
}

/**
 * mod serve's own "not now" answers (429, 503), given instead of making anything: a full queue or a server
 * stopping, too many uploads or jobs of this client, no model or not ready yet.
 */
const NOTHING_MADE_CODES: ReadonlySet<string> = new Set(['overloaded', 'too_many_uploads', 'too_many_jobs', 'model_unavailable', 'not_ready'])

/** Whether a refusal is mod serve's own "not now" (its JSON error code), which made nothing; a proxy's page is not. */
export function madeNothing(answer: Answer): boolean {
  try {
    const code = (JSON.parse(answer.text) as ErrorBody).error?.code
    return typeof code === 'string' && NOTHING_MADE_CODES.has(code)
  } catch {
    return false
  }
}

/**
 * An answer the request did not accept: a "not now" (429, 502, 503, 504) gives what to report if no later try
 * succeeds and how long the server asks to wait; any other refusal is thrown as the run's failure.
 */
export function notNow(server: string, answer: Answer, apiKey: string | undefined): {failure: string; wait?: number} {
  // A refusal may come from a balancer or proxy in front of the server, as an HTML page: only its status counts then.
  let body: ErrorBody | undefined
  try {
    body = JSON.parse(answer.text) as ErrorBody
  } catch {}
  const code = body?.error?.code
  // A server of several workers without a job queue says so with a 503 that no wait will change.
  if (!isRetriedStatus(answer.status) || code === 'jobs_unavailable') throw refused(server, answer, body, apiKey)
  return {failure: visible(`${answer.status} ${typeof code === 'string' ? code.slice(0, 40) : ''}`.trim()), wait: retryAfterMs(answer.headers['retry-after'])}
}
