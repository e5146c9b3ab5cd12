import {close as closeCb, constants, fstat as fstatCb, open as openCb, read as readCb, type Stats} from 'node:fs'
import {Socket} from 'node:net'
import type {Readable} from 'node:stream'
import {promisify} from 'node:util'

import {ModError} from '../errors.js'
import {formatSize} from '../sizes.js'

/** Counts bytes against a limit: the one place where a size limit is checked as bytes arrive. */
export interface ByteCap {
  /** Counts `bytes` more; throws the cap's error once the total is over the limit. */
  add(bytes: number): void
  readonly total: number
}

/** A cap of `maxBytes`; going over it throws `overLimit()`, by default payload_too_large naming `name`. */
export function byteCap(maxBytes: number, name: string, overLimit: () => ModError = () => tooLarge(name, maxBytes)): ByteCap {
  let total = 0
  return {
    add(bytes) {
      total += bytes
      if (total > maxBytes) throw overLimit()
    },
    get total() {
      return total
    },
  }
}

// Descriptors as numbers, not FileHandles: a FIFO's is handed to a socket, which closes it.
const openFd = promisify(openCb) as (path: string | Buffer, flags: number) => Promise<number>
const fstat = promisify(fstatCb) as (fd: number) => Promise<Stats>
const readFd = promisify(readCb) as unknown as (fd: number, buffer: Buffer, offset: number, length: number, position: null) => Promise<{bytesRead: number}>
const closeFd = promisify(closeCb)

function tooLarge(name: string, maxBytes: number): ModError {
  return new ModError('payload_too_large', `${name} is larger than ${formatSize(maxBytes)}`)
}

/**
 * Reads a whole source into memory, counting bytes as they arrive: whatever the source claims (a stat() size, a
 * Content-Length), more than maxBytes is `payload_too_large` (or `overLimit()`) and the source is released at once
 * (for a stream, leaving the loop destroys it). `name` is what the message calls the source, e.g. a path or "stdin".
 */
export async function readCapped(
  source: AsyncIterable<Buffer | string | Uint8Array> | Readable,
  maxBytes: number,
  name: string,
  overLimit?: () => ModError,
): Promise<Buffer> {
  const cap = byteCap(maxBytes, name, overLimit)
  const chunks: Buffer[] = []
  for await (const chunk of source as AsyncIterable<Buffer | string | Uint8Array>) {
    const b = typeof chunk === 'string' ? Buffer.from(chunk) : Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk)
    cap.add(b.length)
    chunks.push(b)
  }
  return Buffer.concat(chunks, cap.total)
}

/**
 * Reads a file into memory with the same cap. Its size is known, so a file under the cap is read in one call:
 * a stream's 64 KiB chunks would each wait for a libuv thread, behind the image decodes that share the pool, and
 * starve a scan of input. A file that grows while it is read is still held to the cap as bytes arrive.
 */
export async function readFileCapped(path: string | Buffer, maxBytes: number, overLimit = () => tooLarge(String(path), maxBytes)): Promise<Buffer> {
  // Non-blocking, so that a FIFO is opened without waiting for its writer; a regular file reads as ever.
  let fd = await openFd(path, constants.O_RDONLY | constants.O_NONBLOCK)
  let info: Stats
  try {
    info = await fstat(fd)
  } catch (e) {
    await closeFd(fd)
    throw e
  }
  if (info.isFIFO()) return readFifo(fd, String(path), maxBytes, overLimit)
  if (!info.isFile()) {
    // A device reads as it expects to, blocking.
    await closeFd(fd)
    fd = await openFd(path, constants.O_RDONLY)
  }
  try {
    if (info.size > maxBytes) throw overLimit()
    const cap = byteCap(maxBytes, String(path), overLimit)
    const chunks: Buffer[] = []
    // One byte more than the size tells a file that ended (a short read) from one that grew.
    let want = info.size + 1
    for (;;) {
      const buffer = Buffer.allocUnsafe(Math.min(want, maxBytes - cap.total + 1))
      const {bytesRead} = await readFd(fd, buffer, 0, buffer.length, null)
      cap.add(bytesRead)
      chunks.push(buffer.subarray(0, bytesRead))
      if (bytesRead < buffer.length) break
      want = 64 * 1024
    }
    return chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, cap.total)
  } finally {
    await closeFd(fd)
  }
}

/**
 * A FIFO (a named pipe, `<(command)`) read as the stream it is: opened without waiting for its writer and watched by
 * the event loop, where a plain open() would wait for the writer in one of libuv's few threads, which nothing can
 * cancel and which would hold the process at exit (a stop signal could not end it).
 */
async function readFifo(fd: number, name: string, maxBytes: number, overLimit: () => ModError): Promise<Buffer> {
  // The socket owns the descriptor from here: destroying it closes it.
  const fifo = new Socket({fd, readable: true, writable: false})
  try {
    return await readCapped(fifo, maxBytes, name, overLimit)
  } finally {
    fifo.destroy()
  }
}
