import {randomUUID} from 'node:crypto'
import type {IncomingMessage, ServerResponse} from 'node:http'

import {errorBodyProblem, jsonSchemaOf, schemaProblem} from './answer-check.js'
import type {HttpError} from './errors.js'
import {closeInStages} from './linger.js'
import type {Reply, Success} from './route.js'

/**
 * Answers bound to their declarations (as fastify's route schema drives its serializer): a handler answers through
 * its route's `Reply` (route.ts), whose types admit only a declared status with a body of that status's schema and
 * its declared headers, and every body is checked against the schema before it is sent.
 */

/** Told about every answer that breaks its declared schema (the test harness fails the test on it). */
export type Broken = (problem: string) => void

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (res.headersSent || res.destroyed) return
  const text = JSON.stringify(body)
  res.statusCode = status
  for (const [name, value] of Object.entries(headers)) res.setHeader(name, value)
  res.setHeader('Content-Type', 'application/json; charset=utf-8')
  res.setHeader('Content-Length', Buffer.byteLength(text))
  res.setHeader('Cache-Control', 'no-store')
  res.setHeader('X-Content-Type-Options', 'nosniff')
  res.end(text)
}

/** A success answer that breaks its declared schema: thrown instead of sending it, so the client gets 500 `internal`. */
export class BrokenAnswer extends Error {}

/**
 * The reply of one request to a route whose success answers are `responses`; `where` names the route in problems,
 * `broken` is told of an error body that breaks the Error schema. Unless `checked` is false, a success body is
 * checked against its schema.
 */
export function replyTo<R extends object>(res: ServerResponse, responses: R, where: string, broken?: Broken, checked = true): Reply<R> {
  return {
    raw: res,
    send: (status, body, ...headers) => {
      const schema = jsonSchemaOf((responses as Record<number, Success | undefined>)[status])
      const problem = !schema ? 'no JSON answer is declared for this status' : checked ? schemaProblem(schema, body) : undefined
      if (problem !== undefined) throw new BrokenAnswer(`${where} ${status}: the answer breaks its declared schema: ${problem}`)
      sendJson(res, status, body, headers[0])
    },
    error: (e) => sendError(res, e, broken),
  }
}

const sentErrors = new WeakMap<ServerResponse, string>()

/** The code of the error answer `res` carried, if it was one (what the error counter reads once it is sent). */
export function errorCodeOf(res: ServerResponse): string | undefined {
  return sentErrors.get(res)
}

/** A request body that has not arrived whole (a limit cut it off, or the request was refused before reading it). */
function bodyUnread(req: IncomingMessage): boolean {
  const declared = req.headers['content-length']
  const hasBody = req.headers['transfer-encoding'] !== undefined || (declared !== undefined && declared !== '0')
  return hasBody && !req.complete
}

/** The answer's X-Request-Id (app.ts sets it on every request), set here where nothing did. */
export function requestIdOfAnswer(res: ServerResponse): string {
  const given = res.getHeader('x-request-id')
  if (typeof given === 'string') return given
  const id = randomUUID()
  if (!res.headersSent) res.setHeader('X-Request-Id', id)
  return id
}

/**
 * Sends an error, with the request's id so a report can be matched to the log. When the request body was not read
 * to its end, the connection is closed after the answer, in stages (closeInStages): otherwise Node would read (and
 * throw away) the whole rest of an upload that was refused.
 */
export function sendError(res: ServerResponse, e: HttpError, broken?: Broken): void {
  const unread = bodyUnread(res.req)
  if (!res.headersSent && !res.destroyed) {
    sentErrors.set(res, e.code)
    if (unread) closeInStages(res)
  }
  const close: Record<string, string> = unread ? {Connection: 'close'} : {}
  const body = {error: {code: e.code, message: e.message, request_id: requestIdOfAnswer(res)}}
  const problem = errorBodyProblem(body)
  if (problem !== undefined) broken?.(`${res.req.method} ${res.req.url} ${e.status}: the error body breaks its schema: ${problem}`)
  sendJson(res, e.status, body, {...e.headers, ...close})
}
