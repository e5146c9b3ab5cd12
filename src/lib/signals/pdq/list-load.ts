import {createHash} from 'node:crypto'
import {constants, type Stats} from 'node:fs'
import {open, type FileHandle} from 'node:fs/promises'

import {ModError} from '../../errors.js'
import {readListCache, fileSha256, writeListCache} from './list-cache.js'
import {listErrors, parseHashList, type HashList, type ListLineError} from './list-file.js'
import {buildMultiIndex, type MultiIndex} from './multi-index.js'

export interface LoadedList {
  /** The name matches report (the policy's key for the list, or the file's name). */
  name: string
  file: string
  list: HashList
  index: MultiIndex
  /** Where the entries came from: the binary cache, or the text (parsed and indexed). */
  from: 'cache' | 'text'
}

/**
 * The largest list file read: about 15 million lines of a hash and a short label. A limit on what a policy
 * may point at, so that a mistaken path (a disk image, a log) fails at once instead of filling memory.
 */
export const MAX_LIST_BYTES = 1 << 30

/** `invalid_config` for a list file that cannot be read, by the errno code that says why. */
function unreadable(file: string, e: unknown): ModError {
  const code = (e as NodeJS.ErrnoException).code
  if (code === 'ENOENT') return new ModError('invalid_config', `hash list ${file} does not exist`)
  return new ModError('invalid_config', `cannot read hash list ${file}: ${code === 'EACCES' ? 'permission denied' : (code ?? 'error')}`)
}

/**
 * Opens a list file for reading: a regular file of at most MAX_LIST_BYTES, checked on the open handle (a
 * FIFO, a device such as /dev/zero or a folder is refused; O_NONBLOCK keeps the open of a FIFO from waiting
 * for a writer that never comes).
 */
async function openListFile(file: string): Promise<{handle: FileHandle; info: Stats}> {
  let handle
  try {
    handle = await open(file, constants.O_RDONLY | constants.O_NONBLOCK)
  } catch (e) {
    throw unreadable(file, e)
  }
  try {
    const info = await handle.stat()
    if (!info.isFile()) throw new ModError('invalid_config', `hash list ${file} is not a regular file`)
    if (info.size > MAX_LIST_BYTES) {
      throw new ModError('invalid_config', `hash list ${file} is ${formatMiB(info.size)}, over the ${formatMiB(MAX_LIST_BYTES)} a list may have`)
    }
    return {handle, info}
  } catch (e) {
    await handle.close()
    throw e
  }
}

const formatMiB = (bytes: number): string => `${Math.ceil(bytes / (1 << 20))} MiB`

/** The file's bytes as its size said when it was opened (a file that grows meanwhile is read to that size). */
async function readOpened(handle: FileHandle, size: number): Promise<Buffer> {
  const text = Buffer.allocUnsafe(size)
  let at = 0
  while (at < size) {
    const {bytesRead} = await handle.read(text, at, size - at, at)
    if (bytesRead === 0) break
    at += bytesRead
  }
  return text.subarray(0, at)
}

/**
 * Loads a hash list file: from its binary cache when that is current, else by parsing the text (a bad line
 * is `invalid_config` with its line number), indexing it and writing list and index to the cache for next time.
 */
export async function loadHashList(file: string, name: string, options: {writeCache?: boolean} = {}): Promise<LoadedList> {
  const {handle, info} = await openListFile(file)
  try {
    const cached = await readListCache(file, info, () => fileSha256(handle, info.size))
    if (cached) return {name, file, ...cached, from: 'cache'}
    const text = await readOpened(handle, info.size)
    const parsed = parseHashList(text)
    const error = listErrors(file, parsed.errors)
    if (error) throw error
    const {list} = parsed
    const index = buildMultiIndex(list)
    // The key of the bytes parsed, not of the file now: it may have changed since.
    const parsedKey = {size: text.length, mtimeMs: info.mtimeMs, sha256: createHash('sha256').update(text).digest()}
    if (options.writeCache !== false) await writeListCache(file, list, index, parsedKey)
    return {name, file, list, index, from: 'text'}
  } finally {
    await handle.close()
  }
}

/** Parses a list file without caching or indexing it: its entry count and every bad line (for validation). */
export async function checkHashListFile(file: string): Promise<{count: number; errors: ListLineError[]}> {
  const {handle, info} = await openListFile(file)
  try {
    const {list, errors} = parseHashList(await readOpened(handle, info.size))
    return {count: list.count, errors}
  } finally {
    await handle.close()
  }
}
