import type {Readable} from 'node:stream'

import {ModError} from '../errors.js'

/**
 * Reads a whole source into memory, counting bytes as they arrive: whatever the source claims (a stat() size, a
 * Content-Length), more than maxBytes is `payload_too_large` and the source is released at once (for a stream,
 * leaving the loop destroys it). `name` is what the message calls the source, e.g. a path or "stdin".
 */
export async function readCapped(source: AsyncIterable<Buffer | string | Uint8Array> | Readable, maxBytes: number, name: string): Promise<Buffer> {
  const chunks: Buffer[] = []
  let total = 0
  for await (const chunk of source as AsyncIterable<Buffer | string | Uint8Array>) {
    const b = typeof chunk === 'string' ? Buffer.from(chunk) : Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk)
    total += b.length
    if (total > maxBytes) throw new ModError('payload_too_large', `${name} is larger than the limit of ${maxBytes} bytes`)
    chunks.push(b)
  }
  return Buffer.concat(chunks, total)
}
