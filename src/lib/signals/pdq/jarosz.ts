/**
 * Jarosz filters: repeated box blurs that approximate a tent filter, the anti-aliasing step of PDQ before it
 * keeps a 64x64 grid. Arithmetic is float32 throughout (Math.fround at every step), in the reference's order,
 * so that the blurred values, and therefore the hash bits, are the reference's to the last bit.
 *
 * The reference blurs the whole image twice (rows, columns, rows, columns) and then samples it. Each box sum
 * depends only on its own row or column, so the same values come from a stream of rows: the first row pass and
 * the column sums over a ring of rows, the second row pass on each finished row keeping only the 64 sampled
 * columns, and the last column pass on those 64 columns. Scratch memory is a few rows, and the full-size
 * work is three passes instead of five.
 */

/** Box width for shrinking `oldDimension` to `newDimension`: half the decimation step, rounded up. */
export function jaroszWindowSize(oldDimension: number, newDimension: number): number {
  return Math.floor((oldDimension + 2 * newDimension - 1) / (2 * newDimension))
}

/** How a box of `window` values moves along `length`: filling, full, and emptying steps. */
interface Phases {
  phase1: number
  phase2: number
  phase3: number
  phase4: number
}

function phases(length: number, window: number): Phases {
  const half = Math.floor((window + 2) / 2)
  return {phase1: half - 1, phase2: window - half + 1, phase3: length - window, phase4: half - 1}
}

/**
 * One box pass along a line, from `input` to `output` (distinct arrays): the window is centred and shrinks at
 * both ends (each output is the mean of the values actually under it). The running sum is a float32 local.
 */
function boxLine(input: Float32Array, output: Float32Array, p: Phases): void {
  const f = Math.fround
  let sum = 0
  let li = 0
  let ri = 0
  let oi = 0
  let count = 0
  for (let i = 0; i < p.phase1; i++, count++) sum = f(sum + input[ri++])
  for (let i = 0; i < p.phase2; i++) {
    sum = f(sum + input[ri++])
    output[oi++] = sum / ++count
  }
  for (let i = 0; i < p.phase3; i++) {
    sum = f(sum + input[ri++])
    sum = f(sum - input[li++])
    output[oi++] = sum / count
  }
  for (let i = 0; i < p.phase4; i++) {
    sum = f(sum - input[li++])
    output[oi++] = sum / --count
  }
}

/** Lines blurred at once by boxLines: their running sums are independent, so the CPU adds them in parallel. */
const LANES = 4

/**
 * boxLine on up to LANES lines at once. Each running sum waits for the one before it (a float add and a
 * rounding to float32 per value), so one line at a time leaves the CPU idle; four interleaved sums run about
 * three times as fast, each in the same order as boxLine.
 */
function boxLines(inputs: Float32Array[], outputs: Float32Array[], p: Phases): void {
  if (inputs.length < LANES) {
    inputs.forEach((input, k) => boxLine(input, outputs[k], p))
    return
  }
  const f = Math.fround
  const [a, b, c, d] = inputs
  const [oa, ob, oc, od] = outputs
  let sa = 0
  let sb = 0
  let sc = 0
  let sd = 0
  let li = 0
  let ri = 0
  let oi = 0
  let count = 0
  for (let i = 0; i < p.phase1; i++, ri++, count++) {
    sa = f(sa + a[ri])
    sb = f(sb + b[ri])
    sc = f(sc + c[ri])
    sd = f(sd + d[ri])
  }
  for (let i = 0; i < p.phase2; i++, ri++, oi++) {
    count++
    sa = f(sa + a[ri])
    sb = f(sb + b[ri])
    sc = f(sc + c[ri])
    sd = f(sd + d[ri])
    oa[oi] = sa / count
    ob[oi] = sb / count
    oc[oi] = sc / count
    od[oi] = sd / count
  }
  for (let i = 0; i < p.phase3; i++, ri++, li++, oi++) {
    sa = f(f(sa + a[ri]) - a[li])
    sb = f(f(sb + b[ri]) - b[li])
    sc = f(f(sc + c[ri]) - c[li])
    sd = f(f(sd + d[ri]) - d[li])
    oa[oi] = sa / count
    ob[oi] = sb / count
    oc[oi] = sc / count
    od[oi] = sd / count
  }
  for (let i = 0; i < p.phase4; i++, li++, oi++) {
    count--
    sa = f(sa - a[li])
    sb = f(sb - b[li])
    sc = f(sc - c[li])
    sd = f(sd - d[li])
    oa[oi] = sa / count
    ob[oi] = sb / count
    oc[oi] = sc / count
    od[oi] = sd / count
  }
}

/**
 * One box pass down every column at once (memory is read row by row): `next(r)` gives row r when the window
 * reaches it, `earlier(r)` the same row again when the window leaves it (at most `window` rows back). Output
 * row r is written into `target(r)`, then `written(r)` is called.
 */
function boxColumns(
  rows: number,
  width: number,
  window: number,
  next: (r: number) => Float32Array,
  earlier: (r: number) => Float32Array,
  target: (r: number) => Float32Array,
  written: (r: number) => void,
): void {
  const p = phases(rows, window)
  const f = Math.fround
  // Float32Array stores round every partial sum to float32.
  const sums = new Float32Array(width)
  const mean = (r: number, count: number): void => {
    const out = target(r)
    for (let c = 0; c < width; c++) out[c] = sums[c] / count
    written(r)
  }
  let li = 0
  let ri = 0
  let oi = 0
  let count = 0
  for (let i = 0; i < p.phase1 + p.phase2; i++) {
    const add = next(ri++)
    for (let c = 0; c < width; c++) sums[c] += add[c]
    if (i >= p.phase1) mean(oi++, ++count)
    else count++
  }
  for (let i = 0; i < p.phase3; i++, oi++) {
    const add = next(ri++)
    const sub = earlier(li++)
    const out = target(oi)
    // Rounded after the addition and after the subtraction, as two separate steps would be; the mean in the
    // same loop, one read of the sums per row.
    for (let c = 0; c < width; c++) {
      const sum = f(f(sums[c] + add[c]) - sub[c])
      sums[c] = sum
      out[c] = sum / count
    }
    written(oi)
  }
  for (let i = 0; i < p.phase4; i++) {
    const sub = earlier(li++)
    for (let c = 0; c < width; c++) sums[c] -= sub[c]
    mean(oi++, --count)
  }
}

/** The index of the centre of each of `grid` cells along `length`. */
function centres(length: number, grid: number): Int32Array {
  return Int32Array.from({length: grid}, (_, i) => Math.floor(((i + 0.5) * length) / grid))
}

/**
 * Two Jarosz passes (rows, then columns, twice) over an image of rows x cols, sampled at the centre of each of
 * grid x grid cells: the reference's blur then decimation. `readRow(r, out)` fills `out` with row r's values.
 */
export function jaroszGrid(rows: number, cols: number, grid: number, readRow: (r: number, out: Float32Array) => void): Float32Array {
  const rowPhases = phases(cols, jaroszWindowSize(cols, grid))
  const colWindow = jaroszWindowSize(rows, grid)
  const keptCols = centres(cols, grid)
  const keptRows = centres(rows, grid)
  const lanes = (): Float32Array[] => Array.from({length: LANES}, () => new Float32Array(cols))
  // Rows after the first row pass, kept until the column window leaves them; computed LANES rows at a time.
  const slots = colWindow + LANES
  const ring = new Float32Array(slots * cols)
  const ringRows = Array.from({length: slots}, (_, k) => ring.subarray(k * cols, (k + 1) * cols))
  const slot = (r: number): Float32Array => ringRows[r % slots]
  const inputs = lanes()
  let ready = 0
  const next = (r: number): Float32Array => {
    if (r >= ready) {
      const n = Math.min(LANES, rows - r)
      for (let k = 0; k < n; k++) readRow(r + k, inputs[k])
      boxLines(n === LANES ? inputs : inputs.slice(0, n), Array.from({length: n}, (_, k) => slot(r + k)), rowPhases)
      ready = r + n
    }
    return slot(r)
  }
  // Every row after the second row pass, at the sampled columns only; rows are blurred LANES at a time.
  const narrow = new Float32Array(rows * grid)
  const narrowRows = Array.from({length: rows}, (_, r) => narrow.subarray(r * grid, (r + 1) * grid))
  const narrowRow = (r: number): Float32Array => narrowRows[r]
  const lines = lanes()
  const blurred = lanes()
  let first = 0
  let held = 0
  const flush = (): void => {
    boxLines(held === LANES ? lines : lines.slice(0, held), held === LANES ? blurred : blurred.slice(0, held), rowPhases)
    for (let k = 0; k < held; k++) {
      const out = narrowRows[first + k]
      const row = blurred[k]
      for (let j = 0; j < grid; j++) out[j] = row[keptCols[j]]
    }
    first += held
    held = 0
  }
  boxColumns(rows, cols, colWindow, next, slot, () => lines[held], () => {
    if (++held === LANES) flush()
  })
  flush()

  const result = new Float32Array(grid * grid)
  const means = new Float32Array(grid)
  let k = 0
  boxColumns(rows, grid, colWindow, narrowRow, narrowRow, () => means, (r) => {
    // Output rows come in order: keep the sampled ones (several cells share a row when rows < grid).
    for (; k < grid && keptRows[k] === r; k++) result.set(means, k * grid)
  })
  return result
}
