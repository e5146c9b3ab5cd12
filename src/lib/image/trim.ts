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
