/** How a remote run waits and retries: which failures are worth another request, and how long to wait first. */

/** Answers that say "not now" (a full queue, a busy or restarting server behind a balancer), not "never". */
const RETRIED_STATUSES: ReadonlySet<number> = new Set([429, 502, 503, 504])

/** Failures of the connection itself: the server is down, restarting, killed mid-request, or unreachable for a moment. */
const CONNECTION_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
])

/** The first wait, doubled after each failure up to MAX_BACKOFF_MS. */
const FIRST_BACKOFF_MS = 250
const MAX_BACKOFF_MS = 10_000
/** A Retry-After longer than this is not waited for in full: the run would look hung. */
const MAX_RETRY_AFTER_MS = 60_000

/**
 * Connection failures before the request reached a server (nothing listening, no route, no name, no connection in
 * time): a request that makes something on the server can be sent again after these alone.
 */
const NOT_REACHED_CODES: ReadonlySet<string> = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', 'UND_ERR_CONNECT_TIMEOUT'])

export function neverReached(e: unknown): boolean {
  const code = (e as {code?: unknown} | undefined)?.code
  return typeof code === 'string' && NOT_REACHED_CODES.has(code)
}

export function isRetriedStatus(status: number): boolean {
  return RETRIED_STATUSES.has(status)
}

export function isConnectionError(e: unknown): boolean {
  const code = (e as {code?: unknown} | undefined)?.code
  return typeof code === 'string' && CONNECTION_CODES.has(code)
}

/** Retry-After as seconds or as an HTTP date → milliseconds from `now`; undefined when absent or unreadable. */
export function retryAfterMs(header: string | string[] | undefined, now = Date.now()): number | undefined {
  const value = Array.isArray(header) ? header[0] : header
  if (value === undefined || value.trim() === '') return undefined
  if (/^\s*\d+\s*$/.test(value)) return Number(value) * 1000
  const date = Date.parse(value)
  return Number.isNaN(date) ? undefined : Math.max(0, date - now)
}

/**
 * The wait before attempt `attempt + 1`: the server's Retry-After when it gave one (capped at a minute), else an
 * exponential backoff with full jitter, so that many clients refused at once do not all come back at once.
 */
export function retryDelayMs(attempt: number, retryAfter: number | undefined, random = Math.random): number {
  if (retryAfter !== undefined) return Math.min(retryAfter, MAX_RETRY_AFTER_MS)
  const ceiling = Math.min(MAX_BACKOFF_MS, FIRST_BACKOFF_MS * 2 ** (attempt - 1))
  return Math.round(ceiling / 2 + (random() * ceiling) / 2)
}
