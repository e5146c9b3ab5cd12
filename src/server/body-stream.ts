import type {IncomingHttpHeaders, IncomingMessage} from 'node:http'
import {Transform} from 'node:stream'

import {ModError} from '../lib/errors.js'

/** A request body as a stream, with the request's headers (formidable reads them from the stream it parses). */
export type BodyStream = Transform & {headers: IncomingHttpHeaders}

/**
 * The body of `req` as a stream that fails with `request_timeout` when the client sends nothing for `idleMs`
 * while the server is ready to read (time the server itself holds the body back, e.g. while writing a video to
 * disk, does not count), and with `bad_request` when the client goes away. On failure the request stops being
 * read; the error answer then closes the connection.
 */
export function bodyStream(req: IncomingMessage, idleMs: number): BodyStream {
  let timer: NodeJS.Timeout | undefined
  const stop = () => clearTimeout(timer)
  const arm = () => {
    stop()
    timer = setTimeout(onIdle, idleMs)
  }
  const body = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      arm()
      callback(null, chunk)
    },
    flush(callback) {
      stop()
      callback()
    },
  })
  // Data waiting inside the stream means the reader is behind, not the client.
  const readerBehind = () => body.writableLength > 0 || body.readableLength >= body.readableHighWaterMark
  function onIdle(): void {
    if (readerBehind()) arm()
    else fail(new ModError('request_timeout', `no part of the request body arrived for ${idleMs} ms (MOD_BODY_TIMEOUT_MS)`))
  }
  function fail(e: ModError): void {
    stop()
    req.unpipe(body)
    req.pause()
    if (!body.destroyed) body.destroy(e)
  }
  const cancelled = () => {
    if (!req.complete) fail(new ModError('bad_request', 'the request was cancelled by the client'))
  }
  req.on('error', cancelled).on('close', cancelled)
  body.on('close', () => {
    stop()
    req.off('error', cancelled).off('close', cancelled)
    req.unpipe(body)
    // A body left unread (refused by its reader) is not drained: the error answer closes the connection.
    if (!req.complete) req.pause()
  })
  arm()
  req.pipe(body)
  return Object.assign(body, {headers: req.headers})
}
