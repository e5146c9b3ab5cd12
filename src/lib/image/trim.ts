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
 * The part of the image inside its letterbox bars or uniform padding. Each side is trimmed on its own, with
 * its own colour (the median of its outermost row or column), row by row inward while the row (nearly)
 * matches that colour. Top and bottom go first, over the full width; left and right then scan only the rows
 * that are left, so bars of different colours on adjacent sides are both found. A fully uniform image, or a
 * trim leaving less than MIN_TRIMMED_SIDE pixels either way, gives the whole image.
 */
export function findContentBox(img: RgbImage): Box {
  const {data, width, height} = img
  const whole = {left: 0, top: 0, width, height}
  if (width < MIN_TRIMMED_SIDE || height < MIN_TRIMMED_SIDE) return whole

  const histogram = new Uint32Array(3 * 256)
  const colour = new Uint8Array(3)
  const row = 3 * width

  const rowAt = (y: number) => isBorder(data, y * row, 3, width, colour)
  const columnAt = (x: number, y0: number, y1: number) => isBorder(data, y0 * row + 3 * x, row, y1 - y0, colour)

  let top = 0
  median(data, 0, 3, width, histogram, colour)
  while (top < height && rowAt(top)) top++
  if (top === height) return whole

  let bottom = height
  median(data, (height - 1) * row, 3, width, histogram, colour)
  while (bottom > top && rowAt(bottom - 1)) bottom--
  if (bottom - top < MIN_TRIMMED_SIDE) return whole

  let left = 0
  median(data, top * row, row, bottom - top, histogram, colour)
  while (left < width && columnAt(left, top, bottom)) left++

  let right = width
  median(data, top * row + 3 * (width - 1), row, bottom - top, histogram, colour)
  while (right > left && columnAt(right - 1, top, bottom)) right--

  if (right - left < MIN_TRIMMED_SIDE) return whole
  return {left, top, width: right - left, height: bottom - top}
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
 * The part of the image inside bars that end at a sharp edge: findContentBox's box, with each side cut only where
 * one of the EDGE_DEPTH lines just inside it (within the box) matches the side's colour on less than
 * SHARP_EDGE_FRACTION of its length; a side whose content fades into the border (a person on a plain background)
 * keeps it.
 */
export function findBars(img: RgbImage): Box {
  const box = findContentBox(img)
  const {data, width, height} = img
  if (box.width === width && box.height === height) return box
  const histogram = new Uint32Array(3 * 256)
  const colour = new Uint8Array(3)
  const row = 3 * width
  const bottom = box.top + box.height
  const right = box.left + box.width
  // A side's colour as findContentBox took it, then whether a line just inside matches it on less than the share
  // (within the box: the bars of the other sides are no part of the edge).
  const sharpRows = (outer: number, first: number, step: number) => {
    median(data, outer * row, 3, width, histogram, colour)
    return Array.from({length: EDGE_DEPTH}, (_, d) => first + d * step).some(
      (y) => y >= box.top && y < bottom && matching(data, y * row + 3 * box.left, 3, box.width, colour) < SHARP_EDGE_FRACTION,
    )
  }
  const sharpColumns = (outer: number, first: number, step: number) => {
    median(data, box.top * row + 3 * outer, row, box.height, histogram, colour)
    return Array.from({length: EDGE_DEPTH}, (_, d) => first + d * step).some(
      (x) => x >= box.left && x < right && matching(data, box.top * row + 3 * x, row, box.height, colour) < SHARP_EDGE_FRACTION,
    )
  }
  const top = box.top > 0 && sharpRows(0, box.top, 1) ? box.top : 0
  const end = bottom < height && sharpRows(height - 1, bottom - 1, -1) ? bottom : height
  const left = box.left > 0 && sharpColumns(0, box.left, 1) ? box.left : 0
  const last = right < width && sharpColumns(width - 1, right - 1, -1) ? right : width
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
