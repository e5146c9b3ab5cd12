import type {IncomingHttpHeaders, IncomingMessage} from 'node:http'
import {Transform} from 'node:stream'

import {ModError} from '../lib/errors.js'
import {formatSize} from '../lib/sizes.js'
import type {Hold} from './queue.js'

/** A request body as a stream, with the request's headers (formidable reads them from the stream it parses). */
export type BodyStream = Transform & {headers: IncomingHttpHeaders}

export interface BodyLimits {
  /** MOD_BODY_TIMEOUT_MS */
  idleMs: number
  /** The whole body: a declared Content-Length over it is payload_too_large before anything is read. */
  maxBytes: number
  /**
   * Where a body kept in memory counts its bytes as held before they are buffered: the declared Content-Length at
   * once (Node delivers no more than that), else chunk by chunk. Absent for a body written to disk.
   */
  hold?: Hold
}

/**
 * The body of `req` as a stream, within `limits`, that fails with `request_timeout` when the client sends nothing
 * for `idleMs` while the server is ready to read (time the server itself holds the body back, e.g. while writing a video to
 * disk, does not count), and with `bad_request` when the client goes away. On failure the request stops being
 * read; the error answer then closes the connection.
 */
export function bodyStream(req: IncomingMessage, limits: BodyLimits): BodyStream {
  const {idleMs, hold} = limits
  const declared = Number(req.headers['content-length'])
  if (declared > limits.maxBytes) {
    throw new ModError('payload_too_large', `the request body is larger than ${formatSize(limits.maxBytes)}`)
  }
  const known = Number.isSafeInteger(declared)
  if (hold && known) hold.take(declared)
  let timer: NodeJS.Timeout | undefined
  const stop = () => clearTimeout(timer)
  const arm = () => {
    stop()
    timer = setTimeout(onIdle, idleMs)
  }
  const body = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      arm()
      try {
        if (hold && !known) hold.take(chunk.length)
      } catch (e) {
        callback(e as ModError)
        return
      }
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
