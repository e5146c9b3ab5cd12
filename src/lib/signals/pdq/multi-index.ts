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
const KEYS = 1 << 16
/** Highest threshold accepted: radius 3 per chunk (697 probes of each table). */
export const MAX_THRESHOLD = 63

function chunk(hashes: Uint8Array, base: number, c: number): number {
  return (hashes[base + 2 * c] << 8) | hashes[base + 2 * c + 1]
}

/** Builds the tables with a counting sort per chunk: linear time, no comparisons. */
export function buildMultiIndex(list: HashList): MultiIndex {
  const {count, hashes} = list
  const offsets: Uint32Array[] = []
  const ids: Uint32Array[] = []
  for (let c = 0; c < CHUNKS; c++) {
    const start = new Uint32Array(KEYS + 1)
    for (let i = 0, base = 0; i < count; i++, base += HASH_BYTES) start[chunk(hashes, base, c) + 1]++
    for (let k = 0; k < KEYS; k++) start[k + 1] += start[k]
    const next = start.slice(0, KEYS)
    const sorted = new Uint32Array(count)
    for (let i = 0, base = 0; i < count; i++, base += HASH_BYTES) sorted[next[chunk(hashes, base, c)]++] = i
    offsets.push(start)
    ids.push(sorted)
  }
  const words = new Uint32Array(hashes.buffer.slice(hashes.byteOffset, hashes.byteOffset + count * HASH_BYTES))
  return {offsets, ids, words}
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
  const q = new Uint32Array(Uint8Array.from(query).buffer)
  const radius = Math.floor(threshold / CHUNKS)
  const hits: IndexHit[] = []
  const {words} = index
  for (let c = 0; c < CHUNKS; c++) {
    const offsets = index.offsets[c]
    const ids = index.ids[c]
    for (const key of neighbours(chunk(query, 0, c), radius)) {
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
