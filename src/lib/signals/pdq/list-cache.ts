import {createHash, randomBytes} from 'node:crypto'
import {constants} from 'node:fs'
import {open, rename, rm, writeFile, type FileHandle} from 'node:fs/promises'

import {HASH_BYTES} from './hash256.js'
import type {HashList} from './list-file.js'
import {hashWords, indexArrays, indexFromArrays, type MultiIndex} from './multi-index.js'

/**
 * The binary cache of a hash list, kept beside the text file as `<file>.pdqcache`: a 64-byte header, the
 * hashes (32 bytes each), the record index of each (4 bytes), the multi-index (per chunk: bucket offsets,
 * ids, and chunk values where a bucket holds several), then the distinct records as JSON. Loading it is
 * reading one file: no parsing, no sorting. It is used only when it was made from a file of the same size, modification time and SHA-256;
 * it is written to a temporary name and renamed, so a reader never sees half of one.
 */
const MAGIC = Buffer.from('MODPDQ4\n')
const HEADER = 64

export interface SourceKey {
  size: number
  mtimeMs: number
  sha256: Buffer
}

export function cachePath(file: string): string {
  return `${file}.pdqcache`
}

/** SHA-256 of the first `size` bytes of an open file, read a mebibyte at a time. */
export async function fileSha256(handle: FileHandle, size: number): Promise<Buffer> {
  const hash = createHash('sha256')
  const chunk = Buffer.allocUnsafe(Math.min(size, 1 << 20))
  for (let at = 0; at < size; ) {
    const {bytesRead} = await handle.read(chunk, 0, Math.min(chunk.length, size - at), at)
    if (bytesRead === 0) break
    hash.update(chunk.subarray(0, bytesRead))
    at += bytesRead
  }
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

const bytesOf = (a: Uint32Array): Uint8Array => new Uint8Array(a.buffer, a.byteOffset, a.byteLength)

/** Writes the cache atomically; a folder that cannot be written to only means no cache. */
export async function writeListCache(file: string, list: HashList, index: MultiIndex, key: SourceKey): Promise<boolean> {
  const target = cachePath(file)
  const temp = `${target}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`
  const records = Buffer.from(JSON.stringify(list.recordTexts))
  const parts = [header(list, key), list.hashes.subarray(0, list.count * HASH_BYTES), bytesOf(list.records.subarray(0, list.count)), ...indexArrays(index).map(bytesOf), records]
  try {
    await writeFile(temp, parts)
    await rename(temp, target)
    return true
  } catch {
    await rm(temp, {force: true})
    return false
  }
}

/**
 * The cache's bytes when it stands for a file of this size and modification time (read from its header
 * first); undefined when it does not, or is not a regular file.
 */
async function readIfSource(target: string, size: number, mtimeMs: number, sha256: () => Promise<Buffer>): Promise<Buffer | undefined> {
  let handle
  try {
    handle = await open(target, constants.O_RDONLY | constants.O_NONBLOCK)
  } catch {
    return undefined
  }
  try {
    if (!(await handle.stat()).isFile()) return undefined
    const h = Buffer.alloc(HEADER)
    const {bytesRead} = await handle.read(h, 0, HEADER, 0)
    if (bytesRead < HEADER || !h.subarray(0, 8).equals(MAGIC)) return undefined
    if (h.readDoubleLE(16) !== size || h.readDoubleLE(24) !== mtimeMs) return undefined
    if (!h.subarray(32, 64).equals(await sha256())) return undefined
    return await handle.readFile()
  } finally {
    await handle.close()
  }
}

/** Whether every bucket runs from 0 to count without going back, and every id names a hash of the list. */
function indexIsWhole(index: MultiIndex, count: number): boolean {
  for (const offsets of index.offsets) {
    if (offsets[0] !== 0 || offsets[offsets.length - 1] !== count) return false
    for (let b = 1; b < offsets.length; b++) if (offsets[b] < offsets[b - 1]) return false
  }
  for (const ids of index.ids) for (let i = 0; i < ids.length; i++) if (ids[i] >= count) return false
  return true
}

/**
 * The list and its index from the cache, when the cache was made from exactly this source; else undefined,
 * and so also when the cache is damaged or forged (a count beyond its length, records or ids out of range,
 * buckets out of order): the caller then parses the text and writes the cache anew. The source's SHA-256 is
 * computed only when size and modification time match.
 */
export async function readListCache(
  file: string,
  source: {size: number; mtimeMs: number},
  sha256: () => Promise<Buffer>,
): Promise<{list: HashList; index: MultiIndex} | undefined> {
  const read = await readIfSource(cachePath(file), source.size, source.mtimeMs, sha256)
  if (!read) return undefined
  // Typed views need aligned offsets: a large file has a buffer of its own (offset 0); copy a small one otherwise.
  const data = read.byteOffset % 4 === 0 ? read : Buffer.from(Uint8Array.from(read).buffer)
  const count = data.readUInt32LE(8)
  if (HEADER + count * (HASH_BYTES + 4) > data.length) return undefined
  const u32 = (at: number, length: number): Uint32Array => new Uint32Array(data.buffer, data.byteOffset + at, length)
  let at = HEADER
  const hashes = new Uint8Array(data.buffer, data.byteOffset + at, count * HASH_BYTES)
  at += count * HASH_BYTES
  const records = u32(at, count)
  at += count * 4
  let short = false
  const index = indexFromArrays(count, hashWords(hashes), (length) => {
    if (at + length * 4 > data.length) {
      short = true
      return new Uint32Array(length)
    }
    const a = u32(at, length)
    at += length * 4
    return a
  })
  if (short || !indexIsWhole(index, count)) return undefined
  let recordTexts: unknown
  try {
    recordTexts = JSON.parse(data.toString('utf8', at))
  } catch {
    return undefined
  }
  if (!Array.isArray(recordTexts) || recordTexts.length !== data.readUInt32LE(12) || !recordTexts.every((t) => typeof t === 'string')) return undefined
  for (let i = 0; i < count; i++) if (records[i] >= recordTexts.length) return undefined
  return {list: {count, hashes, records, recordTexts: recordTexts as string[]}, index}
}
