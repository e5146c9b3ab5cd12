/**
 * Input of the embedded NSFW specialists, computed as nsfwjs computes it: 8-bit RGB divided by 255 (float32),
 * then `tf.image.resizeBilinear(x, [side, side], alignCorners = true)` to a [side, side, 3] channels-last
 * tensor, where the side is the model's (224 for MobileNetV2, the default; 299 for InceptionV3). The arithmetic
 * follows TensorFlow.js's CPU kernel step by step (source positions and weights in float64, each value rounded
 * to float32 once), so the tensor equals the one nsfwjs feeds its model on the same pixels.
 */
import {NSFW_SIZE} from './manifest.js'
import type {RgbImage} from '../../image/rgb.js'

/** Floats of one preprocessed view with the given side: side x side x 3. */
export function nsfwViewSize(side: number): number {
  return side * side * 3
}

/** Floats of one preprocessed view of the default model: 224 x 224 x 3. */
export const NSFW_VIEW_SIZE = nsfwViewSize(NSFW_SIZE)

export interface NsfwPreprocessOptions {
  /** Side of the square view in pixels, the model's input side; default NSFW_SIZE (224). */
  side?: number
  /** Where to write (so a batch tensor is filled in place); default: a new array of the right size. */
  out?: Float32Array
  /** Float index in `out` of the first value. */
  offset?: number
  /**
   * Also write the horizontally mirrored view right after the first one (two views' floats in all).
   * It is the first view with its columns reversed, which is what resizing the mirrored image gives.
   */
  flip?: boolean
  /**
   * The part of the image to resample, in source pixels; default: the whole image. It may reach past the image
   * (a letterboxed view): positions outside it read black, as if the image were padded with zeros.
   */
  window?: NsfwWindow
}

/** A rectangle in source pixels, whole numbers; left and top may be negative. */
export interface NsfwWindow {
  left: number
  top: number
  width: number
  height: number
}

/** Marks a source index outside the image: it reads as black. */
const OUTSIDE = -1

/** v / 255 rounded to float32, as tf's `div` on a float32 tensor stores it. */
const UNIT = Float32Array.from({length: 256}, (_, v) => v / 255)

interface Axis {
  /** Source index below and above each output position (OUTSIDE past the image), and the weight of the upper one. */
  lo: Int32Array
  hi: Int32Array
  frac: Float64Array
}

/**
 * Align-corners sampling positions along one axis (newSize > 1): output i reads window position
 * i · (size - 1) / (new - 1), which is source index start + that position; `extent` is the image's size.
 */
function axis(start: number, size: number, extent: number, newSize: number): Axis {
  const ratio = (size - 1) / (newSize - 1)
  const lo = new Int32Array(newSize)
  const hi = new Int32Array(newSize)
  const frac = new Float64Array(newSize)
  const inside = (i: number) => (i >= 0 && i < extent ? i : OUTSIDE)
  for (let i = 0; i < newSize; i++) {
    const source = ratio * i
    const below = Math.max(0, Math.floor(source))
    lo[i] = inside(start + below)
    hi[i] = inside(start + Math.min(size - 1, Math.ceil(source)))
    frac[i] = source - below
  }
  return {lo, hi, frac}
}

/** Writes the specialist's input for one decoded image (one view, or two with `flip`) and returns `out`. */
export function nsfwPreprocess(img: RgbImage, options: NsfwPreprocessOptions = {}): Float32Array {
  const side = options.side ?? NSFW_SIZE
  if (!Number.isInteger(side) || side < 2) throw new RangeError(`nsfwPreprocess: a view of side ${side}`)
  const viewSize = nsfwViewSize(side)
  const views = options.flip ? 2 : 1
  const offset = options.offset ?? 0
  const out = options.out ?? new Float32Array(views * viewSize)
  if (offset < 0 || offset + views * viewSize > out.length) {
    throw new RangeError(`nsfwPreprocess: ${views * viewSize} floats at offset ${offset} do not fit in ${out.length}`)
  }
  const {data, width, height} = img
  if (data.length < width * height * 3 || width < 1 || height < 1) {
    throw new RangeError(`nsfwPreprocess: ${data.length} bytes for a ${width}x${height} RGB image`)
  }
  const window = options.window ?? {left: 0, top: 0, width, height}
  if (window.width < 1 || window.height < 1) throw new RangeError(`nsfwPreprocess: an empty ${window.width}x${window.height} window`)
  const rows = axis(window.top, window.height, height, side)
  const cols = axis(window.left, window.width, width, side)
  const stride = 3 * width
  const contained = window.left >= 0 && window.top >= 0 && window.left + window.width <= width && window.top + window.height <= height
  if (contained) resizeInside(data, stride, rows, cols, out, offset)
  else resizeOutside(data, stride, rows, cols, out, offset)
  if (views === 2) mirrorView(out, offset, out, offset + viewSize, side)
  return out
}

/** The resize of a window that reaches past the image (the letterbox): positions outside it read black. */
function resizeOutside(data: Uint8Array, stride: number, rows: Axis, cols: Axis, out: Float32Array, offset: number): void {
  // Row and column offsets into `data`, or OUTSIDE: a letterbox reads black there.
  const rowAt = (i: number) => (i === OUTSIDE ? OUTSIDE : i * stride)
  const colAt = (i: number) => (i === OUTSIDE ? OUTSIDE : 3 * i)
  const read = (row: number, col: number): number => (row === OUTSIDE || col === OUTSIDE ? 0 : UNIT[data[row + col]])
  const rowFloats = 3 * cols.lo.length
  for (let r = 0; r < rows.lo.length; r++) {
    const top = rowAt(rows.lo[r])
    const bottom = rowAt(rows.hi[r])
    const rowFrac = rows.frac[r]
    let o = offset + r * rowFloats
    for (let c = 0; c < cols.lo.length; c++, o += 3) {
      const left = colAt(cols.lo[c])
      const right = colAt(cols.hi[c])
      const colFrac = cols.frac[c]
      const inside = top !== OUTSIDE && bottom !== OUTSIDE && left !== OUTSIDE && right !== OUTSIDE
      for (let d = 0; d < 3; d++) {
        const topLeft = inside ? UNIT[data[top + left + d]] : read(top, left === OUTSIDE ? OUTSIDE : left + d)
        const topRight = inside ? UNIT[data[top + right + d]] : read(top, right === OUTSIDE ? OUTSIDE : right + d)
        const bottomLeft = inside ? UNIT[data[bottom + left + d]] : read(bottom, left === OUTSIDE ? OUTSIDE : left + d)
        const bottomRight = inside ? UNIT[data[bottom + right + d]] : read(bottom, right === OUTSIDE ? OUTSIDE : right + d)
        const upper = topLeft + (topRight - topLeft) * colFrac
        const lower = bottomLeft + (bottomRight - bottomLeft) * colFrac
        out[o + d] = upper + (lower - upper) * rowFrac
      }
    }
  }
}

/**
 * resizeOutside for a window inside the image (every view but the letterbox): the same arithmetic in the same
 * order, so the same floats, without the checks for positions outside the image and with the columns' offsets
 * worked out once instead of once per row.
 */
function resizeInside(data: Uint8Array, stride: number, rows: Axis, cols: Axis, out: Float32Array, offset: number): void {
  const left = Int32Array.from(cols.lo, (i) => 3 * i)
  const right = Int32Array.from(cols.hi, (i) => 3 * i)
  const colFrac = cols.frac
  const side = cols.lo.length
  const rowFloats = 3 * side
  for (let r = 0; r < rows.lo.length; r++) {
    const top = rows.lo[r] * stride
    const bottom = rows.hi[r] * stride
    const rowFrac = rows.frac[r]
    let o = offset + r * rowFloats
    for (let c = 0; c < side; c++, o += 3) {
      const l = left[c]
      const rt = right[c]
      const f = colFrac[c]
      for (let d = 0; d < 3; d++) {
        const topLeft = UNIT[data[top + l + d]]
        const topRight = UNIT[data[top + rt + d]]
        const bottomLeft = UNIT[data[bottom + l + d]]
        const bottomRight = UNIT[data[bottom + rt + d]]
        const upper = topLeft + (topRight - topLeft) * f
        const lower = bottomLeft + (bottomRight - bottomLeft) * f
        out[o + d] = upper + (lower - upper) * rowFrac
      }
    }
  }
}

/**
 * Writes the mirror of the view at `from[fromOffset]` (of side `side`, default NSFW_SIZE) to `to[toOffset]`:
 * output column c is column side - 1 - c of the view, the same floats the resize of the mirrored image gives.
 */
export function mirrorView(from: Float32Array, fromOffset: number, to: Float32Array, toOffset: number, side: number = NSFW_SIZE): void {
  const rowFloats = 3 * side
  for (let r = 0; r < side; r++) {
    for (let c = 0; c < side; c++) {
      const a = fromOffset + r * rowFloats + 3 * c
      const b = toOffset + r * rowFloats + 3 * (side - 1 - c)
      to[b] = from[a]
      to[b + 1] = from[a + 1]
      to[b + 2] = from[a + 2]
    }
  }
}
