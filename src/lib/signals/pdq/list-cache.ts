import {createHash, randomBytes} from 'node:crypto'
import {createReadStream} from 'node:fs'
import {open, readFile, rename, rm, writeFile} from 'node:fs/promises'

import {HASH_BYTES} from './hash256.js'
import type {HashList} from './list-file.js'

/**
 * The binary cache of a hash list, kept beside the text file as `<file>.pdqcache`: a 64-byte header, the
 * hashes (32 bytes each), the record index of each (4 bytes), then the distinct records as JSON. It is used
 * only when it was made from a file of the same size, modification time and SHA-256; it is written to a
 * temporary name and renamed, so a reader never sees half of one.
 */
const MAGIC = Buffer.from('MODPDQ1\n')
const HEADER = 64

export interface SourceKey {
  size: number
  mtimeMs: number
  sha256: Buffer
}

export function cachePath(file: string): string {
  return `${file}.pdqcache`
}

/** SHA-256 of a file, streamed. */
export async function fileSha256(file: string): Promise<Buffer> {
  const hash = createHash('sha256')
  for await (const chunk of createReadStream(file, {highWaterMark: 1 << 20})) hash.update(chunk as Buffer)
  return hash.digest()
}

function header(list: HashList, key: SourceKey): Buffer {
  const h = Buffer.alloc(HEADER)
  MAGIC.copy(h, 0)
  h.writeUInt32LE(list.count, 8)
  h.writeUInt32LE(list.recordTexts.length, 12)
  h.writeDoubleLE(key.size, 16)
  h.writeDoubleLE(key.mtimeMs, 24)
  key.sha256.copy(h, 32)
  return h
}

/** Writes the cache atomically; a folder that cannot be written to only means no cache. */
export async function writeListCache(file: string, list: HashList, key: SourceKey): Promise<boolean> {
  const target = cachePath(file)
  const temp = `${target}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`
  const records = Buffer.from(JSON.stringify(list.recordTexts))
  try {
    await writeFile(temp, [header(list, key), list.hashes, new Uint8Array(list.records.buffer, list.records.byteOffset, list.count * 4), records])
    await rename(temp, target)
    return true
  } catch {
    await rm(temp, {force: true})
    return false
  }
}

/** Reads just the header: does the cache stand for this source? */
async function matchesSource(target: string, key: Omit<SourceKey, 'sha256'>): Promise<Buffer | undefined> {
  let handle
  try {
    handle = await open(target, 'r')
  } catch {
    return undefined
  }
  try {
    const h = Buffer.alloc(HEADER)
    const {bytesRead} = await handle.read(h, 0, HEADER, 0)
    if (bytesRead < HEADER || !h.subarray(0, 8).equals(MAGIC)) return undefined
    if (h.readDoubleLE(16) !== key.size || h.readDoubleLE(24) !== key.mtimeMs) return undefined
    return h
  } finally {
    await handle.close()
  }
}

/** The list from its cache, when the cache was made from exactly this source; else undefined. */
export async function readListCache(file: string, key: () => Promise<SourceKey>, size: number, mtimeMs: number): Promise<HashList | undefined> {
  const target = cachePath(file)
  const h = await matchesSource(target, {size, mtimeMs})
  if (!h) return undefined
  const {sha256} = await key()
  if (!h.subarray(32, 64).equals(sha256)) return undefined
  const data = await readFile(target)
  const count = h.readUInt32LE(8)
  const recordsAt = HEADER + count * HASH_BYTES
  const textsAt = recordsAt + count * 4
  if (data.length < textsAt) return undefined
  let recordTexts: unknown
  try {
    recordTexts = JSON.parse(data.toString('utf8', textsAt))
  } catch {
    return undefined
  }
  if (!Array.isArray(recordTexts) || recordTexts.length !== h.readUInt32LE(12)) return undefined
  // Views into the file's buffer, not copies (a large file has a buffer of its own, aligned at 0).
  const aligned = data.byteOffset % 4 === 0
  const records = aligned ? new Uint32Array(data.buffer, data.byteOffset + recordsAt, count) : new Uint32Array(data.buffer.slice(data.byteOffset + recordsAt, data.byteOffset + textsAt))
  return {count, hashes: new Uint8Array(data.buffer, data.byteOffset + HEADER, count * HASH_BYTES), records, recordTexts: recordTexts as string[]}
}
