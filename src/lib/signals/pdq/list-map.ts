/**
 * The mapped cache of a hash list: one folder `<sha256 of the list>-v<FORMAT>` holding `index.bin` (each hash
 * followed by its record, the multi-index's bucket offsets and ids, the record texts) and two small ONNX graphs,
 * `probe.onnx` and `fetch.onnx`, whose initializers are those arrays stored as external data in `index.bin`.
 *
 * Node has no mmap of its own, and every npm mmap binding builds a native addon at install time (install
 * scripts stay off here). onnxruntime, already loaded for the models, maps external initializers from their
 * file read-only and gathers from them in place: so the arrays are file pages, read only where a lookup
 * touches them, and shared by every process of the machine that opens the same folder (`mod serve --workers N`
 * holds one copy between its workers, as it does for the model weights). A lookup is two runs of
 * Gather: the bucket bounds of every probed chunk value, then the ids in those buckets with their rows (hash and
 * record: one row of bytes, which onnxruntime gathers several times faster than eight int32 words). The distances are computed here, as the in-memory search computes them.
 *
 * `index.bin` is checked when opened (its exact size, the list's SHA-256, and a SHA-256 of its header and record texts); its
 * arrays are not read then, which would touch every page: bucket bounds are checked at each lookup instead, and
 * onnxruntime refuses an id out of range.
 */
import {createHash} from 'node:crypto'
import {open, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import * as ort from 'onnxruntime-node'

import {ModError} from '../../errors.js'
import {sessionOptions} from '../../model/session.js'
import {HASH_BYTES, popcount32, type Hash256} from './hash256.js'
import type {HashList} from './list-file.js'
import {bucketBits, checkThreshold, CHUNKS, probeKeys, queryWords, type MultiIndex} from './multi-index.js'

/** The layout's version: a cache of another version is built anew. */
export const FORMAT = 3
const MAGIC = Buffer.from('MODPDQM\n')
/** Sections start on page boundaries, where onnxruntime maps them from. */
const PAGE = 4096
const DATA_FILE = 'index.bin'
const PROBE_FILE = 'probe.onnx'
const FETCH_FILE = 'fetch.onnx'
/** Bytes of a row: the hash and its record. */
const ROW = HASH_BYTES + 4

/** A listed hash within the threshold of a query. */
export interface ListHit {
  id: number
  distance: number
  hash: Hash256
  /** Index into the list's record texts. */
  record: number
}

export interface MappedIndex {
  count: number
  recordTexts: string[]
  /** Nearest first for each query, as searchMultiIndex orders them. */
  search(queries: Hash256[], threshold: number): Promise<ListHit[][]>
  close(): Promise<void>
}

interface Layout {
  /** Rows of ROW bytes: a hash, then its record (uint32, little-endian). */
  rows: number
  offsets: number
  /** Entries of the offset tables, all chunks together. */
  offsetEntries: number
  /** Where each chunk's offset table starts among them. */
  offsetBase: number[]
  ids: number
  texts: number
  end: number
}

const aligned = (at: number): number => Math.ceil(at / PAGE) * PAGE

function layoutOf(count: number, textBytes: number): Layout {
  const offsetBase: number[] = []
  let offsetEntries = 0
  for (let c = 0; c < CHUNKS; c++) {
    offsetBase.push(offsetEntries)
    offsetEntries += (1 << bucketBits(count, c)) + 1
  }
  const rows = PAGE
  const offsets = aligned(rows + count * ROW)
  const ids = aligned(offsets + offsetEntries * 4)
  const texts = aligned(ids + CHUNKS * count * 4)
  return {rows, offsets, offsetEntries, offsetBase, ids, texts, end: texts + textBytes}
}

/** The bytes of `index.bin` this many hashes take (the record texts aside): what a fully resident cache costs. */
export function mappedBytes(count: number): number {
  return layoutOf(count, 0).end
}

const bytesOf = (a: Uint32Array | Uint8Array): Uint8Array => new Uint8Array(a.buffer, a.byteOffset, a.byteLength)

/** What the header's fields and the record texts hash to (bytes 64-96 of the header): a damaged header or text shows. */
const headerSum = (h: Buffer, texts: Buffer): Buffer => createHash('sha256').update(h.subarray(0, 64)).update(texts).digest()

function header(count: number, recordCount: number, texts: Buffer, sha256: Buffer): Buffer {
  const h = Buffer.alloc(PAGE)
  MAGIC.copy(h, 0)
  h.writeUInt32LE(FORMAT, 8)
  h.writeUInt32LE(count, 12)
  h.writeUInt32LE(recordCount, 16)
  h.writeUInt32LE(texts.length, 20)
  sha256.copy(h, 32)
  headerSum(h, texts).copy(h, 64)
  return h
}

/** 0, step, 2 x step... below `end`: one index per page of an array of `end` entries of `step` per page. */
const strided = (end: number, step: number): ort.Tensor => {
  const indices = Int32Array.from({length: Math.ceil(end / step)}, (_, i) => i * step)
  return new ort.Tensor('int32', indices, [indices.length])
}

/**
 * Writes the cache of a parsed list into `dir` (a new folder: the caller renames it into place). Offsets are
 * stored as positions among all the id tables (chunk c's ids start at c x count), so that one gather serves
 * every chunk.
 */
export async function writeMapped(dir: string, list: HashList, index: MultiIndex, sha256: Buffer): Promise<void> {
  const {count} = list
  const texts = Buffer.from(JSON.stringify(list.recordTexts))
  const layout = layoutOf(count, texts.length)
  const handle = await open(join(dir, DATA_FILE), 'wx')
  try {
    const put = async (bytes: Uint8Array, at: number) => {
      for (let done = 0; done < bytes.length; ) done += (await handle.write(bytes, done, bytes.length - done, at + done)).bytesWritten
    }
    await put(header(count, list.recordTexts.length, texts, sha256), 0)
    // Rows a mebibyte or so at a time.
    const batch = 1 << 15
    const rows = Buffer.alloc(batch * ROW)
    for (let first = 0; first < count; first += batch) {
      const n = Math.min(batch, count - first)
      for (let i = 0; i < n; i++) {
        rows.set(list.hashes.subarray((first + i) * HASH_BYTES, (first + i + 1) * HASH_BYTES), i * ROW)
        rows.writeUInt32LE(list.records[first + i], i * ROW + HASH_BYTES)
      }
      await put(rows.subarray(0, n * ROW), layout.rows + first * ROW)
    }
    for (let c = 0; c < CHUNKS; c++) {
      const shifted = Uint32Array.from(index.offsets[c], (o) => o + c * count)
      await put(bytesOf(shifted), layout.offsets + layout.offsetBase[c] * 4)
      await put(bytesOf(index.ids[c]), layout.ids + c * count * 4)
    }
    await put(texts, layout.texts)
    await handle.sync()
  } finally {
    await handle.close()
  }
  // The graphs' writer (onnx-proto) loads only when a cache is built, not at every start.
  const {fetchModel, probeModel} = await import('./list-graphs.js')
  await writeFile(join(dir, PROBE_FILE), probeModel({file: DATA_FILE, offsets: layout.offsets, offsetEntries: layout.offsetEntries}))
  await writeFile(join(dir, FETCH_FILE), fetchModel({file: DATA_FILE, ids: layout.ids, idEntries: CHUNKS * count, rows: layout.rows, count, rowBytes: ROW}))
}

/** The record texts and count of `index.bin` when its header, size and texts are whole and it was made from `sha256`. */
async function readHeader(dir: string, sha256: Buffer): Promise<{count: number; recordTexts: string[]; layout: Layout} | undefined> {
  let handle
  try {
    handle = await open(join(dir, DATA_FILE), 'r')
  } catch {
    return undefined
  }
  try {
    const info = await handle.stat()
    const h = Buffer.alloc(PAGE)
    if (!info.isFile() || (await handle.read(h, 0, PAGE, 0)).bytesRead < PAGE) return undefined
    if (!h.subarray(0, 8).equals(MAGIC) || h.readUInt32LE(8) !== FORMAT || !h.subarray(32, 64).equals(sha256)) return undefined
    const count = h.readUInt32LE(12)
    const textBytes = h.readUInt32LE(20)
    const layout = layoutOf(count, textBytes)
    if (count === 0 || info.size !== layout.end) return undefined
    const texts = Buffer.alloc(textBytes)
    if ((await handle.read(texts, 0, textBytes, layout.texts)).bytesRead < textBytes || !headerSum(h, texts).equals(h.subarray(64, 96))) return undefined
    let recordTexts: unknown
    try {
      recordTexts = JSON.parse(texts.toString('utf8'))
    } catch {
      return undefined
    }
    if (!Array.isArray(recordTexts) || recordTexts.length !== h.readUInt32LE(16) || !recordTexts.every((t) => typeof t === 'string')) return undefined
    return {count, recordTexts, layout}
  } finally {
    await handle.close()
  }
}

const damaged = (dir: string, what: string): ModError =>
  new ModError('internal', `the hash list cache ${dir} is damaged (${what}); delete the folder and start again to rebuild it`)

interface Sessions {
  probe: ort.InferenceSession
  fetch: ort.InferenceSession
}

/** The two graphs of the cache in `dir`, with every page touched once; undefined when onnxruntime refuses them. */
async function openSessions(dir: string, count: number, layout: Layout): Promise<Sessions | undefined> {
  // One thread: a lookup is a few thousand gathers, less than handing them to a pool would cost.
  const options = sessionOptions({threads: 1, keepArena: false})
  let probe: ort.InferenceSession | undefined
  let fetch: ort.InferenceSession | undefined
  try {
    probe = await ort.InferenceSession.create(join(dir, PROBE_FILE), options)
    fetch = await ort.InferenceSession.create(join(dir, FETCH_FILE), options)
  } catch {
    await probe?.release()
    return undefined
  }
  // Every page touched once now, a few tens of milliseconds at 10 million hashes when the file is in the page
  // cache: otherwise the first few hundred lookups of each process would each wait on thousands of page faults.
  try {
    await probe.run({buckets: strided(layout.offsetEntries - 1, PAGE / 4)})
    await fetch.run({positions: strided(CHUNKS * count, PAGE / 4), direct: strided(count, Math.floor(PAGE / ROW))})
  } catch {
    await probe.release()
    await fetch.release()
    return undefined
  }
  return {probe, fetch}
}

interface Probes {
  /** Each query's probe keys, chunk by chunk. */
  probes: ReturnType<typeof probeKeys>[]
  /** The bucket of every probe key, the queries' one after another. */
  buckets: Int32Array
  /** The chunk of each bucket. */
  chunkOf: Uint8Array
}

function bucketsOf(words: Uint32Array[], threshold: number, count: number, layout: Layout): Probes {
  const probes = words.map((q) => probeKeys(q, threshold))
  const buckets = new Int32Array(probes.reduce((n, p) => n + p.keys.length, 0))
  const chunkOf = new Uint8Array(buckets.length)
  let at = 0
  for (const {keys, ends} of probes) {
    for (let c = 0; c < CHUNKS; c++) {
      const mask = (1 << bucketBits(count, c)) - 1
      for (let i = ends[c]; i < ends[c + 1]; i++, at++) {
        buckets[at] = layout.offsetBase[c] + (keys[i] & mask)
        chunkOf[at] = c
      }
    }
  }
  return {probes, buckets, chunkOf}
}

/** The entries inside the buckets' bounds, each query's after the previous one's, and where each query's end. */
function entriesOf(p: Probes, from: Int32Array, to: Int32Array, count: number, dir: string): {positions: Int32Array; queryEnds: number[]} {
  let entries = 0
  for (let i = 0; i < p.buckets.length; i++) {
    const low = p.chunkOf[i] * count
    if (!(from[i] >= low && from[i] <= to[i] && to[i] <= low + count)) throw damaged(dir, 'a bucket out of bounds')
    entries += to[i] - from[i]
  }
  const positions = new Int32Array(entries)
  const queryEnds: number[] = []
  let n = 0
  for (let k = 0, b = 0; k < p.probes.length; k++) {
    for (const end = b + p.probes[k].keys.length; b < end; b++) for (let e = from[b]; e < to[b]; e++) positions[n++] = e
    queryEnds.push(n)
  }
  return {positions, queryEnds}
}

interface Fetched {
  ids: Int32Array
  rowBytes: Uint8Array
  rowWords: Uint32Array
}

/** One query's hits among the fetched rows [start, end): a near hash is found through several chunks, kept once. */
function hitsOf(q: Uint32Array, f: Fetched, start: number, end: number, threshold: number, records: number, dir: string): ListHit[] {
  const seen = new Set<number>()
  const hits: ListHit[] = []
  for (let j = start; j < end; j++) {
    const w = j * 9
    let d = 0
    for (let i = 0; i < 8 && d <= threshold; i++) d += popcount32(f.rowWords[w + i] ^ q[i])
    if (d > threshold || seen.has(f.ids[j])) continue
    seen.add(f.ids[j])
    const record = f.rowWords[w + 8]
    if (record >= records) throw damaged(dir, 'a record out of range')
    hits.push({id: f.ids[j], distance: d, hash: f.rowBytes.slice(j * ROW, j * ROW + HASH_BYTES), record})
  }
  return hits.sort((a, b) => a.distance - b.distance || a.id - b.id)
}

/**
 * Opens the cache in `dir` when it is whole and was made from a list of this SHA-256; undefined otherwise
 * (missing, cut, of another format or list, or refused by onnxruntime), and the caller builds it anew.
 */
export async function openMapped(dir: string, sha256: Buffer): Promise<MappedIndex | undefined> {
  const head = await readHeader(dir, sha256)
  if (!head) return undefined
  const {count, recordTexts, layout} = head
  const sessions = await openSessions(dir, count, layout)
  if (!sessions) return undefined
  const none = new ort.Tensor('int32', new Int32Array(0), [0])

  const search = async (queries: Hash256[], threshold: number): Promise<ListHit[][]> => {
    checkThreshold(threshold)
    const words = queries.map(queryWords)
    // 1. The buckets of every query's probe keys, and their bounds.
    const probes = bucketsOf(words, threshold, count, layout)
    if (probes.buckets.length === 0) return queries.map(() => [])
    const bounds = await sessions.probe.run({buckets: new ort.Tensor('int32', probes.buckets, [probes.buckets.length])})
    // 2. The entries in those buckets.
    const {positions, queryEnds} = entriesOf(probes, bounds.from.data as Int32Array, bounds.to.data as Int32Array, count, dir)
    const n = positions.length
    if (n === 0) return queries.map(() => [])
    let fetched
    try {
      fetched = await sessions.fetch.run({positions: new ort.Tensor('int32', positions, [n]), direct: none}, ['id', 'row'])
    } catch {
      throw damaged(dir, 'an id out of range')
    }
    const rowBytes = fetched.row.data as Uint8Array
    // Rows are 9 words long; the output is a fresh array, so aligned (copied once if not).
    const rowWords = rowBytes.byteOffset % 4 === 0 ? new Uint32Array(rowBytes.buffer, rowBytes.byteOffset, n * 9) : new Uint32Array(Uint8Array.from(rowBytes).buffer)
    const rows: Fetched = {ids: fetched.id.data as Int32Array, rowBytes, rowWords}
    // 3. The distances, for each query.
    return words.map((q, k) => hitsOf(q, rows, k === 0 ? 0 : queryEnds[k - 1], queryEnds[k], threshold, recordTexts.length, dir))
  }

  return {
    count,
    recordTexts,
    search,
    close: async () => {
      await sessions.probe.release()
      await sessions.fetch.release()
    },
  }
}
