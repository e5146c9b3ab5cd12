// Made-up PDQ hashes for the hash-list tests and bench/pdq.ts: random ones, and near copies at a chosen distance.
import type {Hash256} from '../../src/lib/signals/pdq/hash256.js'

export function randomHash(next: () => number): Hash256 {
  return Uint8Array.from({length: 32}, () => Math.floor(next() * 256))
}

/** `hash` with `bits` distinct bits flipped. */
export function flip(hash: Hash256, bits: number, next: () => number): Hash256 {
  const out = Uint8Array.from(hash)
  const chosen = new Set<number>()
  while (chosen.size < bits) chosen.add(Math.floor(next() * 256))
  for (const k of chosen) out[k >> 3] ^= 1 << (k & 7)
  return out
}
