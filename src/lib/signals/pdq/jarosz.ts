/**
 * Jarosz filters: repeated box blurs that approximate a tent filter, the anti-aliasing step of PDQ before it
 * keeps a 64x64 grid. Arithmetic is float32 throughout (Math.fround at every step), in the reference's order,
 * so that the blurred values, and therefore the hash bits, are the reference's to the last bit.
 *
 * The reference blurs a whole float32 copy of the image (4 bytes a pixel: 400 MB at 100 megapixels). Here the
 * image streams through, row by row from the top, and only the values the 64x64 grid keeps are computed to the
 * end: each pass's arithmetic is the reference's, in the same order, on the same values, with memory for the
 * column windows only (a few MB).
 */

/** Box width for shrinking `oldDimension` to `newDimension`: half the decimation step, rounded up. */
export function jaroszWindowSize(oldDimension: number, newDimension: number): number {
  return Math.floor((oldDimension + 2 * newDimension - 1) / (2 * newDimension))
}

/**
 * One box pass along a row, `line` into `out` (distinct arrays): the window is centred and shrinks at both ends
 * (each output is the mean of the values actually under it). Float32Array stores round every partial sum to float32.
 */
function boxRow(line: Float32Array, out: Float32Array, window: number, sum: Float32Array): void {
  const {phase1, phase2, phase3, phase4} = phases(line.length, window)
  let li = 0
  let ri = 0
  let oi = 0
  let count = 0
  sum[0] = 0
  for (let i = 0; i < phase1; i++, count++) sum[0] += line[ri++]
  for (let i = 0; i < phase2; i++) {
    sum[0] += line[ri++]
    out[oi++] = sum[0] / ++count
  }
  for (let i = 0; i < phase3; i++) {
    sum[0] += line[ri++]
    sum[0] -= line[li++]
    out[oi++] = sum[0] / count
  }
  for (let i = 0; i < phase4; i++) {
    sum[0] -= line[li++]
    out[oi++] = sum[0] / --count
  }
}

/**
 * The same pass along every column at once, fed rows from the top: `push` takes the next input row, `end` the
 * last outputs; each output row goes to `emit` (index, values; the array is reused) as soon as it is known. The
 * input rows the window still has to subtract are kept in a ring.
 */
function columnBox(rows: number, cols: number, window: number, emit: (row: number, values: Float32Array) => void): {push(row: Float32Array): void; end(): void} {
  const {phase1, phase2} = phases(rows, window)
  const sums = new Float32Array(cols)
  const slots = window + 1
  const ring = new Float32Array(slots * cols)
  const out = new Float32Array(cols)
  const slot = (r: number): Float32Array => ring.subarray((r % slots) * cols, (r % slots + 1) * cols)
  let li = 0
  let ri = 0
  let oi = 0
  let count = 0
  const write = () => {
    for (let c = 0; c < cols; c++) out[c] = sums[c] / count
    emit(oi++, out)
  }
  const subtract = () => {
    const saved = slot(li++)
    for (let c = 0; c < cols; c++) sums[c] -= saved[c]
  }
  return {
    push(row) {
      const saved = slot(ri)
      saved.set(row)
      for (let c = 0; c < cols; c++) sums[c] += saved[c]
      ri++
      if (ri <= phase1) count++
      else if (ri <= phase1 + phase2) {
        count++
        write()
      } else {
        subtract()
        write()
      }
    },
    end() {
      while (oi < rows) {
        subtract()
        count--
        write()
      }
    },
  }
}

/** How a box of `window` values moves along `length`: filling, full, and emptying steps. */
function phases(length: number, window: number): {phase1: number; phase2: number; phase3: number; phase4: number} {
  const half = Math.floor((window + 2) / 2)
  return {phase1: half - 1, phase2: window - half + 1, phase3: length - window, phase4: half - 1}
}

/**
 * Two passes of (rows, then columns) box blurring of a rows x cols image whose rows `row(r, out)` writes on
 * request (from the top, once each), sampled at the centre of each of grid x grid cells: the reference's
 * blurred image at those points, without holding it.
 */
export function jaroszSampled(rows: number, cols: number, rowWindow: number, colWindow: number, grid: number, row: (r: number, out: Float32Array) => void): Float32Array {
  const sampledRows = Array.from({length: grid}, (_, i) => Math.floor(((i + 0.5) * rows) / grid))
  const sampledCols = Array.from({length: grid}, (_, j) => Math.floor(((j + 0.5) * cols) / grid))
  const result = new Float32Array(grid * grid)
  const sum = new Float32Array(1)
  const line = new Float32Array(cols)
  const blurred = new Float32Array(cols)
  const picked = new Float32Array(grid)
  const second = columnBox(rows, grid, colWindow, (r, values) => {
    sampledRows.forEach((s, i) => {
      if (s === r) result.set(values, i * grid)
    })
  })
  const first = columnBox(rows, cols, colWindow, (_r, values) => {
    boxRow(values, blurred, rowWindow, sum)
    for (let j = 0; j < grid; j++) picked[j] = blurred[sampledCols[j]]
    second.push(picked)
  })
  for (let r = 0; r < rows; r++) {
    row(r, line)
    boxRow(line, blurred, rowWindow, sum)
    first.push(blurred)
  }
  first.end()
  second.end()
  return result
}
