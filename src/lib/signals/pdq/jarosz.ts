import {kernelMemory, LUMA_TABLES, pdqKernels, SCRATCH, type Kernels} from './kernels.js'

/**
 * Jarosz filters: repeated box blurs that approximate a tent filter, the anti-aliasing step of PDQ before it
 * keeps a 64x64 grid. Arithmetic is float32 throughout, in the reference's order, so that the blurred values,
 * and therefore the hash bits, are the reference's to the last bit.
 *
 * The reference blurs the whole image twice (rows, columns, rows, columns) and then samples it. Each box sum
 * depends only on its own row or column, so the same values come from a stream of rows: the first row pass and
 * the column sums over a ring of rows, the second row pass on each finished row keeping only the 64 sampled
 * columns, and the last column pass on those 64 columns. Scratch memory is a few rows, and the full-size
 * work is three passes instead of five. The passes themselves run in WebAssembly (kernels.wat): float32
 * arithmetic there costs one instruction per operation, where JavaScript rounds doubles to float32 at every step.
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

/** Float32 values per scratch line: a multiple of four, for the column passes' four-wide steps. */
const padded = (n: number): number => Math.ceil(n / 4) * 4

/** Lines blurred at once by boxLines, one per lane of a four-float vector: their running sums are independent. */
const LANES = 4

/** A box pass along the first `n` of `lines` (float32 addresses, in bytes) into `outputs`, LANES at a time. */
function boxLines(k: Kernels, n: number, lines: number[], outputs: number[], p: Phases): void {
  if (n === LANES) {
    k.boxLines(lines[0], lines[1], lines[2], lines[3], outputs[0], outputs[1], outputs[2], outputs[3], p.phase1, p.phase2, p.phase3, p.phase4)
    return
  }
  for (let i = 0; i < n; i++) k.boxLine(lines[i], outputs[i], p.phase1, p.phase2, p.phase3, p.phase4)
}

/**
 * One box pass down every column at once (memory is read row by row): `next(r)` gives row r's address when the
 * window reaches it, `earlier(r)` the same row's again when the window leaves it (at most `window` rows back).
 * Output row r is written at `target(r)`, then `written(r)` is called. `sums` has `width` zeroed floats.
 */
function boxColumns(
  k: Kernels,
  sums: number,
  rows: number,
  width: number,
  window: number,
  next: (r: number) => number,
  earlier: (r: number) => number,
  target: (r: number) => number,
  written: (r: number) => void,
): void {
  const p = phases(rows, window)
  const vectors = width / 4
  let li = 0
  let ri = 0
  let oi = 0
  let count = 0
  for (let i = 0; i < p.phase1 + p.phase2; i++) {
    const add = next(ri++)
    count++
    if (i < p.phase1) k.columnStep(sums, add, 0, 0, vectors, 0)
    else {
      k.columnStep(sums, add, 0, target(oi), vectors, count)
      written(oi++)
    }
  }
  for (let i = 0; i < p.phase3; i++, oi++) {
    k.columnStep(sums, next(ri++), earlier(li++), target(oi), vectors, count)
    written(oi)
  }
  for (let i = 0; i < p.phase4; i++, oi++) {
    k.columnStep(sums, 0, earlier(li++), target(oi), vectors, --count)
    written(oi)
  }
}

/** The index of the centre of each of `grid` cells along `length`. */
function centres(length: number, grid: number): Int32Array {
  return Int32Array.from({length: grid}, (_, i) => Math.floor(((i + 0.5) * length) / grid))
}

/**
 * The values blurred: the luminance of RGB pixels stored row after row (`rgb`, 3 bytes a pixel, computed in
 * WebAssembly), or a function that fills `out` with row r's values (for pixels read in another order).
 */
export type JaroszSource = {rgb: Uint8Array} | ((r: number, out: Float32Array) => void)

/**
 * Where each buffer of jaroszGrid lies in the kernels' memory, in floats from SCRATCH (lanes: each lane's
 * address in bytes, as the kernels take them), and `floats`, the end of the last.
 */
function scratchLayout(rows: number, cols: number, slots: number, width: number, narrowWidth: number) {
  let floats = SCRATCH / 4
  const take = (n: number): number => {
    const at = floats
    floats += n
    return at
  }
  const lanes = (): number[] => Array.from({length: LANES}, () => 4 * take(width))
  const inputs = lanes()
  const rgb = take(Math.ceil((LANES * cols * 3) / 4))
  const ring = take(slots * width)
  const lines = lanes()
  const blurred = lanes()
  const sums = take(width)
  const narrow = take(rows * narrowWidth)
  const narrowSums = take(narrowWidth)
  const means = take(narrowWidth)
  return {inputs, rgb, ring, lines, blurred, sums, narrow, narrowSums, means, floats}
}

/**
 * Two Jarosz passes (rows, then columns, twice) over an image of rows x cols, sampled at the centre of each of
 * grid x grid cells: the reference's blur then decimation.
 */
export function jaroszGrid(rows: number, cols: number, grid: number, source: JaroszSource): Float32Array {
  const k = pdqKernels()
  const rowPhases = phases(cols, jaroszWindowSize(cols, grid))
  const colWindow = jaroszWindowSize(rows, grid)
  const keptCols = centres(cols, grid)
  const keptRows = centres(rows, grid)
  const width = padded(cols)
  const narrowWidth = padded(grid)
  // Rows after the first row pass, kept until the column window leaves them; computed LANES rows at a time.
  const slots = colWindow + LANES
  const {inputs, rgb, ring, lines, blurred, sums, narrow, narrowSums, means, floats} = scratchLayout(rows, cols, slots, width, narrowWidth)
  const buffer = kernelMemory(k, floats * 4)
  const memory = new Float32Array(buffer)
  memory.fill(0, sums, sums + width)
  memory.fill(0, narrowSums, narrowSums + narrowWidth)

  const inputRows = inputs.map((at) => memory.subarray(at / 4, at / 4 + cols))
  const bytes = new Uint8Array(buffer)
  const read = (r: number, n: number): void => {
    if (typeof source === 'function') {
      for (let i = 0; i < n; i++) source(r + i, inputRows[i])
      return
    }
    bytes.set(source.rgb.subarray(r * cols * 3, (r + n) * cols * 3), 4 * rgb)
    k.luminance(LUMA_TABLES, 4 * rgb, inputs[0], cols, n, 4 * width)
  }
  const slot = (r: number): number => 4 * (ring + (r % slots) * width)
  let ready = 0
  const targets = new Array<number>(LANES)
  const next = (r: number): number => {
    if (r >= ready) {
      const n = Math.min(LANES, rows - r)
      read(r, n)
      for (let i = 0; i < n; i++) targets[i] = slot(r + i)
      boxLines(k, n, inputs, targets, rowPhases)
      ready = r + n
    }
    return slot(r)
  }
  // Every row after the second row pass, at the sampled columns only; rows are blurred LANES at a time.
  let first = 0
  let held = 0
  const flush = (): void => {
    boxLines(k, held, lines, blurred, rowPhases)
    for (let i = 0; i < held; i++) {
      const out = narrow + (first + i) * narrowWidth
      const row = blurred[i] / 4
      for (let j = 0; j < grid; j++) memory[out + j] = memory[row + keptCols[j]]
    }
    first += held
    held = 0
  }
  boxColumns(k, 4 * sums, rows, width, colWindow, next, slot, () => lines[held], () => {
    if (++held === LANES) flush()
  })
  flush()

  const result = new Float32Array(grid * grid)
  const narrowRow = (r: number): number => 4 * (narrow + r * narrowWidth)
  let kept = 0
  boxColumns(k, 4 * narrowSums, rows, narrowWidth, colWindow, narrowRow, narrowRow, () => 4 * means, (r) => {
    // Output rows come in order: keep the sampled ones (several cells share a row when rows < grid).
    for (; kept < grid && keptRows[kept] === r; kept++) result.set(memory.subarray(means, means + grid), kept * grid)
  })
  return result
}
