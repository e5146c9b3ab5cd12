import type {IncomingMessage, ServerResponse} from 'node:http'

import type {HttpError} from './errors.js'

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
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

/**
 * Sends an error, with the request's id (the X-Request-Id header app.ts set) so a report can be matched to the log. When the request body was not read to its end, the connection is closed after the
 * answer: otherwise Node would read (and throw away) the rest of an upload that was refused.
 */
export function sendError(res: ServerResponse, e: HttpError): void {
  if (!res.headersSent && !res.destroyed) sentErrors.set(res, e.code)
  const close: Record<string, string> = bodyUnread(res.req) ? {Connection: 'close'} : {}
  const requestId = res.getHeader('x-request-id')
  const error = {code: e.code, message: e.message, ...(typeof requestId === 'string' ? {request_id: requestId} : {})}
  sendJson(res, e.status, {error}, {...e.headers, ...close})
}
