import {randomUUID} from 'node:crypto'
import {STATUS_CODES, type ServerResponse} from 'node:http'
import type {Duplex} from 'node:stream'

import {HTTP_ERRORS, type HttpErrorCode} from './errors.js'

/** Node's parser errors that it would answer itself (as plain text) → the code of our JSON answer. */
const PARSER_ERRORS: Record<string, [HttpErrorCode, string]> = {
  HPE_HEADER_OVERFLOW: ['headers_too_large', 'the request headers are larger than the server accepts (16 KiB)'],
  ERR_HTTP_REQUEST_TIMEOUT: ['request_timeout', 'the request did not arrive in time'],
  HPE_CHUNK_EXTENSIONS_OVERFLOW: ['payload_too_large', 'the chunk extensions of the request body are too large'],
}

/**
 * http.Server's `clientError`: a request Node could not parse gets the same JSON error body as any other error,
 * its request_id included (Node's own answer is plain text), then the connection is closed. Nothing is answered
 * when a response has started on the connection already, or the socket cannot be written.
 */
export function answerClientError(err: NodeJS.ErrnoException, socket: Duplex): void {
  const pending = (socket as Duplex & {_httpMessage?: ServerResponse})._httpMessage
  if (!socket.writable || pending?.headersSent || err.code === 'ECONNRESET') {
    socket.destroy()
    return
  }
  const [code, message] = PARSER_ERRORS[err.code ?? ''] ?? ['bad_request', 'the request is not valid HTTP']
  // A request whose body broke the parser has its id already; one whose head did not parse gets an id of its own.
  const given = pending?.getHeader('x-request-id')
  const requestId = typeof given === 'string' ? given : randomUUID()
  const body = JSON.stringify({error: {code, message, request_id: requestId}})
  const {status} = HTTP_ERRORS[code]
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}\r\n` +
      'Content-Type: application/json; charset=utf-8\r\n' +
      `X-Request-Id: ${requestId}\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      'Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n' +
      body,
  )
}
