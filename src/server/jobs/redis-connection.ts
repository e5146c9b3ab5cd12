import {Redis} from 'ioredis'

import type {Log} from '../errors.js'

/** How long a Redis command may take before it fails, unless a queue is given another timeout. */
export const DEFAULT_COMMAND_TIMEOUT_MS = 2000

/**
 * The Redis client of a job queue, and `logOnce`, which logs each distinct error once (a Redis that is down
 * repeats the same error at every retry) until the client is ready again.
 */
export function redisConnection(url: string, what: string, log: Log, commandTimeoutMs = DEFAULT_COMMAND_TIMEOUT_MS): {client: Redis; logOnce: (what: string) => (e: Error) => void} {
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
  return {client, logOnce}
}
