import {ModError} from '../../errors.js'
import {HASH_BYTES, popcount32, type Hash256} from './hash256.js'
import type {HashList} from './list-file.js'

/**
 * Multi-index hashing: each 256-bit hash is cut into 11 chunks (3 of 24 bits, 8 of 23), and each chunk
 * position has a table from chunk value to the hashes having it. By the general pigeonhole principle, two
 * hashes within distance d differ in at least one chunk i by at most r_i bits, for any radii with
 * sum r_i = d - 10 (if every chunk differed by r_i + 1 or more, the whole would differ by d + 1 or more).
 * At the usual 31: radius 2 in ten chunks and 1 in the last. A search probes, in each table, the chunk
 * values within its radius of the query's, and checks only the hashes found there: about 2900 bucket reads
 * and 2900 hash reads in a list of 10 million. Exact: it finds every hash within the threshold, as a full
 * scan would.
 *
 * The reads are random and mostly miss the CPU caches, so the search runs in phases (all probe keys, then
 * all bucket bounds, then all candidates, then all distances), each a loop of independent reads that the
 * processor overlaps instead of waiting for one miss before issuing the next.
 */
export interface MultiIndex {
  /** Per chunk: where each bucket's entries start (2^bucketBits + 1 entries). */
  offsets: Uint32Array[]
  /** Per chunk: hash ids sorted by bucket. */
  ids: Uint32Array[]
  /**
   * Per chunk: the chunk value of each entry, beside its id, when a bucket may hold several values (buckets
   * fewer than chunk values); empty when the bucket number is the whole chunk value.
   */
  values: Uint32Array[]
  /** The hashes as 8 words each, for the distance checks. */
  words: Uint32Array
}

export const CHUNKS = 11
export const LENGTHS = [24, 24, 24, 23, 23, 23, 23, 23, 23, 23, 23]
const STARTS = LENGTHS.map((_, c) => LENGTHS.slice(0, c).reduce((a, b) => a + b, 0))
/** Highest threshold accepted: radius 3 in every chunk (2325 probes of each table). */
export const MAX_THRESHOLD = 43
/** Buckets per table: about one per hash (2^bits >= count), at least 2^10, at most one per chunk value. */
const MIN_BUCKET_BITS = 10

export function bucketBits(count: number, c: number): number {
  return Math.min(LENGTHS[c], Math.max(MIN_BUCKET_BITS, Math.ceil(Math.log2(Math.max(count, 1)))))
}

/** Whether chunk c needs its values stored: only when a bucket stands for several chunk values. */
const keepsValues = (count: number, c: number): boolean => bucketBits(count, c) < LENGTHS[c]

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
export function chunkValue(words: Uint32Array, base: number, c: number): number {
  const s = STARTS[c]
  const length = LENGTHS[c]
  const w = base + (s >>> 5)
  const shift = s & 31
  let v = words[w] >>> shift
  if (shift + length > 32) v |= words[w + 1] << (32 - shift)
  return (v & ((1 << length) - 1)) >>> 0
}

/** Top bits of the bucket number by which entries are first partitioned (see buildMultiIndex). */
const PART_BITS = 8

/**
 * Builds the tables with a counting sort per chunk: linear time, no comparisons. A direct counting sort into
 * millions of buckets would make three random memory accesses per entry; the entries are first partitioned by
 * the top bits of their bucket (256 sequential output streams), so that the counting and the placing then
 * move through the buckets in order and stay within the CPU caches.
 */
export function buildMultiIndex(list: HashList): MultiIndex {
  const {count} = list
  const words = hashWords(list.hashes.subarray(0, count * HASH_BYTES))
  const offsets: Uint32Array[] = []
  const ids: Uint32Array[] = []
  const values: Uint32Array[] = []
  const chunk = new Uint32Array(count)
  const partIds = new Uint32Array(count)
  const partValues = new Uint32Array(count)
  const parts = 1 << PART_BITS
  for (let c = 0; c < CHUNKS; c++) {
    const bits = bucketBits(count, c)
    const buckets = 1 << bits
    const mask = buckets - 1
    const shift = bits - PART_BITS
    const partStart = new Uint32Array(parts + 1)
    for (let i = 0; i < count; i++) {
      const v = chunkValue(words, i * 8, c)
      chunk[i] = v
      partStart[((v & mask) >>> shift) + 1]++
    }
    for (let p = 0; p < parts; p++) partStart[p + 1] += partStart[p]
    const partNext = partStart.slice(0, parts)
    for (let i = 0; i < count; i++) {
      const v = chunk[i]
      const at = partNext[(v & mask) >>> shift]++
      partIds[at] = i
      partValues[at] = v
    }
    const start = new Uint32Array(buckets + 1)
    for (let k = 0; k < count; k++) start[(partValues[k] & mask) + 1]++
    for (let b = 0; b < buckets; b++) start[b + 1] += start[b]
    const next = start.slice(0, buckets)
    const sorted = new Uint32Array(count)
    const vals = new Uint32Array(keepsValues(count, c) ? count : 0)
    for (let k = 0; k < count; k++) {
      const v = partValues[k]
      const at = next[v & mask]++
      sorted[at] = partIds[k]
      if (vals.length > 0) vals[at] = v
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
  const values = Array.from({length: CHUNKS}, (_, c) => take(keepsValues(count, c) ? count : 0))
  return {offsets, ids, values, words}
}

/** Candidates whose hashes are fetched together before their distances are computed. */
const BLOCK = 256

/** Binomial sums: the number of values of `length` bits within `radius` (0-3) of a given one. */
function ballSize(length: number, radius: number): number {
  let n = 0
  for (let k = 0, c = 1; k <= radius; k++) {
    n += c
    c = (c * (length - k)) / (k + 1)
  }
  return n
}

/**
 * The radius of each chunk for a threshold: radii summing to threshold - 10, as even as possible, the larger
 * ones on the 24-bit chunks (their buckets hold fewer hashes, so a wider search there costs less). -1: the
 * chunk is not searched (at thresholds below 10, a few exact chunk matches settle it).
 */
function chunkRadii(threshold: number): number[] {
  const sum = threshold - (CHUNKS - 1)
  const base = Math.floor(sum / CHUNKS)
  const extra = sum - base * CHUNKS
  return LENGTHS.map((_, c) => base + (c < extra ? 1 : 0))
}

/** Writes the values within `radius` (0-3) bits of `key` (of `length` bits) into `out` from `at`; returns the end. */
function writeBall(key: number, length: number, radius: number, out: Int32Array, at: number): number {
  out[at++] = key
  for (let a = 0; a < length && radius >= 1; a++) {
    const ka = key ^ (1 << a)
    out[at++] = ka
    for (let b = a + 1; b < length && radius >= 2; b++) {
      const kb = ka ^ (1 << b)
      out[at++] = kb
      for (let c = b + 1; c < length && radius >= 3; c++) out[at++] = kb ^ (1 << c)
    }
  }
  return at
}

export interface IndexHit {
  id: number
  distance: number
}

/** `invalid_config` unless the threshold is a whole number from 0 to MAX_THRESHOLD. */
export function checkThreshold(threshold: number): void {
  if (!(Number.isInteger(threshold) && threshold >= 0 && threshold <= MAX_THRESHOLD)) {
    throw new ModError('invalid_config', `a hash distance threshold is a whole number from 0 to ${MAX_THRESHOLD}, not ${threshold}`)
  }
}

/** A query hash as 8 words (the layout of `MultiIndex.words`). */
export function queryWords(query: Hash256): Uint32Array {
  return new Uint32Array(Uint8Array.from(query.subarray(0, HASH_BYTES)).buffer)
}

/** The chunk values to probe for a query, chunk after chunk: chunk c's keys are keys[ends[c]] to keys[ends[c + 1]]. */
export function probeKeys(q: Uint32Array, threshold: number): {keys: Int32Array; ends: Int32Array} {
  const radii = chunkRadii(threshold)
  const ends = new Int32Array(CHUNKS + 1)
  let total = 0
  for (let c = 0; c < CHUNKS; c++) total += radii[c] < 0 ? 0 : ballSize(LENGTHS[c], radii[c])
  const keys = new Int32Array(total)
  for (let c = 0, at = 0; c < CHUNKS; c++) {
    if (radii[c] >= 0) at = writeBall(chunkValue(q, 0, c), LENGTHS[c], radii[c], keys, at)
    ends[c + 1] = at
  }
  return {keys, ends}
}

/** Every hash of the index within `threshold` (0 to MAX_THRESHOLD) of `query`, nearest first. */
export function searchMultiIndex(index: MultiIndex, query: Hash256, threshold: number): IndexHit[] {
  checkThreshold(threshold)
  const q = queryWords(query)
  // 1. The keys to probe, chunk after chunk (ends[c] is where chunk c's keys end).
  const {keys, ends} = probeKeys(q, threshold)
  const total = keys.length
  // 2. The bounds of every bucket probed.
  const from = new Uint32Array(total)
  const to = new Uint32Array(total)
  for (let c = 0; c < CHUNKS; c++) {
    const offsets = index.offsets[c]
    const mask = offsets.length - 2
    for (let i = ends[c], end = ends[c + 1]; i < end; i++) {
      const bucket = keys[i] & mask
      from[i] = offsets[bucket]
      to[i] = offsets[bucket + 1]
    }
  }
  let entries = 0
  for (let i = 0; i < total; i++) entries += to[i] - from[i]
  // 3. The ids in those buckets whose chunk value is the key probed.
  const candidates = new Int32Array(entries)
  let n = 0
  for (let c = 0; c < CHUNKS; c++) {
    const ids = index.ids[c]
    const values = index.values[c]
    if (values.length === 0) {
      for (let i = ends[c], end = ends[c + 1]; i < end; i++) for (let p = from[i], e = to[i]; p < e; p++) candidates[n++] = ids[p]
    } else {
      for (let i = ends[c], end = ends[c + 1]; i < end; i++) {
        const key = keys[i] >>> 0
        for (let p = from[i], e = to[i]; p < e; p++) if (values[p] === key) candidates[n++] = ids[p]
      }
    }
  }
  // 4. The candidates' hashes, a block at a time: first one word of each, a light loop whose reads overlap
  // (it brings each hash's cache line in), then the distances on lines (and page entries) still at hand.
  const {words} = index
  const [q0, q1, q2, q3, q4, q5, q6, q7] = q
  const first = new Int32Array(Math.min(n, BLOCK))
  const hits: IndexHit[] = []
  for (let start = 0; start < n; start += BLOCK) {
    const end = Math.min(n, start + BLOCK)
    for (let j = start; j < end; j++) first[j - start] = words[candidates[j] * 8] ^ q0
    for (let j = start; j < end; j++) {
      const w = candidates[j] * 8
      // Three words settle almost every candidate: an unrelated hash is some 48 bits away in 96, over the usual
      // threshold of 31, so this branch is predictable and the rest is computed only for the few near ones.
      let d = popcount32(first[j - start]) + popcount32(words[w + 1] ^ q1) + popcount32(words[w + 2] ^ q2)
      if (d > threshold) continue
      d += popcount32(words[w + 3] ^ q3) + popcount32(words[w + 4] ^ q4) + popcount32(words[w + 5] ^ q5) + popcount32(words[w + 6] ^ q6) + popcount32(words[w + 7] ^ q7)
      if (d <= threshold) hits.push({id: candidates[j], distance: d})
    }
  }
  // A near hash is found through several chunks: keep it once.
  hits.sort((a, b) => a.id - b.id)
  const unique = hits.filter((h, i) => i === 0 || h.id !== hits[i - 1].id)
  return unique.sort((a, b) => a.distance - b.distance || a.id - b.id)
}

