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
}

/** v / 255 rounded to float32, as tf's `div` on a float32 tensor stores it. */
const UNIT = Float32Array.from({length: 256}, (_, v) => v / 255)

interface Axis {
  /** Source index below and above each output position, and the weight of the upper one. */
  lo: Int32Array
  hi: Int32Array
  frac: Float64Array
}

/**
 * Align-corners sampling positions along one axis of `size` source pixels (newSize > 1): output i reads source
 * position i · (size - 1) / (new - 1).
 */
function axis(size: number, newSize: number): Axis {
  const ratio = (size - 1) / (newSize - 1)
  const lo = new Int32Array(newSize)
  const hi = new Int32Array(newSize)
  const frac = new Float64Array(newSize)
  for (let i = 0; i < newSize; i++) {
    const source = ratio * i
    const below = Math.max(0, Math.floor(source))
    lo[i] = below
    hi[i] = Math.min(size - 1, Math.ceil(source))
    frac[i] = source - below
  }
  return {lo, hi, frac}
}

/** Writes the specialist's input for one decoded image (the models' squares: runner.ts) and returns `out`. */
export function nsfwPreprocess(img: RgbImage, options: NsfwPreprocessOptions = {}): Float32Array {
  const side = options.side ?? NSFW_SIZE
  if (!Number.isInteger(side) || side < 2) throw new RangeError(`nsfwPreprocess: a view of side ${side}`)
  const viewSize = nsfwViewSize(side)
  const offset = options.offset ?? 0
  const out = options.out ?? new Float32Array(viewSize)
  if (offset < 0 || offset + viewSize > out.length) {
    throw new RangeError(`nsfwPreprocess: ${viewSize} floats at offset ${offset} do not fit in ${out.length}`)
  }
  const {data, width, height} = img
  if (data.length < width * height * 3 || width < 1 || height < 1) {
    throw new RangeError(`nsfwPreprocess: ${data.length} bytes for a ${width}x${height} RGB image`)
  }
  resize(data, 3 * width, axis(height, side), axis(width, side), out, offset)
  return out
}

/**
 * The bilinear resize: tf's arithmetic in tf's order (each row's two neighbours blended by the column weight,
 * then the two rows by the row weight), with the columns' offsets worked out once instead of once per row.
 */
function resize(data: Uint8Array, stride: number, rows: Axis, cols: Axis, out: Float32Array, offset: number): void {
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
