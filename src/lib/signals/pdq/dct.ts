/**
 * The DCT step of PDQ: the 64x64 blurred and decimated luminance to the 16x16 lowest frequencies (DC
 * excluded), and the dihedral transforms, which turn those coefficients into the ones of the rotated or
 * mirrored image without hashing it again. Float32 arithmetic in the reference's order.
 */

const f = Math.fround

/** Rows: frequencies 1..16; columns: the 64 samples. Float32 values of sqrt(2/64) cos(pi/128 (i+1)(2j+1)). */
const DCT_16x64 = (() => {
  const scale = Math.sqrt(2 / 64)
  const m = new Float32Array(16 * 64)
  for (let i = 0; i < 16; i++) {
    for (let j = 0; j < 64; j++) m[i * 64 + j] = scale * Math.cos((Math.PI / 2 / 64) * (i + 1) * (2 * j + 1))
  }
  return m
})()

/** B = D A Dt, with A 64x64 and B 16x16, both row-major. */
export function dct64To16(a: Float32Array): Float32Array {
  const t = new Float32Array(16 * 64)
  for (let i = 0; i < 16; i++) {
    for (let j = 0; j < 64; j++) {
      let sum = 0
      for (let k = 0; k < 64; k++) sum = f(sum + f(DCT_16x64[i * 64 + k] * a[k * 64 + j]))
      t[i * 64 + j] = sum
    }
  }
  const b = new Float32Array(16 * 16)
  for (let i = 0; i < 16; i++) {
    for (let j = 0; j < 16; j++) {
      let sum = 0
      for (let k = 0; k < 64; k++) sum = f(sum + f(t[i * 64 + k] * DCT_16x64[j * 64 + k]))
      b[i * 16 + j] = sum
    }
  }
  return b
}

/** The eight images of the dihedral group, in the order the reference reports them. */
export const DIHEDRAL = ['original', 'rotate90', 'rotate180', 'rotate270', 'flipX', 'flipY', 'flipPlus1', 'flipMinus1'] as const

export type Dihedral = (typeof DIHEDRAL)[number]

const odd = (n: number): boolean => (n & 1) === 1

/**
 * Coefficient (i, j) of a transformed image, from those of the original. Frequencies are i+1 and j+1, so
 * mirroring an axis negates the coefficients of even i (odd frequency) on it; a quarter turn also transposes.
 */
export function dihedralCoefficients(b: Float32Array, d: Dihedral): Float32Array {
  const out = new Float32Array(256)
  for (let i = 0; i < 16; i++) {
    for (let j = 0; j < 16; j++) {
      const v = b[i * 16 + j]
      switch (d) {
        case 'original':
          out[i * 16 + j] = v
          break
        case 'rotate90':
          out[j * 16 + i] = odd(j) ? v : -v
          break
        case 'rotate180':
          out[i * 16 + j] = odd(i + j) ? -v : v
          break
        case 'rotate270':
          out[j * 16 + i] = odd(i) ? v : -v
          break
        case 'flipX':
          out[i * 16 + j] = odd(i) ? v : -v
          break
        case 'flipY':
          out[i * 16 + j] = odd(j) ? v : -v
          break
        case 'flipPlus1':
          out[j * 16 + i] = v
          break
        case 'flipMinus1':
          out[j * 16 + i] = odd(i + j) ? -v : v
          break
      }
    }
  }
  return out
}
