import {createHash, timingSafeEqual} from 'node:crypto'
import type {IncomingMessage} from 'node:http'

import {ModError} from '../lib/errors.js'

const digest = (text: string): Buffer => createHash('sha256').update(text, 'utf8').digest()

/**
 * Whether the X-API-Key header equals the key. Both sides are hashed first so that the comparison
 * runs on equal lengths in constant time: neither the key's content nor its length leaks through timing.
 */
export function keyMatches(key: string, header: string | string[] | undefined): boolean {
  if (typeof header !== 'string') return false
  return timingSafeEqual(digest(key), digest(header))
}

/**
 * The request's key problem, if any (the message never repeats what was sent). `publicRequests` holds the
 * requests that never need the key, as "GET /health": those of the routes declared public.
 */
export function checkKey(key: string | undefined, req: IncomingMessage, path: string, publicRequests: ReadonlySet<string>): ModError | undefined {
  if (key === undefined || publicRequests.has(`${req.method} ${path}`)) return undefined
  const header = req.headers['x-api-key']
  if (header === undefined) return new ModError('unauthorized', 'this server needs an API key: send it in the X-API-Key header')
  return keyMatches(key, header) ? undefined : new ModError('unauthorized', 'the X-API-Key header does not match the configured key')
}
