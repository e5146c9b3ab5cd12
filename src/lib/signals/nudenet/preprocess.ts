/**
 * A decoded frame as NudeNet's own `_read_image` hands it to the model: padded to a square with black at the
 * bottom and right, resized to 320 x 320 the way OpenCV's `cv2.dnn.blobFromImage` does (`cv2.resize` with
 * INTER_LINEAR on 8-bit pixels: half-pixel centres, edge pixels repeated, 11-bit fixed-point weights, the
 * result rounded back to 8 bits), then scaled by 1/255 into three planes.
 *
 * Channel order: `cv2.imread` gives BGR; `cvtColor(COLOR_RGBA2BGR)` on three channels swaps the first and the
 * third (BGR becomes RGB); `blobFromImage(swapRB=True)` swaps them back. So the model receives blue, green,
 * red planes, in that order (test/fixtures/nudenet-reference.json records the package's input; the parity
 * test checks it).
 */
import type {RgbImage} from '../../image/rgb.js'
import {NUDENET_INPUT_SIZE, NUDENET_SIZE} from './labels.js'

/** OpenCV's INTER_RESIZE_COEF_SCALE: bilinear weights are integers out of 2048. */
const COEF = 2048

export interface NudenetInput {
  /** Three planes (B, G, R) of NUDENET_SIZE², values in [0, 1]. */
  pixels: Float32Array
  /** The frame's size, to map boxes back to its pixels. */
  width: number
  height: number
}

interface Taps {
  /** First source index of each output index; the second is the next one (or the same at the edge). */
  index: Int32Array
  /** Fixed-point weights of the first and the second source pixel. */
  w0: Int32Array
  w1: Int32Array
}

/** cv2.resize's INTER_LINEAR taps along one axis, from `from` pixels to `to`. */
function taps(from: number, to: number): Taps {
  // As OpenCV computes it: the inverse of the inverse scale.
  const scale = 1 / (to / from)
  const index = new Int32Array(to)
  const w0 = new Int32Array(to)
  const w1 = new Int32Array(to)
  for (let d = 0; d < to; d++) {
    let f = Math.fround((d + 0.5) * scale - 0.5)
    let s = Math.floor(f)
    f = Math.fround(f - s)
    if (s < 0) {
      f = 0
      s = 0
    }
    if (s >= from - 1) {
      f = 0
      s = from - 1
    }
    index[d] = s
    // saturate_cast<short> rounds to nearest.
    w0[d] = Math.round(Math.fround(1 - f) * COEF)
    w1[d] = Math.round(f * COEF)
  }
  return {index, w0, w1}
}

/**
 * The frame's model input. The square is never built: pixels beyond the frame's right or bottom edge read as
 * black, as the padding does.
 */
export function prepareNudenet(frame: RgbImage): NudenetInput {
  const {data, width, height} = frame
  const side = Math.max(width, height)
  const n = NUDENET_SIZE
  const xs = taps(side, n)
  const ys = taps(side, n)
  // The horizontal pass of one source row, three channels per output column; rows are reused between outputs.
  const rows = new Map<number, Int32Array>()
  const rowOf = (y: number): Int32Array => {
    let row = rows.get(y)
    if (row) return row
    row = new Int32Array(3 * n)
    if (y < height) {
      const base = y * width * 3
      for (let d = 0; d < n; d++) {
        const s0 = xs.index[d]
        const s1 = Math.min(s0 + 1, side - 1)
        for (let c = 0; c < 3; c++) {
          const a = s0 < width ? data[base + 3 * s0 + c] : 0
          const b = s1 < width ? data[base + 3 * s1 + c] : 0
          row[3 * d + c] = a * xs.w0[d] + b * xs.w1[d]
        }
      }
    }
    rows.set(y, row)
    return row
  }
  const pixels = new Float32Array(NUDENET_INPUT_SIZE)
  const plane = n * n
  for (let dy = 0; dy < n; dy++) {
    const y0 = ys.index[dy]
    const r0 = rowOf(y0)
    const r1 = rowOf(Math.min(y0 + 1, side - 1))
    const b0 = ys.w0[dy]
    const b1 = ys.w1[dy]
    for (const key of rows.keys()) if (key < y0) rows.delete(key)
    for (let dx = 0; dx < n; dx++) {
      for (let c = 0; c < 3; c++) {
        // OpenCV's vectorised vertical pass: 16-bit products, then a rounding shift by two.
        const v = (((b0 * (r0[3 * dx + c] >> 4)) >> 16) + ((b1 * (r1[3 * dx + c] >> 4)) >> 16) + 2) >> 2
        const value = Math.min(255, Math.max(0, v))
        // RGB in, B, G, R planes out.
        pixels[(2 - c) * plane + dy * n + dx] = value / 255
      }
    }
  }
  return {pixels, width, height}
}
