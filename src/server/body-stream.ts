import type {IncomingHttpHeaders, IncomingMessage} from 'node:http'
import {Transform} from 'node:stream'

import {ModError} from '../lib/errors.js'
import {formatSize} from '../lib/sizes.js'
import {watchPace, type Pace} from './body-pace.js'
import {continueBody} from './continue.js'
import type {Hold, Place} from './upload-places.js'

/** A request body as a stream, with the request's headers (formidable reads them from the stream it parses). */
export type BodyStream = Transform & {headers: IncomingHttpHeaders}

export interface BodyLimits extends Pace {
  /** The whole body: a declared Content-Length over it is payload_too_large before anything is read. */
  maxBytes: number
  /**
   * What `maxBytes` is, in the setting's terms, for the refusal: the body limit is the setting's value plus room
   * for the form or the encoding, which alone would name neither (e.g. "the most a video of at most 20 KiB
   * (MOD_MAX_VIDEO_BYTES) takes in a multipart form").
   */
  room: string
  /**
   * Where a body kept in memory counts its bytes as held before they are buffered: the declared Content-Length at
   * once (Node delivers no more than that), else chunk by chunk. Absent for a body written to disk.
   */
  hold?: Hold
  /** The request's upload place, told how the body arrives; it may stop the body to give the place to another client. */
  place?: Place
}

/** A body over its limit, named with the setting it comes from. */
export function bodyTooLarge(limits: Pick<BodyLimits, 'maxBytes' | 'room'>): ModError {
  return new ModError('payload_too_large', `the request body is larger than ${formatSize(limits.maxBytes)}, ${limits.room}`)
}

/**
 * The body of `req` as a stream, within `limits`, that fails with `request_timeout` when the client sends nothing
 * for `idleMs` while the server is ready to read, or when, `idleMs` after it started, fewer than `minRate` bytes per
 * second have arrived on average (a body of n bytes has `idleMs` + n / `minRate` seconds): a client cannot keep an
 * upload place by sending a byte now and then. Time the server itself holds the body back (e.g. while writing a
 * video to disk) does not count: the rate is then measured anew. It fails with `bad_request` when the client goes
 * away, and with what its `place` stops it with (its upload place given to another client, see Gate.receive). On
 * failure the request stops being read; the error answer then closes the connection.
 */
export function bodyStream(req: IncomingMessage, limits: BodyLimits): BodyStream {
  const {hold, place} = limits
  const declared = Number(req.headers['content-length'])
  if (declared > limits.maxBytes) throw bodyTooLarge(limits)
  const known = Number.isSafeInteger(declared)
  if (hold && known) hold.take(declared)
  const reading = place?.read((e) => fail(e))
  const stop = () => {
    pace.stop()
    reading?.end()
  }
  const body = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      pace.arrived(chunk.length)
      reading?.arrived(chunk.length)
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
  const pace = watchPace(limits, () => body.writableLength > 0 || body.readableLength >= body.readableHighWaterMark, fail)
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
  // A client can go away before the body is asked for (while the route prepares a folder for it).
  if (req.destroyed) cancelled()
  body.on('close', () => {
    stop()
    req.off('error', cancelled).off('close', cancelled)
    req.unpipe(body)
    // A body left unread (refused by its reader) is not drained: the error answer closes the connection.
    if (!req.complete) req.pause()
  })
  req.pipe(body)
  // The body is wanted now: a client that holds it back for 100 Continue may send it.
  continueBody(req)
  return Object.assign(body, {headers: req.headers})
}
