/**
 * An enlargement of 8-bit RGB pixels equal, bit for bit, to the one libvips' resize makes (sharp's `resize` of an
 * image smaller than the target on a side), at a fraction of its cost. libvips enlarges through its general
 * affine transform: the bicubic (Catmull-Rom) interpolator at every output pixel, in 12-bit fixed point, about
 * 4.5 ms for a 448-pixel square, while the same arithmetic as two separable passes of enlarge.wat (WebAssembly,
 * four values per instruction) takes a fraction of a millisecond. What libvips computes, measured against it on
 * random images of random sizes (test/lib/image/enlarge.test.ts):
 * - output pixel x of an axis scaled by s = output / input samples input position x / s - 0.5 in libvips' resize,
 *   an axis left at its size included (it gets the half-pixel shift too), and (x + 0.5) / s - 0.5 (pixel centres,
 *   as Pillow places them) in its affine transform given half-pixel offsets, with the edge pixels repeated beyond
 *   the image;
 * - the position's fraction is rounded to 1/64 and picks one of 65 sets of coefficients, each the Catmull-Rom
 *   weight times 4096 truncated to an integer;
 * - along the rows first, then down the columns, each sum rounded to the nearest integer (half up), and the last
 *   clamped to 0-255.
 * A position exactly half-way between two of the 65 steps is rounded by the last bit of libvips' floating-point
 * arithmetic, whose order this does not reproduce: enlarge hands such a size back, for the caller to leave to
 * libvips.
 */
import {ENLARGE_WASM} from './enlarge-wasm.js'
import type {RgbImage} from './rgb.js'
import {crop, type Box} from './trim.js'

interface Kernels {
  memory: WebAssembly.Memory
  horizontal(src: number, srcStride: number, rows: number, mid: number, midStride: number, table: number, n: number): void
  vertical(out: number, count: number, table: number, n: number): void
}

/** Fraction steps of the interpolator's table (libvips' VIPS_TRANSFORM_SCALE) and its fixed-point scale. */
const STEPS = 64
const ONE = 4096

/** Catmull-Rom weights of the four pixels around a position `x` past the second of them, as libvips computes them. */
function catmullRom(x: number): number[] {
  const dx = 1 - x
  const x2 = dx * x
  const mx2 = -0.5 * x2
  const c1 = x2 * (-1.5 * x + 1) + dx
  return [mx2 * dx, c1, 1 - (mx2 + c1), mx2 * x]
}

const WEIGHTS = Array.from({length: STEPS + 1}, (_, i) => catmullRom(i / STEPS).map((w) => Math.trunc(w * ONE)))

/** Bytes of a table entry: four offsets and four coefficients, int32. */
const ENTRY = 32
/** Bytes a pass may read or write past its last row. */
const SLACK = 64

/**
 * How close to a half step of the weights' table a position must come to be one. A position is a ratio of small
 * integers: one that lies on a half step lies on it exactly, and any other is far further from one than this.
 */
const HALF_STEP_TOLERANCE = 1e-7

/**
 * The table of one axis enlarged from `from` to `to` pixels: per output pixel, the byte offsets (`unit` bytes a
 * source pixel, from `base`) of the four it reads, then their coefficients. Undefined when a position lies exactly
 * half-way between two of the table's steps: libvips' floating-point arithmetic then picks one side by its last
 * bit, in an order of operations that differs from this one (some scales between multiples of 32, rare for other
 * sizes).
 */
function axisTable(from: number, to: number, scale: number, sampling: Sampling, unit: number, base: number): Int32Array | undefined {
  const table = new Int32Array(to * (ENTRY / 4))
  const origin = sampling === 'centres' ? 0.5 : 0
  for (let x = 0; x < to; x++) {
    // libvips works one pixel inside its window (the interpolator's border), where positions are positive.
    const at = (x + origin) / scale - 0.5 + 1
    const halfSteps = at * STEPS * 2
    const nearest = Math.round(halfSteps)
    if (nearest % 2 === 1 && Math.abs(halfSteps - nearest) < HALF_STEP_TOLERANCE) return undefined
    const step = ((Math.trunc(halfSteps) & (STEPS * 2 - 1)) + 1) >> 1
    const first = Math.trunc(at) - 2
    for (let k = 0; k < 4; k++) {
      table[x * 8 + k] = base + unit * Math.min(from - 1, Math.max(0, first + k))
      table[x * 8 + 4 + k] = WEIGHTS[step][k]
    }
  }
  return table
}

/**
 * Compiled once per process (and worker thread), on the first enlargement (under a kilobyte). Its memory grows to
 * the largest enlargement's tables, source, intermediate rows and result, and stays: about 3 MiB for a 448-pixel
 * square or the text detector's 736 x 544, 4 MiB for CLIP's 224 x 4 480 (a sliver at the 20 : 1 aspect bound).
 */
let kernels: Kernels | undefined

function enlargeKernels(): Kernels {
  kernels ??= new WebAssembly.Instance(new WebAssembly.Module(ENLARGE_WASM)).exports as unknown as Kernels
  return kernels
}

const align = (n: number) => Math.ceil(n / 16) * 16

/** Where output pixels sample the input: as libvips' resize places them, or at pixel centres (see above). */
export type Sampling = 'resize' | 'centres'

export interface EnlargeOptions {
  /** The part of the image to enlarge; default: all of it. */
  window?: Box
  /**
   * Each side's factor as libvips is given it. Default: what sharp's resize gives it for these sizes, the inverse
   * of input / output (`resize` sampling), or output / input, the transform's matrix (`centres`). The two differ in
   * the last bit for some sizes, and so can a pixel's weights. sharp's `contain` fit gives both sides one factor,
   * and a side's size is rounded from it.
   */
  scale?: {x: number; y: number}
  /** Default: `resize`. */
  sampling?: Sampling
}

/**
 * The window of `img` resized to `width` x `height`, neither smaller than the window's side, with libvips'
 * bicubic interpolator; the window itself when it has that size already. Undefined where a sample falls exactly
 * half-way between two of the interpolator's steps (axisTable), which the caller leaves to libvips.
 */
export function enlarge(img: RgbImage, width: number, height: number, o: EnlargeOptions = {}): RgbImage | undefined {
  const window = o.window ?? {left: 0, top: 0, width: img.width, height: img.height}
  const sampling = o.sampling ?? 'resize'
  const ratio = (from: number, to: number) => (sampling === 'resize' ? 1 / (from / to) : to / from)
  const scale = o.scale ?? {x: ratio(window.width, width), y: ratio(window.height, height)}
  const {width: w, height: h} = window
  if (width < w || height < h) throw new RangeError(`enlarge: ${w}x${h} to ${width}x${height} is not an enlargement`)
  if (width === w && height === h) return crop(img, window)
  const tableX = 0
  const tableY = align(tableX + width * ENTRY)
  const src = align(tableY + height * ENTRY)
  const mid = align(src + w * h * 3 + SLACK)
  const out = align(mid + h * width * 6 + SLACK)
  const columns = axisTable(w, width, scale.x, sampling, 3, 0)
  const rows = axisTable(h, height, scale.y, sampling, width * 6, mid)
  if (!columns || !rows) return undefined
  const k = enlargeKernels()
  const missing = out + width * height * 3 + SLACK - k.memory.buffer.byteLength
  if (missing > 0) k.memory.grow(Math.ceil(missing / 65_536))
  const memory = new Uint8Array(k.memory.buffer)
  new Int32Array(k.memory.buffer, tableX, width * 8).set(columns)
  new Int32Array(k.memory.buffer, tableY, height * 8).set(rows)
  memory.set(crop(img, window).data, src)
  k.horizontal(src, w * 3, h, mid, width * 6, tableX, width)
  k.vertical(out, width * 3, tableY, height)
  return {data: Buffer.from(memory.subarray(out, out + width * height * 3)), width, height}
}
