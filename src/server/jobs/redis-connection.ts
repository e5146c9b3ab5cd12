// The Redis side shared by the job queues: their client, and what a Redis error becomes for a client of the API.
import {Redis} from 'ioredis'

import {ModError} from '../../lib/errors.js'
import type {Log} from '../errors.js'

/** How long a Redis command may take before it fails, unless a queue is given another timeout. */
export const DEFAULT_COMMAND_TIMEOUT_MS = 2000

/**
 * The Redis client of a job queue; `logOnce`, which logs each distinct error once (a Redis that is down
 * repeats the same error at every retry) until the client is ready again; and `reachable`, for GET /health.
 */
export function redisConnection(
  url: string,
  what: string,
  log: Log,
  commandTimeoutMs = DEFAULT_COMMAND_TIMEOUT_MS,
): {client: Redis; logOnce: (what: string) => (e: Error) => void; reachable: () => boolean} {
  const logged = new Set<string>()
  const logOnce = (label: string) => (e: Error) => {
    const line = `${label}: ${e.message}`
    if (logged.has(line)) return
    logged.add(line)
    log(line)
  }
  const client = new Redis(url, {maxRetriesPerRequest: 1, commandTimeout: commandTimeoutMs})
  client.on('error', logOnce(`${what} (redis)`))
  client.on('ready', () => logged.clear())
  return {client, logOnce, reachable: answering(client, commandTimeoutMs)}
}

/**
 * Whether Redis answers: connected, and its last probe answered in time. A connection stays `ready` while a Redis
 * that is paused, stalled or cut off without a reset answers nothing (every job route failing meanwhile), so each
 * call also sends a PING when none is waiting, and a probe unanswered for longer than a command may take counts
 * as unreachable at once. The answer lags one probe behind a Redis that comes back.
 */
function answering(client: Redis, commandTimeoutMs: number): () => boolean {
  let answered = true
  let sent: number | undefined
  return () => {
    if (client.status !== 'ready') return false
    const now = Date.now()
    if (sent === undefined) {
      sent = now
      client
        .ping()
        .then(
          () => (answered = true),
          () => (answered = false),
        )
        .finally(() => (sent = undefined))
    }
    return answered && now - sent < commandTimeoutMs
  }
}

/** Redis's answers to a password it does not take, or to none where it needs one. */
const REFUSED_CREDENTIALS = /^(WRONGPASS|NOAUTH)\b|invalid password/i

/**
 * Redis's refusal of the credentials in `url`, or undefined: a Redis that does not answer (not started yet) is not
 * refused, as the queues connect once it is up; a refused password would never heal, every job route answering 503.
 * Redis's own words name neither the password nor the user.
 */
export async function refusedCredentials(url: string, timeoutMs = DEFAULT_COMMAND_TIMEOUT_MS): Promise<string | undefined> {
  const client = new Redis(url, {lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: timeoutMs, commandTimeout: timeoutMs})
  // ioredis reports a refused AUTH as an 'error' event, and the connection as closed.
  const seen: string[] = []
  client.on('error', (e: Error) => seen.push(e.message))
  try {
    await client.connect()
    await client.ping()
    return undefined
  } catch (e) {
    return [...seen, e instanceof Error ? e.message : String(e)].find((message) => REFUSED_CREDENTIALS.test(message))
  } finally {
    client.disconnect()
  }
}

/** The client is not told Redis's own error (it names addresses and client internals); it stays in the error's context. */
export const unreachable = (e: unknown): ModError =>
  new ModError('overloaded', 'the job queue is not reachable; retry later', {cause: e instanceof Error ? e.message : String(e)})

/** Redis errors become `overloaded` (503 + Retry-After): the jobs API is down, the rest of the server is not. */
export async function guarded<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work()
  } catch (e) {
    if (e instanceof ModError) throw e
    throw unreachable(e)
  }
}
