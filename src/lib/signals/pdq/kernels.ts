import {KERNELS_WASM} from './kernels-wasm.js'

/** The exports of kernels.wat; every address is a byte offset into `memory`. */
export interface Kernels {
  memory: WebAssembly.Memory
  luminance(weights: number, rgb: number, out: number, cols: number, n: number, stride: number): void
  boxLine(input: number, output: number, p1: number, p2: number, p3: number, p4: number): void
  boxLines(a: number, b: number, c: number, d: number, oa: number, ob: number, oc: number, od: number, p1: number, p2: number, p3: number, p4: number): void
  columnStep(sums: number, add: number, sub: number, out: number, vectors: number, count: number): void
  dct(d: number, dt: number, a: number, t: number, b: number): void
}

/** Luminance weights of red, green and blue (ITU-R BT.601), as the reference's Python bindings use them. */
const WEIGHTS = [0.299, 0.587, 0.114]

/** Where the luminance tables start: after 16 bytes kept free, as columnStep reads address 0 as "no row". */
export const LUMA_TABLES = 16

/** The DCT matrix (16 rows of 64 float32) and its transpose, after the 3 x 256 doubles of the luminance tables. */
export const DCT_MATRIX = LUMA_TABLES + WEIGHTS.length * 256 * 8
export const DCT_TRANSPOSED = DCT_MATRIX + 16 * 64 * 4

/** The first byte free for each computation's own scratch (one at a time: hashing is synchronous). */
export const SCRATCH = DCT_TRANSPOSED + 16 * 64 * 4

/** Rows: frequencies 1..16; columns: the 64 samples. Float32 values of sqrt(2/64) cos(pi/128 (i+1)(2j+1)). */
function dctMatrix(): Float32Array {
  const scale = Math.sqrt(2 / 64)
  const m = new Float32Array(16 * 64)
  for (let i = 0; i < 16; i++) {
    for (let j = 0; j < 64; j++) m[i * 64 + j] = scale * Math.cos((Math.PI / 2 / 64) * (i + 1) * (2 * j + 1))
  }
  return m
}

/**
 * Compiled once per process, on the first hash (a few kilobytes), with its constant tables. Its memory grows
 * to the largest image's scratch and stays there: a few rows of floats and 64 floats a row, about 18 MiB at
 * most (an image 65 535 pixels tall), under 1 MiB for a photo.
 */
let kernels: Kernels | undefined

export function pdqKernels(): Kernels {
  if (!kernels) {
    kernels = new WebAssembly.Instance(new WebAssembly.Module(KERNELS_WASM)).exports as unknown as Kernels
    const {buffer} = kernels.memory
    const luma = new Float64Array(buffer, LUMA_TABLES, WEIGHTS.length * 256)
    WEIGHTS.forEach((w, c) => {
      for (let v = 0; v < 256; v++) luma[c * 256 + v] = v * w
    })
    const d = dctMatrix()
    new Float32Array(buffer, DCT_MATRIX, 16 * 64).set(d)
    const dt = new Float32Array(buffer, DCT_TRANSPOSED, 64 * 16)
    for (let i = 0; i < 16; i++) for (let k = 0; k < 64; k++) dt[k * 16 + i] = d[i * 64 + k]
  }
  return kernels
}

/** The kernels' memory, grown when needed to hold `bytes` from address 0. */
export function kernelMemory(k: Kernels, bytes: number): ArrayBuffer {
  const missing = bytes - k.memory.buffer.byteLength
  if (missing > 0) k.memory.grow(Math.ceil(missing / 65536))
  return k.memory.buffer
}
