import {ModError} from '../../errors.js'

/**
 * A 256-bit PDQ hash as 32 bytes in the order of its 64-character hex form (the first byte is the first two
 * characters). Bit k of the reference's numbering (row k >> 4, column k & 15 of the 16x16 coefficients) is
 * bit (k & 7) of byte 31 - (k >> 3).
 */
export type Hash256 = Uint8Array

export const HASH_BYTES = 32

const HEX = /^[0-9a-fA-F]{64}$/

function isHashHex(text: string): boolean {
  return HEX.test(text)
}

/** Throws `bad_request` for anything but 64 hex digits. */
export function hashFromHex(text: string): Hash256 {
  if (!isHashHex(text)) throw new ModError('bad_request', `a PDQ hash is 64 hexadecimal digits, not ${JSON.stringify(text.slice(0, 80))}`)
  return Uint8Array.from(Buffer.from(text, 'hex'))
}

export function hashToHex(hash: Hash256): string {
  return Buffer.from(hash.buffer, hash.byteOffset, HASH_BYTES).toString('hex')
}

export function setBit(hash: Hash256, k: number): void {
  hash[31 - (k >> 3)] |= 1 << (k & 7)
}

/** Set bits of a 32-bit integer (Math.imul keeps the last step in integers: a plain * would go through doubles). */
export function popcount32(x: number): number {
  x -= (x >>> 1) & 0x55555555
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333)
  return Math.imul((x + (x >>> 4)) & 0x0f0f0f0f, 0x01010101) >>> 24
}

/** Hamming distance of two hashes. */
export function hammingDistance(a: Hash256, b: Hash256): number {
  let d = 0
  for (let i = 0; i < HASH_BYTES; i++) d += popcount32(a[i] ^ b[i])
  return d
}
