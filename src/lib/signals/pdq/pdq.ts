import {storedLayout, type StoredLayout} from '../../image/orientation.js'
import type {RgbImage} from '../../image/rgb.js'
import {dct64To16, DIHEDRAL, dihedralCoefficients, type Dihedral} from './dct.js'
import {HASH_BYTES, setBit, type Hash256} from './hash256.js'
import {jaroszGrid, type JaroszSource} from './jarosz.js'

/**
 * Meta's PDQ perceptual hash of decoded pixels: luminance, two Jarosz (box) blur passes sized to the image,
 * a 64x64 decimation, the 16x16 lowest DCT frequencies, and one bit per coefficient: above their median or
 * not. Identical bit for bit to the reference implementation on the same pixels, except for images with
 * almost no structure along one axis (flat, pure gradients, exact stripes), whose bits are float rounding noise.
 */
export interface PdqHash {
  hash: Hash256
  /** 0-100: how much gradient (detail) the 64x64 image has; flat or nearly flat images score low. */
  quality: number
}

export type PdqDihedral = Record<Dihedral, Hash256>

/** Smaller images have no hash (all zero bits, quality 0), as in the reference. */
const MIN_SIDE = 5
const GRID = 64

/** Sum of neighbour differences on the 64x64 grid, in percent of full scale, scaled to 0-100. */
function quality(grid: Float32Array): number {
  const f = Math.fround
  let sum = 0
  const step = (u: number, v: number): number => Math.abs(Math.trunc(f(f(f(u - v) * 100) / 255)))
  for (let i = 0; i < GRID - 1; i++) for (let j = 0; j < GRID; j++) sum += step(grid[i * GRID + j], grid[(i + 1) * GRID + j])
  for (let i = 0; i < GRID; i++) for (let j = 0; j < GRID - 1; j++) sum += step(grid[i * GRID + j], grid[i * GRID + j + 1])
  return Math.min(100, Math.floor(sum / 90))
}

/**
 * Row r of the stored image's luminance, read in place from the image decoded with its orientation applied: as
 * float32 of the double-precision weighted sum, as the reference's Python bindings compute it (and jaroszGrid
 * for rows read in order).
 */
function storedLuminanceRow(image: RgbImage, layout: StoredLayout, r: number, out: Float32Array): void {
  const {data} = image
  const {width, start, stepX, stepY} = layout
  for (let i = 0, q = start + r * stepY; i < width; i++, q += stepX) {
    const p = q * 3
    out[i] = data[p] * 0.299 + data[p + 1] * 0.587 + data[p + 2] * 0.114
  }
}

/** The 16x16 DCT coefficients and the quality of a rows x cols image, or undefined for one too small to hash. */
function coefficients(rows: number, cols: number, source: JaroszSource): {dct: Float32Array; quality: number} | undefined {
  if (rows < MIN_SIDE || cols < MIN_SIDE) return undefined
  const grid = jaroszGrid(rows, cols, GRID, source)
  return {dct: dct64To16(grid), quality: quality(grid)}
}

const imageCoefficients = (image: RgbImage) => coefficients(image.height, image.width, {rgb: image.data})

/** The (lower) median: the 128th smallest of the 256 values. */
function median(values: Float32Array): number {
  return Float32Array.from(values).sort()[127]
}

function bits(dct: Float32Array): Hash256 {
  const m = median(dct)
  const hash = new Uint8Array(HASH_BYTES)
  for (let k = 0; k < 256; k++) if (dct[k] > m) setBit(hash, k)
  return hash
}

export function pdqHash(image: RgbImage): PdqHash {
  const c = imageCoefficients(image)
  if (!c) return {hash: new Uint8Array(HASH_BYTES), quality: 0}
  return {hash: bits(c.dct), quality: c.quality}
}

/** The hashes of the image's eight rotations and mirrors, from one pass over its pixels. */
export function pdqDihedralHashes(image: RgbImage): {hashes: PdqDihedral; quality: number} {
  const c = imageCoefficients(image)
  const entries = DIHEDRAL.map((d) => [d, c ? bits(dihedralCoefficients(c.dct, d)) : new Uint8Array(HASH_BYTES)] as const)
  return {hashes: Object.fromEntries(entries) as PdqDihedral, quality: c?.quality ?? 0}
}

/**
 * The hash of the stored pixels of an image decoded with an EXIF orientation applied (the hash Meta's tools
 * give the file, as they do not apply the orientation), or undefined for an image decoded without one. A
 * dihedral variant of the displayed image's hash is no substitute: its 64x64 samples fall on other pixels,
 * up to 102 bits apart on a fine regular texture.
 */
export function pdqStoredHash(image: RgbImage): PdqHash | undefined {
  const layout = storedLayout(image)
  if (!layout) return undefined
  const c = coefficients(layout.height, layout.width, (r, out) => storedLuminanceRow(image, layout, r, out))
  if (!c) return {hash: new Uint8Array(HASH_BYTES), quality: 0}
  return {hash: bits(c.dct), quality: c.quality}
}
