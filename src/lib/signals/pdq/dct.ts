/**
 * The DCT step of PDQ: the 64x64 blurred and decimated luminance to the 16x16 lowest frequencies (DC
 * excluded), and the dihedral transforms, which turn those coefficients into the ones of the rotated or
 * mirrored image without hashing it again. Float32 arithmetic in the reference's order.
 */
import {DCT_MATRIX, DCT_TRANSPOSED, kernelMemory, pdqKernels, SCRATCH} from './kernels.js'

/** B = D A Dt, with A 64x64 and B 16x16, both row-major (D: the matrix in kernels.ts), computed in WebAssembly. */
export function dct64To16(a: Float32Array): Float32Array {
  const k = pdqKernels()
  const input = SCRATCH
  const products = input + 64 * 64 * 4
  const output = products + 16 * 64 * 4
  const buffer = kernelMemory(k, output + 16 * 16 * 4)
  new Float32Array(buffer, input, 64 * 64).set(a)
  k.dct(DCT_MATRIX, DCT_TRANSPOSED, input, products, output)
  return new Float32Array(buffer.slice(output, output + 16 * 16 * 4))
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
