import type {RgbImage} from './rgb.js'

/** A rectangle of an image, in pixels. */
export interface Box {
  left: number
  top: number
  width: number
  height: number
}

/** A trim that would leave a side shorter than this keeps the whole image: too little would be left to score. */
export const MIN_TRIMMED_SIDE = 32

/**
 * Largest per-channel difference from the border colour that still counts as border. JPEG at ordinary
 * qualities moves flat areas by a few levels and chroma subsampling smears edges by a few more; analogue
 * captures add noise of about ±10. 24 levels covers both, while content (even dark content) differs by more.
 */
export const TOLERANCE = 24

/**
 * Share of a row or column that must match the border colour. Below 1 so that compression ringing, dust or
 * a small channel logo in a bar does not stop the trim; high enough that a content row never qualifies.
 */
export const BORDER_FRACTION = 0.98

/**
 * Lines of any content a side may start with before its padding: a stroke round the picture, or a line of noise,
 * which would otherwise stop the trim at the first line.
 */
export const STROKE_LINES = 2

/** The padding after a stroke that is not itself uniform must be this deep, or the stroke is taken for content. */
const MIN_PADDING_AFTER_STROKE = 4

/** Uniform runs looked for from a side inward (strokes, bars of two colours, a picture's plain background): bounds the passes. */
const MAX_RUNS = 4

/** Where one uniform run of a side's lines ends, and its colour. */
interface Run {
  depth: number
  colour: Uint8Array
}

/** A side's trimmed depth and the colour its padding ends with; `runs`: every uniform run from the edge inward. */
interface Side extends Run {
  runs: Run[]
}

/**
 * How deep a side's padding goes: `n` lines from that side inward, `colourOf(i)` setting `colour` to line i's
 * median and `isPadding(i)` telling whether line i matches it. A uniform run of lines is padding; a run of at most
 * STROKE_LINES (a stroke round the picture) may be followed by another run of another colour; and at the outer edge
 * up to STROKE_LINES lines of anything may come before a run of at least MIN_PADDING_AFTER_STROKE. A thicker run ends
 * the padding: the runs after it may be the picture's (a letterboxed photo's own plain background). `runs` goes on
 * past it, up to MAX_RUNS, for findBars to judge by their edges.
 */
function sideDepth(n: number, colour: Uint8Array, colourOf: (i: number) => void, isPadding: (i: number) => boolean): Side {
  const runs: Run[] = []
  let padding: Run = {depth: 0, colour: new Uint8Array(3)}
  let open = true
  for (let depth = 0; runs.length < MAX_RUNS && depth < n; ) {
    let found = -1
    const skips = runs.length === 0 ? STROKE_LINES : 0
    for (let start = depth; start <= depth + skips && start < n && found < 0; start++) {
      colourOf(start)
      let end = start
      while (end < n && isPadding(end)) end++
      if (end > start && (start === depth || end - start >= MIN_PADDING_AFTER_STROKE)) found = end
    }
    if (found < 0) break
    const run = {depth: found, colour: Uint8Array.from(colour)}
    runs.push(run)
    if (open) padding = run
    open &&= found - depth <= STROKE_LINES
    depth = found
  }
  return {...padding, runs}
}

/** The content box and each trimmed side's innermost colour; undefined where nothing is left to score (the whole image). */
function trimmed(img: RgbImage): {box: Box; sides: Record<'top' | 'bottom' | 'left' | 'right', Side>} | undefined {
  const {data, width, height} = img
  if (width < MIN_TRIMMED_SIDE || height < MIN_TRIMMED_SIDE) return undefined
  const histogram = new Uint32Array(3 * 256)
  const colour = new Uint8Array(3)
  const row = 3 * width
  const rowMedian = (y: number) => median(data, y * row, 3, width, histogram, colour)
  const rowAt = (y: number) => isBorder(data, y * row, 3, width, colour)

  const top = sideDepth(height, colour, rowMedian, rowAt)
  if (top.depth === height) return undefined
  const bottom = sideDepth(height - top.depth, colour, (i) => rowMedian(height - 1 - i), (i) => rowAt(height - 1 - i))
  const y0 = top.depth
  const y1 = height - bottom.depth
  if (y1 - y0 < MIN_TRIMMED_SIDE) return undefined

  const columnMedian = (x: number) => median(data, y0 * row + 3 * x, row, y1 - y0, histogram, colour)
  const columnAt = (x: number) => isBorder(data, y0 * row + 3 * x, row, y1 - y0, colour)
  const left = sideDepth(width, colour, columnMedian, columnAt)
  const right = sideDepth(width - left.depth, colour, (i) => columnMedian(width - 1 - i), (i) => columnAt(width - 1 - i))
  const x0 = left.depth
  const x1 = width - right.depth
  if (x1 - x0 < MIN_TRIMMED_SIDE) return undefined
  return {box: {left: x0, top: y0, width: x1 - x0, height: y1 - y0}, sides: {top, bottom, left, right}}
}

/**
 * The part of the image inside its letterbox bars or uniform padding. Each side is trimmed on its own, with
 * its own colour (the median of its outermost row or column), row by row inward while the row (nearly)
 * matches that colour; a thin stroke round the picture, or a line of noise at its edge, does not stop it
 * (sideDepth). Top and bottom go first, over the full width; left and right then scan only the rows
 * that are left, so bars of different colours on adjacent sides are both found. A fully uniform image, or a
 * trim leaving less than MIN_TRIMMED_SIDE pixels either way, gives the whole image.
 */
export function findContentBox(img: RgbImage): Box {
  return trimmed(img)?.box ?? {left: 0, top: 0, width: img.width, height: img.height}
}

/**
 * Share of a line just inside a trimmed side that may match the side's colour for the side to end at a sharp edge:
 * a picture placed on a canvas (a story's bars, letterboxing) starts with a line of its own content, while the
 * white background of a catalogue photo trimmed to the person in it goes on around their outline.
 */
export const SHARP_EDGE_FRACTION = 0.5

/**
 * Lines inside a trimmed side looked at for its edge: a JPEG's ringing around a sharp edge stays within its 8-pixel
 * block, so the trim can stop up to a block short of the picture's first line.
 */
const EDGE_DEPTH = 8

/**
 * The part of the image inside bars that end at a sharp edge. Each side is cut at the deepest end of its uniform
 * runs from the edge inward (its padding as findContentBox finds it, and further runs of other colours: two-tone
 * bars) where one of the EDGE_DEPTH lines just inside matches that run's colour on less than SHARP_EDGE_FRACTION of
 * its length (within findContentBox's box: the bars of the other sides are no part of the edge); a side whose
 * content fades into its last run (a person on a plain background) is cut at the run before, or not at all.
 */
export function findBars(img: RgbImage): Box {
  const {data, width, height} = img
  const whole = {left: 0, top: 0, width, height}
  const found = trimmed(img)
  if (!found) return whole
  const {box, sides} = found
  const row = 3 * width
  const bottom = box.top + box.height
  const right = box.left + box.width
  const sharpRow = (run: Run, y: number) => y >= 0 && y < height && matching(data, y * row + 3 * box.left, 3, box.width, run.colour) < SHARP_EDGE_FRACTION
  const sharpColumn = (run: Run, x: number) => x >= 0 && x < width && matching(data, box.top * row + 3 * x, row, box.height, run.colour) < SHARP_EDGE_FRACTION
  // The deepest run of the side whose inner edge is sharp: how deep to cut (0: not at all).
  const cut = (side: Side, sharp: (run: Run, line: number) => boolean, line: (depth: number, d: number) => number) =>
    [...side.runs].reverse().find((run) => Array.from({length: EDGE_DEPTH}, (_, d) => sharp(run, line(run.depth, d))).some(Boolean))?.depth ?? 0
  const top = cut(sides.top, sharpRow, (depth, d) => depth + d)
  const end = height - cut(sides.bottom, sharpRow, (depth, d) => height - 1 - depth - d)
  const left = cut(sides.left, sharpColumn, (depth, d) => depth + d)
  const last = width - cut(sides.right, sharpColumn, (depth, d) => width - 1 - depth - d)
  if (end - top < MIN_TRIMMED_SIDE || last - left < MIN_TRIMMED_SIDE) return whole
  return {left, top, width: last - left, height: end - top}
}

/** The image cropped to its content box; the same image when there is nothing to trim. */
export function trimBorders(img: RgbImage): RgbImage {
  return crop(img, findContentBox(img))
}

/** Copies a box out of an image; full-width boxes are a view on the same memory (rows are contiguous). */
export function crop(img: RgbImage, box: Box): RgbImage {
  const row = 3 * img.width
  if (box.width === img.width && box.height === img.height) return img
  if (box.width === img.width) {
    return {data: img.data.subarray(box.top * row, (box.top + box.height) * row), width: box.width, height: box.height}
  }
  const out = Buffer.allocUnsafe(3 * box.width * box.height)
  for (let y = 0; y < box.height; y++) {
    const start = (box.top + y) * row + 3 * box.left
    img.data.copy(out, 3 * box.width * y, start, start + 3 * box.width)
  }
  return {data: out, width: box.width, height: box.height}
}

/** Per-channel median of `count` pixels starting at byte `start`, `step` bytes apart, written into `colour`. */
function median(data: Buffer, start: number, step: number, count: number, histogram: Uint32Array, colour: Uint8Array): void {
  histogram.fill(0)
  for (let i = 0, p = start; i < count; i++, p += step) {
    histogram[data[p]]++
    histogram[256 + data[p + 1]]++
    histogram[512 + data[p + 2]]++
  }
  const half = count >> 1
  for (let c = 0; c < 3; c++) {
    let seen = 0
    let v = 0
    while ((seen += histogram[256 * c + v]) <= half) v++
    colour[c] = v
  }
}

/** The share of the line's `count` pixels within TOLERANCE of `colour`. */
function matching(data: Buffer, start: number, step: number, count: number, colour: Uint8Array): number {
  let within = 0
  for (let i = 0, p = start; i < count; i++, p += step) {
    if (Math.abs(data[p] - colour[0]) <= TOLERANCE && Math.abs(data[p + 1] - colour[1]) <= TOLERANCE && Math.abs(data[p + 2] - colour[2]) <= TOLERANCE) within++
  }
  return within / count
}

/** Whether at least BORDER_FRACTION of the line is within TOLERANCE of `colour`; stops at the first excess miss. */
function isBorder(data: Buffer, start: number, step: number, count: number, colour: Uint8Array): boolean {
  const allowed = Math.floor(count * (1 - BORDER_FRACTION))
  const r = colour[0]
  const g = colour[1]
  const b = colour[2]
  let misses = 0
  for (let i = 0, p = start; i < count; i++, p += step) {
    if (Math.abs(data[p] - r) > TOLERANCE || Math.abs(data[p + 1] - g) > TOLERANCE || Math.abs(data[p + 2] - b) > TOLERANCE) {
      if (++misses > allowed) return false
    }
  }
  return true
}
