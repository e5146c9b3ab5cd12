import {createHash, randomBytes} from 'node:crypto'
import {constants, type Stats} from 'node:fs'
import {open, readdir, readFile, rename, rm, stat, writeFile, type FileHandle} from 'node:fs/promises'
import {hostname} from 'node:os'
import {join, resolve} from 'node:path'
import {setTimeout as sleep} from 'node:timers/promises'

import {whyUnreadable} from '../../errno.js'
import {ModError} from '../../errors.js'
import {makeDir} from '../../make-dir.js'
import {HASH_BYTES, type Hash256} from './hash256.js'
import {entryOf, listErrors, parseHashList, recordFields, type HashList, type ListLineError} from './list-file.js'
import {FORMAT, openMapped, writeMapped, type ListHit, type MappedIndex} from './list-map.js'
import {buildMultiIndex, checkThreshold, searchMultiIndex, type MultiIndex} from './multi-index.js'

/** A listed hash within the threshold of a query, with its label and note. */
export interface ListMatch extends ListHit {
  label: string
  note: string
}

export interface LoadedList {
  /** The name matches report (the policy's key for the list, or the file's name). */
  name: string
  file: string
  count: number
  /** Where the entries come from: the mapped cache, or the text (parsed and indexed in this process's memory). */
  from: 'cache' | 'text'
  /** Every entry within `threshold` of each query, nearest first (then by line), as a full scan would find them. */
  search(queries: Hash256[], threshold: number): Promise<ListMatch[][]>
  close(): Promise<void>
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
  return new ModError('invalid_config', `cannot read hash list ${file}: ${whyUnreadable(e)}`)
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

/** SHA-256 of the first `size` bytes of an open file, read a mebibyte at a time. */
async function fileSha256(handle: FileHandle, size: number): Promise<Buffer> {
  const hash = createHash('sha256')
  const chunk = Buffer.allocUnsafe(Math.max(1, Math.min(size, 1 << 20)))
  for (let at = 0; at < size; ) {
    const {bytesRead} = await handle.read(chunk, 0, Math.min(chunk.length, size - at), at)
    if (bytesRead === 0) break
    hash.update(chunk.subarray(0, bytesRead))
    at += bytesRead
  }
  return hash.digest()
}

/** Parses and indexes the text; a bad line is `invalid_config` with its line number. */
function parseListText(file: string, text: Buffer): {list: HashList; index: MultiIndex} {
  const parsed = parseHashList(text)
  const error = listErrors(file, parsed.errors)
  if (error) throw error
  return {list: parsed.list, index: buildMultiIndex(parsed.list)}
}

const withEntries = (recordTexts: string[], hits: ListHit[]): ListMatch[] => hits.map((h) => ({...h, ...recordFields(recordTexts[h.record])}))

/** A list searched in this process's memory (no cache folder, or one that cannot be written). */
function inMemory(name: string, file: string, list: HashList, index: MultiIndex): LoadedList {
  return {
    name,
    file,
    count: list.count,
    from: 'text',
    search: async (queries, threshold) => {
      checkThreshold(threshold)
      return queries.map((q) =>
        searchMultiIndex(index, q, threshold).map((h) => ({...h, hash: list.hashes.subarray(h.id * HASH_BYTES, (h.id + 1) * HASH_BYTES), record: list.records[h.id], ...entryOf(list, h.id)})),
      )
    },
    close: async () => {},
  }
}

function mapped(name: string, file: string, index: MappedIndex, from: LoadedList['from']): LoadedList {
  return {
    name,
    file,
    count: index.count,
    from,
    search: async (queries, threshold) => (await index.search(queries, threshold)).map((hits) => withEntries(index.recordTexts, hits)),
    close: () => index.close(),
  }
}

/**
 * What a list file was when its SHA-256 was last computed, kept beside the cache folders: while the file's
 * size, modification and change times and inode are the same, the SHA-256 is taken from here instead of
 * reading the whole file again. Any write to the file changes its change time (which no program can set back).
 */
interface Stamp {
  path: string
  size: number
  mtimeMs: number
  ctimeMs: number
  ino: number
  sha256: string
}

const stampOf = (path: string, info: Stats, sha256: Buffer): Stamp => ({path, size: info.size, mtimeMs: info.mtimeMs, ctimeMs: info.ctimeMs, ino: info.ino, sha256: sha256.toString('hex')})
const sameFile = (a: Stamp, b: Stamp): boolean => a.path === b.path && a.size === b.size && a.mtimeMs === b.mtimeMs && a.ctimeMs === b.ctimeMs && a.ino === b.ino

async function readStamp(path: string): Promise<Stamp | undefined> {
  try {
    const stamp = JSON.parse(await readFile(path, 'utf8')) as Stamp
    return typeof stamp.sha256 === 'string' && /^[0-9a-f]{64}$/.test(stamp.sha256) ? stamp : undefined
  } catch {
    return undefined
  }
}

/** Writes a file atomically (a temporary name renamed into place). */
async function writeAtomic(path: string, data: string): Promise<void> {
  const temp = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`
  try {
    await writeFile(temp, data)
    await rename(temp, path)
  } finally {
    await rm(temp, {force: true})
  }
}

const entryName = (sha256: Buffer): string => `${sha256.toString('hex')}-v${FORMAT}`

/**
 * Builds the cache folder of a parsed list in a temporary folder renamed into place, so that a process starting
 * meanwhile (another worker) never maps half a file; when another process put the same folder in place first,
 * theirs is as good. False when the cache folder cannot be written.
 */
async function buildEntry(root: string, entry: string, list: HashList, index: MultiIndex, sha256: Buffer): Promise<boolean> {
  const temp = `${entry}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`
  try {
    await makeDir(temp)
    await writeMapped(temp, list, index, sha256)
    await rm(entry, {recursive: true, force: true})
    await rename(temp, entry).catch((e: NodeJS.ErrnoException) => {
      if (e.code !== 'ENOTEMPTY' && e.code !== 'EEXIST') throw e
    })
    return true
  } catch {
    return false
  } finally {
    await rm(temp, {recursive: true, force: true}).catch(() => undefined)
  }
}

/**
 * Removes the folder this list's previous stamp named, unless another list's stamp names it too, and every
 * folder of another format. Never a folder of the current format that no stamp names yet: another process
 * may just have built it for another list and not yet written its stamp.
 */
async function removeStale(root: string, previous: string | undefined): Promise<void> {
  const names = await readdir(root).catch(() => [] as string[])
  const named = new Set<string>()
  for (const name of names) {
    if (!name.endsWith('.json')) continue
    const stamp = await readStamp(join(root, name))
    if (stamp) named.add(entryName(Buffer.from(stamp.sha256, 'hex')))
  }
  const stale = names.filter((name) => /^[0-9a-f]{64}-v\d+$/.test(name) && !named.has(name) && (name === previous || !name.endsWith(`-v${FORMAT}`)))
  // A folder being mapped stays readable to the processes that map it: removing it only unlinks its name.
  for (const name of stale) await rm(join(root, name), {recursive: true, force: true})
}

/** A lock this old was left by a process that died or hung (on this host or another sharing the folder). */
const ABANDONED_MS = 10 * 60_000
const POLL_MS = 200

/** Whether a build lock was left behind: its process, on this host, is gone, or it is older than ABANDONED_MS. */
async function abandoned(lock: string): Promise<boolean> {
  try {
    const [text, info] = await Promise.all([readFile(lock, 'utf8'), stat(lock)])
    if (Date.now() - info.mtimeMs > ABANDONED_MS) return true
    const [host, pid] = text.split(' ')
    if (host !== hostname() || !(Number(pid) > 0)) return false
    process.kill(Number(pid), 0)
    return false
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'ESRCH'
  }
}

/**
 * One process builds a cache folder while the others that start with it wait for it: workers that each parsed
 * a 10-million list at once would need that memory (some 2.5 GiB) once each. The builder holds `<entry>.lock`,
 * created exclusively; a lock whose holder is gone is taken over. Resolves to the folder opened by the builder
 * meanwhile, to the release of the lock when this process is to build, or to undefined when no lock can be
 * made (an unwritable cache folder: the caller keeps the list in memory).
 */
async function buildTurn(entry: string, open: () => Promise<MappedIndex | undefined>): Promise<MappedIndex | (() => Promise<void>) | undefined> {
  const lock = `${entry}.lock`
  for (;;) {
    try {
      await writeFile(lock, `${hostname()} ${process.pid}`, {flag: 'wx'})
      return () => rm(lock, {force: true})
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') return undefined
    }
    const opened = await open()
    if (opened) return opened
    if (await abandoned(lock)) await rm(lock, {force: true})
    else await sleep(POLL_MS)
  }
}

/**
 * Lists from this size on (about 250 000 hashes) are shared by default. A lookup in a mapped list costs about 1.5 ms
 * more per image than one in a process's own heap (two onnxruntime runs; 3.4 against 1.8 ms for an image's nine
 * hashes in a list of 100 000, bench/pdq-speed.ts), while a smaller list costs each process at most about 35 MiB.
 */
export const SHARED_FROM_BYTES = 16 * 1024 * 1024

/**
 * Loads a hash list file. When `shared` (by default for a file of SHARED_FROM_BYTES or more) and with a cache
 * folder (MOD_CACHE_DIR), from its mapped cache under
 * `<cacheDir>/hash-lists/`, keyed by the list's SHA-256 and the cache format: built from the text (parsed,
 * indexed, written; by one of the processes starting together, the others wait for it) when it is missing or
 * damaged, then mapped like the first time. Without one, or when it
 * cannot be written, the list is parsed and indexed in this process's memory. A bad line is `invalid_config`
 * with its line number.
 */
export async function loadHashList(file: string, name: string, options: {cacheDir?: string; shared?: boolean} = {}): Promise<LoadedList> {
  const {handle, info} = await openListFile(file)
  try {
    if (options.cacheDir === undefined || !(options.shared ?? info.size >= SHARED_FROM_BYTES)) {
      const {list, index} = parseListText(file, await readOpened(handle, info.size))
      return inMemory(name, file, list, index)
    }
    const root = join(options.cacheDir, 'hash-lists')
    const path = resolve(file)
    const stampFile = join(root, `${createHash('sha256').update(path).digest('hex').slice(0, 32)}.json`)
    const stamp = await readStamp(stampFile)
    const known = stamp && sameFile(stamp, stampOf(path, info, Buffer.alloc(0))) ? Buffer.from(stamp.sha256, 'hex') : undefined
    const sha256 = known ?? (await fileSha256(handle, info.size))
    // A new stamp or a new folder may leave a folder that no stamp names (the list's previous text, another format).
    const saveStamp = async (sha: Buffer, built: boolean) => {
      if (stamp?.sha256 === sha.toString('hex') && known && !built) return
      await writeAtomic(stampFile, JSON.stringify(stampOf(path, info, sha))).catch(() => undefined)
      await removeStale(root, stamp && entryName(Buffer.from(stamp.sha256, 'hex')))
    }
    const cached = await openMapped(join(root, entryName(sha256)), sha256)
    if (cached) {
      await saveStamp(sha256, false)
      return mapped(name, file, cached, 'cache')
    }
    await makeDir(root).catch(() => undefined)
    const turn = await buildTurn(join(root, entryName(sha256)), () => openMapped(join(root, entryName(sha256)), sha256))
    if (turn && typeof turn !== 'function') {
      await saveStamp(sha256, false)
      return mapped(name, file, turn, 'cache')
    }
    try {
      // Another process may have finished building between this one's look and its lock.
      const built = turn && (await openMapped(join(root, entryName(sha256)), sha256))
      if (built) {
        await saveStamp(sha256, false)
        return mapped(name, file, built, 'cache')
      }
      const text = await readOpened(handle, info.size)
      // The key of the bytes parsed, not of the file when hashed: it may have changed since.
      const parsedSha = createHash('sha256').update(text).digest()
      const {list, index} = parseListText(file, text)
      // A list of comments alone has nothing to map.
      if (list.count === 0) return inMemory(name, file, list, index)
      const entry = join(root, entryName(parsedSha))
      const opened = turn && (await buildEntry(root, entry, list, index, parsedSha)) ? await openMapped(entry, parsedSha) : undefined
      if (!opened) return inMemory(name, file, list, index)
      await saveStamp(parsedSha, true)
      return mapped(name, file, opened, 'text')
    } finally {
      await turn?.()
    }
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
