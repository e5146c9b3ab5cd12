import type {IncomingMessage, ServerResponse} from 'node:http'

/**
 * `Expect: 100-continue`: the client holds its body back until the server answers 100 Continue. Node would send it
 * at once, before the route, the key and the declared size are checked, so a body that is then refused (404, 401,
 * 413 from its Content-Length, 415) would be sent for nothing. It is sent instead when a route starts to read the
 * body (bodyStream); a request refused before then gets its answer, and the client never sends the body.
 */
const waiting = new WeakMap<IncomingMessage, ServerResponse>()

/** The request expects 100 Continue; it is sent by `continueBody` once its body is wanted. */
export function holdContinue(req: IncomingMessage, res: ServerResponse): void {
  waiting.set(req, res)
}

/** Sends the 100 Continue a request waits for, if it waits for one: its body is about to be read. */
export function continueBody(req: IncomingMessage): void {
  const res = waiting.get(req)
  if (res === undefined) return
  waiting.delete(req)
  if (!res.headersSent) res.writeContinue()
}
