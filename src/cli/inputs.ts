import {open, opendir, stat} from 'node:fs/promises'
import {extname, join} from 'node:path'

import {ModError} from '../lib/errors.js'
import type {ImageInput} from '../lib/engine.js'
import {IMAGE_EXTENSIONS} from '../lib/image/formats.js'

function tooLarge(source: string, maxBytes: number): ModError {
  return new ModError('payload_too_large', `${source} is larger than the ${maxBytes}-byte limit (MOD_MAX_BYTES)`)
}

/** Reads a file, refusing it by its size before reading any of it. */
async function readLimited(path: string, maxBytes: number): Promise<Buffer> {
  let handle
  try {
    handle = await open(path, 'r')
  } catch (e) {
    throw new ModError('unreadable_image', `cannot read ${path}: ${(e as NodeJS.ErrnoException).code ?? 'error'}`)
  }
  try {
    const {size} = await handle.stat()
    if (size > maxBytes) throw tooLarge(path, maxBytes)
    return await handle.readFile()
  } finally {
    await handle.close()
  }
}

export async function readStream(stream: NodeJS.ReadableStream, source: string, maxBytes: number): Promise<Buffer> {
  const chunks: Buffer[] = []
  let total = 0
  for await (const chunk of stream) {
    const b = typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer)
    total += b.length
    if (total > maxBytes) throw tooLarge(source, maxBytes)
    chunks.push(b)
  }
  return Buffer.concat(chunks)
}

async function* walk(dir: string): AsyncGenerator<string> {
  const entries = []
  for await (const entry of await opendir(dir)) entries.push(entry)
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  for (const entry of entries) {
    const p = join(dir, entry.name)
    if (entry.isDirectory()) yield* walk(p)
    else if (entry.isFile() && IMAGE_EXTENSIONS.has(extname(entry.name).toLowerCase())) yield p
  }
}

/** Files, folders (recursively, in name order) and `-` for stdin, lazily: nothing is read before the engine asks. */
export async function* scanInputs(paths: string[], maxBytes: number, stdin: NodeJS.ReadableStream = process.stdin): AsyncGenerator<ImageInput> {
  for (const p of paths) {
    if (p === '-') {
      yield {source: '-', read: () => readStream(stdin, 'stdin', maxBytes)}
      continue
    }
    const info = await stat(p).catch(() => undefined)
    if (info?.isDirectory()) {
      for await (const file of walk(p)) yield {source: file, read: () => readLimited(file, maxBytes)}
    } else {
      yield {source: p, read: () => readLimited(p, maxBytes)}
    }
  }
}

