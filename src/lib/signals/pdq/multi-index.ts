import {HASH_BYTES, popcount32, type Hash256} from './hash256.js'
import type {HashList} from './list-file.js'

/**
 * Multi-index hashing: each 256-bit hash is cut into 16 chunks of 16 bits, and each chunk position has a
 * table from chunk value to the hashes having it. Two hashes within distance d differ, by the pigeonhole
 * principle, by at most floor(d / 16) bits in at least one chunk; so a search probes, in each table, the
 * chunk values within that radius of the query's, and checks only the hashes found there. Exact: it finds
 * every hash within the threshold, as a full scan would, without scanning.
 */
export interface MultiIndex {
  /** Per chunk: where the ids of each chunk value start in `ids` (65537 entries). */
  offsets: Uint32Array[]
  /** Per chunk: hash ids sorted by that chunk's value. */
  ids: Uint32Array[]
  /** The hashes as 8 words each, for the distance checks. */
  words: Uint32Array
}

export const CHUNKS = 16
/** Values of a 16-bit chunk. */
export const CHUNK_KEYS = 1 << 16
/** Highest threshold accepted: radius 3 per chunk (697 probes of each table). */
export const MAX_THRESHOLD = 63

/** A view of the hashes as `T` without copying when the bytes are aligned for it (they are, as we allocate them). */
function view<T>(bytes: Uint8Array, make: (buffer: ArrayBufferLike, offset: number, length: number) => T, size: number): T {
  if (bytes.byteOffset % size === 0) return make(bytes.buffer, bytes.byteOffset, bytes.length / size)
  const copy = Uint8Array.from(bytes)
  return make(copy.buffer, 0, copy.length / size)
}

/**
 * Builds the tables with a counting sort per chunk: linear time, no comparisons. Chunk c is the 16-bit word c
 * of the hash in memory order (any fixed split of the bits works, as long as queries use the same).
 */
export function buildMultiIndex(list: HashList): MultiIndex {
  const {count} = list
  const hashes = list.hashes.subarray(0, count * HASH_BYTES)
  const chunks = view(hashes, (b, o, n) => new Uint16Array(b, o, n), 2)
  const offsets: Uint32Array[] = []
  const ids: Uint32Array[] = []
  for (let c = 0; c < CHUNKS; c++) {
    const start = new Uint32Array(CHUNK_KEYS + 1)
    for (let i = 0, at = c; i < count; i++, at += CHUNKS) start[chunks[at] + 1]++
    for (let k = 0; k < CHUNK_KEYS; k++) start[k + 1] += start[k]
    const next = start.slice(0, CHUNK_KEYS)
    const sorted = new Uint32Array(count)
    for (let i = 0, at = c; i < count; i++, at += CHUNKS) sorted[next[chunks[at]]++] = i
    offsets.push(start)
    ids.push(sorted)
  }
  return {offsets, ids, words: hashWords(hashes)}
}

/** The hashes as 8 32-bit words each (a view when aligned). */
export function hashWords(hashes: Uint8Array): Uint32Array {
  return view(hashes, (b, o, n) => new Uint32Array(b, o, n), 4)
}

/** The 16-bit values within `radius` bits of `key`, key itself first. */
function neighbours(key: number, radius: number): number[] {
  const out = [key]
  for (let a = 0; a < 16 && radius >= 1; a++) {
    out.push(key ^ (1 << a))
    for (let b = a + 1; b < 16 && radius >= 2; b++) {
      out.push(key ^ (1 << a) ^ (1 << b))
      for (let c = b + 1; c < 16 && radius >= 3; c++) out.push(key ^ (1 << a) ^ (1 << b) ^ (1 << c))
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
  const copy = Uint8Array.from(query)
  const q = new Uint32Array(copy.buffer)
  const qChunks = new Uint16Array(copy.buffer)
  const radius = Math.floor(threshold / CHUNKS)
  const hits: IndexHit[] = []
  const {words} = index
  for (let c = 0; c < CHUNKS; c++) {
    const offsets = index.offsets[c]
    const ids = index.ids[c]
    for (const key of neighbours(qChunks[c], radius)) {
      for (let p = offsets[key], end = offsets[key + 1]; p < end; p++) {
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
