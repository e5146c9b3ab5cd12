import {randomUUID} from 'node:crypto'
import type {IncomingMessage} from 'node:http'

/** A caller's id is kept when it is a plain token (what a proxy or tracer sends); anything else is replaced. */
const SANE = /^[\w.:@-]{1,128}$/

/** The request's id: the X-Request-Id it carries when that is a sane token, else a new UUID. */
export function requestIdOf(req: IncomingMessage): string {
  const given = req.headers['x-request-id']
  return typeof given === 'string' && SANE.test(given) ? given : randomUUID()
}
