/**
 * Jarosz filters: repeated box blurs that approximate a tent filter, the anti-aliasing step of PDQ before it
 * keeps a 64x64 grid. Arithmetic is float32 throughout (Math.fround at every step), in the reference's order,
 * so that the blurred values, and therefore the hash bits, are the reference's to the last bit.
 */

/** Passes of (rows, then columns) blurring. */
const PASSES = 2

/** Box width for shrinking `oldDimension` to `newDimension`: half the decimation step, rounded up. */
export function jaroszWindowSize(oldDimension: number, newDimension: number): number {
  return Math.floor((oldDimension + 2 * newDimension - 1) / (2 * newDimension))
}

/**
 * One box pass along each row, in place: the window is centred and shrinks at both ends (each output is the
 * mean of the values actually under it). Float32Array stores round every partial sum to float32.
 */
function boxRows(pixels: Float32Array, rows: number, cols: number, window: number): void {
  const {phase1, phase2, phase3, phase4} = phases(cols, window)
  const line = new Float32Array(cols)
  const sum = new Float32Array(1)
  for (let r = 0; r < rows; r++) {
    const base = r * cols
    line.set(pixels.subarray(base, base + cols))
    let li = 0
    let ri = 0
    let oi = base
    let count = 0
    sum[0] = 0
    for (let i = 0; i < phase1; i++, count++) sum[0] += line[ri++]
    for (let i = 0; i < phase2; i++) {
      sum[0] += line[ri++]
      pixels[oi++] = sum[0] / ++count
    }
    for (let i = 0; i < phase3; i++) {
      sum[0] += line[ri++]
      sum[0] -= line[li++]
      pixels[oi++] = sum[0] / count
    }
    for (let i = 0; i < phase4; i++) {
      sum[0] -= line[li++]
      pixels[oi++] = sum[0] / --count
    }
  }
}

/**
 * The same pass along each column, all columns at once so that memory is read row by row. A row is
 * overwritten once its output is known; the input rows the window still has to subtract are kept in a ring.
 */
function boxColumns(pixels: Float32Array, rows: number, cols: number, window: number): void {
  const {phase1, phase2, phase3, phase4} = phases(rows, window)
  const sums = new Float32Array(cols)
  const slots = window + 1
  const ring = new Float32Array(slots * cols)
  const row = (r: number): Float32Array => pixels.subarray(r * cols, (r + 1) * cols)
  const add = (r: number): void => {
    const src = row(r)
    for (let c = 0; c < cols; c++) sums[c] += src[c]
  }
  const subtract = (r: number): void => {
    const saved = ring.subarray((r % slots) * cols, (r % slots + 1) * cols)
    for (let c = 0; c < cols; c++) sums[c] -= saved[c]
  }
  const write = (r: number, count: number): void => {
    const out = row(r)
    ring.set(out, (r % slots) * cols)
    for (let c = 0; c < cols; c++) out[c] = sums[c] / count
  }
  let li = 0
  let ri = 0
  let oi = 0
  let count = 0
  for (let i = 0; i < phase1; i++, count++) add(ri++)
  for (let i = 0; i < phase2; i++) {
    add(ri++)
    write(oi++, ++count)
  }
  for (let i = 0; i < phase3; i++) {
    add(ri++)
    subtract(li++)
    write(oi++, count)
  }
  for (let i = 0; i < phase4; i++) {
    subtract(li++)
    write(oi++, --count)
  }
}

/** How a box of `window` values moves along `length`: filling, full, and emptying steps. */
function phases(length: number, window: number): {phase1: number; phase2: number; phase3: number; phase4: number} {
  const half = Math.floor((window + 2) / 2)
  return {phase1: half - 1, phase2: window - half + 1, phase3: length - window, phase4: half - 1}
}

/** Blurs `pixels` (rows x cols, row-major) in place, with scratch memory of a few rows only. */
export function jaroszFilter(pixels: Float32Array, rows: number, cols: number, rowWindow: number, colWindow: number): void {
  for (let pass = 0; pass < PASSES; pass++) {
    boxRows(pixels, rows, cols, rowWindow)
    boxColumns(pixels, rows, cols, colWindow)
  }
}
