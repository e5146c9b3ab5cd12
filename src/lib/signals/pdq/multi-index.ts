import {ModError} from '../../errors.js'
import {HASH_BYTES, popcount32, type Hash256} from './hash256.js'
import type {HashList} from './list-file.js'

/**
 * Multi-index hashing: each 256-bit hash is cut into 11 chunks (3 of 24 bits, 8 of 23), and each chunk
 * position has a table from chunk value to the hashes having it. Two hashes within distance d differ, by the
 * pigeonhole principle, by at most floor(d / 11) bits in at least one chunk: at the usual 31, by at most 2.
 * A search probes, in each table, the chunk values within that radius of the query's (277 or 301 values) and
 * checks only the hashes found there: about 4000 random reads in a list of 10 million, against 40000 with 16
 * chunks of 16 bits at radius 1. Exact: it finds every hash within the threshold, as a full scan would.
 */
export interface MultiIndex {
  /** Per chunk: where each bucket's entries start (2^bucketBits + 1 entries). */
  offsets: Uint32Array[]
  /** Per chunk: hash ids sorted by bucket. */
  ids: Uint32Array[]
  /** Per chunk: the chunk value of each entry, beside its id (a bucket holds several values in a small list). */
  values: Uint32Array[]
  /** The hashes as 8 words each, for the distance checks. */
  words: Uint32Array
}

export const CHUNKS = 11
const LENGTHS = [24, 24, 24, 23, 23, 23, 23, 23, 23, 23, 23]
const STARTS = LENGTHS.map((_, c) => LENGTHS.slice(0, c).reduce((a, b) => a + b, 0))
/** Highest threshold accepted: radius 3 per chunk (2325 probes of each table). */
export const MAX_THRESHOLD = 43
/** Buckets per table: about one per hash (2^bits >= count), at least 2^10, at most one per chunk value. */
const MIN_BUCKET_BITS = 10

export function bucketBits(count: number, c: number): number {
  return Math.min(LENGTHS[c], Math.max(MIN_BUCKET_BITS, Math.ceil(Math.log2(Math.max(count, 1)))))
}

/** A view of the bytes as `T` without copying when they are aligned for it (they are, as we allocate them). */
function view<T>(bytes: Uint8Array, make: (buffer: ArrayBufferLike, offset: number, length: number) => T, size: number): T {
  if (bytes.byteOffset % size === 0) return make(bytes.buffer, bytes.byteOffset, bytes.length / size)
  const copy = Uint8Array.from(bytes)
  return make(copy.buffer, 0, copy.length / size)
}

/** The hashes as 8 32-bit words each (a view when aligned). */
export function hashWords(hashes: Uint8Array): Uint32Array {
  return view(hashes, (b, o, n) => new Uint32Array(b, o, n), 4)
}

/** Bits [start, start + length) of the hash at `base` in `words` (bit k is bit k & 31 of word k >> 5). */
function chunkValue(words: Uint32Array, base: number, c: number): number {
  const s = STARTS[c]
  const length = LENGTHS[c]
  const w = base + (s >>> 5)
  const shift = s & 31
  let v = words[w] >>> shift
  if (shift + length > 32) v |= words[w + 1] << (32 - shift)
  return (v & ((1 << length) - 1)) >>> 0
}

/** Builds the tables with a counting sort per chunk: linear time, no comparisons. */
export function buildMultiIndex(list: HashList): MultiIndex {
  const {count} = list
  const words = hashWords(list.hashes.subarray(0, count * HASH_BYTES))
  const offsets: Uint32Array[] = []
  const ids: Uint32Array[] = []
  const values: Uint32Array[] = []
  const chunk = new Uint32Array(count)
  for (let c = 0; c < CHUNKS; c++) {
    const buckets = 1 << bucketBits(count, c)
    const mask = buckets - 1
    for (let i = 0; i < count; i++) chunk[i] = chunkValue(words, i * 8, c)
    const start = new Uint32Array(buckets + 1)
    for (let i = 0; i < count; i++) start[(chunk[i] & mask) + 1]++
    for (let k = 0; k < buckets; k++) start[k + 1] += start[k]
    const next = start.slice(0, buckets)
    const sorted = new Uint32Array(count)
    const vals = new Uint32Array(count)
    for (let i = 0; i < count; i++) {
      const at = next[chunk[i] & mask]++
      sorted[at] = i
      vals[at] = chunk[i]
    }
    offsets.push(start)
    ids.push(sorted)
    values.push(vals)
  }
  return {offsets, ids, values, words}
}

/** The arrays of an index in the order the cache stores them (after the hashes). */
export function indexArrays(index: MultiIndex): Uint32Array[] {
  return [...index.offsets, ...index.ids, ...index.values]
}

/** Rebuilds an index from its arrays, taking each with `take(length)` in the order indexArrays gives them. */
export function indexFromArrays(count: number, words: Uint32Array, take: (length: number) => Uint32Array): MultiIndex {
  const offsets = Array.from({length: CHUNKS}, (_, c) => take((1 << bucketBits(count, c)) + 1))
  const ids = Array.from({length: CHUNKS}, () => take(count))
  const values = Array.from({length: CHUNKS}, () => take(count))
  return {offsets, ids, values, words}
}

/** The values of `length` bits within `radius` bits of `key`, key itself first. */
function neighbours(key: number, length: number, radius: number): number[] {
  const out = [key]
  for (let a = 0; a < length && radius >= 1; a++) {
    out.push((key ^ (1 << a)) >>> 0)
    for (let b = a + 1; b < length && radius >= 2; b++) {
      out.push((key ^ (1 << a) ^ (1 << b)) >>> 0)
      for (let c = b + 1; c < length && radius >= 3; c++) out.push((key ^ (1 << a) ^ (1 << b) ^ (1 << c)) >>> 0)
    }
  }
  return out
}

export interface IndexHit {
  id: number
  distance: number
}

/** Every hash of the index within `threshold` (0 to MAX_THRESHOLD) of `query`, nearest first. */
export function searchMultiIndex(index: MultiIndex, query: Hash256, threshold: number): IndexHit[] {
  if (!(Number.isInteger(threshold) && threshold >= 0 && threshold <= MAX_THRESHOLD)) {
    throw new ModError('invalid_config', `a hash distance threshold is a whole number from 0 to ${MAX_THRESHOLD}, not ${threshold}`)
  }
  const q = new Uint32Array(Uint8Array.from(query).buffer)
  const radius = Math.floor(threshold / CHUNKS)
  const hits: IndexHit[] = []
  const {words} = index
  for (let c = 0; c < CHUNKS; c++) {
    const offsets = index.offsets[c]
    const ids = index.ids[c]
    const values = index.values[c]
    const mask = offsets.length - 2
    for (const key of neighbours(chunkValue(q, 0, c), LENGTHS[c], radius)) {
      const bucket = key & mask
      for (let p = offsets[bucket], end = offsets[bucket + 1]; p < end; p++) {
        if (values[p] !== key) continue
        const id = ids[p]
        const w = id * 8
        let d = 0
        for (let k = 0; k < 8 && d <= threshold; k++) d += popcount32(words[w + k] ^ q[k])
        if (d <= threshold && !hits.some((h) => h.id === id)) hits.push({id, distance: d})
      }
    }
  }
  return hits.sort((a, b) => a.distance - b.distance || a.id - b.id)
}
