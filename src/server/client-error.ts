import {randomUUID} from 'node:crypto'
import {STATUS_CODES, type IncomingMessage, type ServerResponse} from 'node:http'
import type {Socket} from 'node:net'
import type {Duplex} from 'node:stream'

import {humanSeconds} from '../lib/durations.js'
import {answeredOnSocket, type SocketAnswer} from './access.js'
import {HTTP_ERRORS, type HttpErrorCode} from './errors.js'
import {endInStages} from './linger.js'
import {requestIdOf} from './request-id.js'
import {originForm} from './request-target.js'

/** How long a request's head (its line and headers) may take to arrive whole: `408 request_timeout` after. */
export const HEAD_TIMEOUT_MS = 60_000

/** Node's parser errors that it would answer itself (as plain text) → the code of our JSON answer. */
const PARSER_ERRORS: Record<string, [HttpErrorCode, string]> = {
  HPE_HEADER_OVERFLOW: ['headers_too_large', 'the request headers are larger than the server accepts (16 KiB)'],
  ERR_HTTP_REQUEST_TIMEOUT: ['request_timeout', `the request line and headers did not arrive within ${humanSeconds(HEAD_TIMEOUT_MS)}`],
  HPE_CHUNK_EXTENSIONS_OVERFLOW: ['payload_too_large', 'the chunk extensions of the request body are too large'],
}

/** HTTP/2's frame types and error code used here (RFC 9113). */
const SETTINGS = 0x4
const GOAWAY = 0x7
const HTTP_1_1_REQUIRED = 0xd
const HTTP2_REFUSED = 'this server speaks HTTP/1.1 only'

/**
 * An HTTP/2 client speaking it without asking first (prior knowledge: `curl --http2-prior-knowledge`, gRPC, a proxy
 * set to h2c) sends the connection preface, which Node's parser stops at. An HTTP/1.1 answer is noise to such a
 * client (curl: "Empty reply from server"); it gets HTTP/2's own refusal instead: the server's preface (an empty
 * SETTINGS frame) then GOAWAY with HTTP_1_1_REQUIRED, which HTTP/2 clients report by name.
 */
function http2Refusal(): Buffer {
  const frame = (type: number, payload: Buffer) => {
    const head = Buffer.alloc(9)
    head.writeUIntBE(payload.length, 0, 3)
    head[3] = type
    return Buffer.concat([head, payload])
  }
  const goaway = Buffer.alloc(8)
  goaway.writeUInt32BE(0, 0) // the last stream processed: none
  goaway.writeUInt32BE(HTTP_1_1_REQUIRED, 4)
  return Buffer.concat([frame(SETTINGS, Buffer.alloc(0)), frame(GOAWAY, Buffer.concat([goaway, Buffer.from(HTTP2_REFUSED)]))])
}

/** A request line as the parser reads it; only the start of the bytes is looked at (a target may be 16 KiB). */
const REQUEST_LINE = /^([A-Z]{1,20}) ([!-~]+) HTTP\/\d\.\d\r?\n/

/**
 * The method and path of a request whose head broke the parser, read from its request line when the bytes Node
 * held when it failed begin with one (they may not: a head can arrive in several reads). Nothing else of the head
 * is read: header values are not logged.
 */
function requestLineOf(err: NodeJS.ErrnoException & {rawPacket?: Buffer}): {method?: string; path?: string} {
  const line = err.rawPacket && REQUEST_LINE.exec(err.rawPacket.subarray(0, 20 * 1024).toString('latin1'))
  if (!line) return {}
  try {
    return {method: line[1], path: new URL(originForm(line[2]), 'http://localhost').pathname}
  } catch {
    return {method: line[1]}
  }
}

/**
 * The connections answered here, closing in stages, each with the check of its byte bound: what their client sends
 * after the answer is no request of theirs, and is dropped.
 */
const closing = new WeakMap<Duplex, () => void>()

/**
 * Each connection's answers not yet sent, in the order of their requests: Node holds a pipelined request's answer
 * until those before it are sent.
 */
const unsent = new WeakMap<Duplex, ServerResponse[]>()

/** Every request's answer, kept among its connection's until it is sent (or the connection is gone). */
export function trackAnswer(res: ServerResponse): void {
  const {socket} = res.req
  const queued = unsent.get(socket) ?? unsent.set(socket, []).get(socket)!
  queued.push(res)
  res.once('close', () => queued.splice(queued.indexOf(res), 1))
}

/**
 * Writes an error answer on the socket, with the headers sendError would send, and closes the connection in stages
 * (linger.ts); gives the body's size. The socket is a net.Socket: http hands its connections' sockets to these events.
 */
function writeError(socket: Duplex, code: HttpErrorCode, message: string, requestId: string, headers = ''): number {
  const body = JSON.stringify({error: {code, message, request_id: requestId}})
  const {status} = HTTP_ERRORS[code]
  const answer =
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}\r\n` +
    'Content-Type: application/json; charset=utf-8\r\n' +
    `X-Request-Id: ${requestId}\r\n` +
    `Content-Length: ${Buffer.byteLength(body)}\r\n` +
    headers +
    'Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n' +
    body
  closing.set(socket, endInStages(socket as Socket, answer))
  return Buffer.byteLength(body)
}

/**
 * http.Server's `clientError`: a request Node could not parse gets the same JSON error body as any other error,
 * its request_id included (Node's own answer is plain text), then the connection is closed. Nothing is answered
 * when a response has started on the connection already, or the socket cannot be written. An answer to a head that
 * did not parse goes to `record` (its access line and metrics); one to a request that broke the parser in its body
 * goes to that request's own watch (access.ts answeredOnSocket).
 */
export function answerClientError(err: NodeJS.ErrnoException, socket: Duplex, record: (answer: SocketAnswer) => void): void {
  // Answered already: the parser failed again on what the client sent after the answer (or the headers of a 408 went
  // on arriving until too large).
  const lingering = closing.get(socket)
  if (lingering) return lingering()
  if (!socket.writable || err.code === 'ECONNRESET') {
    socket.destroy()
    return
  }
  // The preface is the connection's first bytes: nothing is queued before it.
  if (err.code === 'HPE_PAUSED_H2_UPGRADE' && !unsent.get(socket)?.length) {
    const requestId = randomUUID()
    closing.set(socket, endInStages(socket as Socket, http2Refusal()))
    record({method: 'PRI', path: '*', status: HTTP_ERRORS.bad_request.status, code: 'bad_request', bytes: 0, requestId})
    return
  }
  const [code, message] = PARSER_ERRORS[err.code ?? ''] ?? ['bad_request', 'the request is not valid HTTP']
  const answerHead = () => {
    if (!socket.writable) {
      socket.destroy()
      return
    }
    const requestId = randomUUID()
    const bytes = writeError(socket, code, message, requestId)
    record({...requestLineOf(err), status: HTTP_ERRORS[code].status, code, bytes, requestId})
  }
  const queued = unsent.get(socket) ?? []
  const last = queued.at(-1)
  if (!last) return answerHead()
  // The last request read has all its bytes: what broke the parser is the head of the next one, pipelined behind it
  // (or the rest of a body longer than its Content-Length). Answers keep the order of the requests: those of every
  // request read before go first, then this one's.
  if (last.req.complete) {
    last.once('close', answerHead)
    return
  }
  // The last request's body broke the parser: it is answered under its own id once the answers before it are out,
  // unless its own answer has begun, and its access line (written when its answer closes) tells this answer.
  // A body cut off by the client's end of the connection (its FIN, as a client that gives up sends it) is a client
  // gone, as after a reset: no answer, and the request's access line says 499, not an error of the server's.
  const answerBody = () => {
    if (err.code === 'HPE_INVALID_EOF_STATE' || last.headersSent || !socket.writable) {
      socket.destroy()
      return
    }
    const given = last.getHeader('x-request-id')
    const bytes = writeError(socket, code, message, typeof given === 'string' ? given : randomUUID())
    answeredOnSocket(last, {status: HTTP_ERRORS[code].status, code, bytes})
  }
  const before = queued.at(-2)
  if (before) before.once('close', answerBody)
  else answerBody()
}

/**
 * A request whose head arrived after its connection was answered here (a header trickle completed after its 408):
 * the connection is closing, and the request gets no answer.
 */
export function afterSocketAnswer(req: IncomingMessage): boolean {
  const lingering = closing.get(req.socket)
  lingering?.()
  return lingering !== undefined
}

/**
 * http.Server's `connect`: a CONNECT asks the server to be a proxy, which it is not. Without a listener Node closes
 * the connection without a byte; it gets 405 with the JSON error body instead, and an empty Allow (its target, a host
 * and port, is no resource of this server's).
 */
export function answerConnect(req: IncomingMessage, socket: Duplex, record: (answer: SocketAnswer) => void): void {
  // The socket is the listener's once the request is read: Node no longer handles its errors (a reset).
  socket.on('error', () => socket.destroy())
  const requestId = requestIdOf(req)
  const bytes = writeError(socket, 'method_not_allowed', 'CONNECT is not allowed: this server is not a proxy', requestId, 'Allow: \r\n')
  record({method: 'CONNECT', status: HTTP_ERRORS.method_not_allowed.status, code: 'method_not_allowed', bytes, requestId})
}
