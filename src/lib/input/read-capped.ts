import {constants} from 'node:fs'
import {open, stat} from 'node:fs/promises'
import {Socket} from 'node:net'
import type {Readable} from 'node:stream'

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
  if ((await stat(path)).isFIFO()) return readFifo(path, maxBytes, overLimit)
  const handle = await open(path, 'r')
  try {
    const {size} = await handle.stat()
    if (size > maxBytes) throw overLimit()
    const cap = byteCap(maxBytes, String(path), overLimit)
    const chunks: Buffer[] = []
    // One byte more than the size tells a file that ended (a short read) from one that grew.
    let want = size + 1
    for (;;) {
      const buffer = Buffer.allocUnsafe(Math.min(want, maxBytes - cap.total + 1))
      const {bytesRead} = await handle.read(buffer, 0, buffer.length, null)
      cap.add(bytesRead)
      chunks.push(buffer.subarray(0, bytesRead))
      if (bytesRead < buffer.length) break
      want = 64 * 1024
    }
    return chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, cap.total)
  } finally {
    await handle.close()
  }
}

/**
 * A FIFO (a named pipe, `<(command)`) read as the stream it is: opened without waiting for its writer and watched by
 * the event loop, where a plain open() would wait for the writer in one of libuv's few threads, which nothing can
 * cancel and which would hold the process at exit (a stop signal could not end it).
 */
async function readFifo(path: string | Buffer, maxBytes: number, overLimit: () => ModError): Promise<Buffer> {
  const handle = await open(path, constants.O_RDONLY | constants.O_NONBLOCK)
  const fifo = new Socket({fd: handle.fd, readable: true, writable: false})
  try {
    return await readCapped(fifo, maxBytes, String(path), overLimit)
  } finally {
    fifo.destroy()
  }
}
