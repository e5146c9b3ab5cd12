/**
 * Reading the text of frames: detect regions on each frame at a bounded resolution, then read the lines each
 * frame's budget allows in recogniser batches of one padded width (few padded columns, and a line reads the same
 * whatever its neighbours), and return the lines with their boxes in the frame's own pixels.
 */
import {setImmediate as nextTurn} from 'node:timers/promises'

import type {RgbImage} from '../../image/rgb.js'
import {boxesFromMap, corners, DEFAULT_BOX_OPTIONS, type BoxOptions, type RotatedBox} from './boxes.js'
import {ctcDecode} from './ctc.js'
import type {TextModel} from './model.js'
import {detectorInput, lineWidth, REC_HEIGHT, sampleLine} from './preprocess.js'

/** An axis-aligned rectangle in image pixels. */
export interface TextBox {
  x: number
  y: number
  width: number
  height: number
}

export interface TextLine {
  text: string
  /** Mean probability of the line's symbols, 0..1. */
  confidence: number
  /** The smallest upright rectangle around the (possibly tilted) line, clipped to the image. */
  box: TextBox
}

/**
 * What one item (an image, or a frame of a video) may have read: the deterministic bound on its reading time,
 * counted in the recogniser's work rather than in lines, so that a document of many short lines reads whole while
 * an image of long lines stops as soon.
 */
export interface ReadBudget {
  /**
   * The recogniser's input columns (each line's padded width at height 48), at most: its time grows in proportion
   * to them (bench/README.md, "text"), and so does sampling the lines.
   */
  columns: number
}

/**
 * The default budget, in recogniser columns: a receipt of 90 lines of about 300 columns reads whole, while an image
 * of lines 1280 columns wide spends it in 25 lines: 0.85 s on two cores, 1.45 s of CPU, detector included
 * (bench/ocr.ts --only budget).
 */
export const DEFAULT_TEXT_BUDGET = 32_768
/** The least budget one may set: one line of the widest the recogniser reads (ReadOptions.maxLineWidth). */
export const MIN_TEXT_BUDGET = 1280
/** The most one may set: every region the detector keeps (BoxOptions.maxBoxes, 200) at the widest. */
export const MAX_TEXT_BUDGET = 256_000
/** What a budget accepts, as MOD_TEXT_BUDGET's and the policy's `text.budget`'s refusals say it. */
export const BUDGET_RANGE = `a whole number of recogniser columns from ${MIN_TEXT_BUDGET} to ${MAX_TEXT_BUDGET}`

export interface ReadOptions {
  /**
   * The detector sees the frame scaled so that its longest side is this (rounded to 32). 736 reads lines of
   * 16 px and more in a 1280x720 photo as well as 960 does (bench/ocr.ts) at half the detector's cost.
   */
  detectorSide: number
  /** Lines read with a lower confidence are dropped. */
  minConfidence: number
  /** Widest line fed to the recogniser, in its pixels (height 48). */
  maxLineWidth: number
  /** Lines per recogniser run, at most. */
  batch: number
  /**
   * Columns per recogniser run, at most (lines × padded width; a wider line runs alone): onnxruntime runs a model
   * on the thread of the event loop, so a run holds up every other request (GET /health) for its time: about
   * 0.08 ms of CPU a column, so 2048 columns take some 160 ms of CPU (eight lines of 1280 held it for a second
   * on a busy machine).
   */
  runColumns: number
  /**
   * Each line is padded to the next of a series of widths growing by this ratio, and a run holds lines of one
   * padded width only: padding costs the recogniser as much as text, and a line's reading depends on its
   * padding, so it must not depend on the other lines of its run. A run costs little else (bench/README.md,
   * "text": three lines of 408, 664 and 672 columns took 125 ms of CPU in one run, 105 ms in three).
   */
  maxPadding: number
  /**
   * The most an item reads, in recogniser columns, the first lines in reading order. The recogniser's time grows
   * with its columns, so this bounds the reading time whatever the image holds (the detector keeps at most
   * BoxOptions.maxBoxes regions, so the count of lines is bounded too).
   */
  budget: ReadBudget
  boxes: BoxOptions
}

export const DEFAULT_READ_OPTIONS: ReadOptions = {
  detectorSide: 736,
  minConfidence: 0.5,
  maxLineWidth: 1280,
  batch: 8,
  runColumns: 2048,
  maxPadding: 1.1,
  budget: {columns: DEFAULT_TEXT_BUDGET},
  boxes: DEFAULT_BOX_OPTIONS,
}

/** The lines read in a frame, and whether reading stopped early (the budget spent, or more regions than the detector keeps). */
export interface FrameText {
  lines: TextLine[]
  truncated: boolean
}

/**
 * The width a line of `width` columns is padded to: the next of a series of multiples of 4 from 16 growing by
 * `ratio`, at most `maxWidth`. A function of the line alone, so that its reading does not depend on its neighbours.
 */
export function paddedWidth(width: number, maxWidth: number, ratio: number): number {
  let w = 16
  while (w < width) w = Math.max(w + 4, Math.ceil((w * ratio) / 4) * 4)
  return Math.min(w, Math.ceil(maxWidth / 4) * 4)
}

/** Each item's budget split evenly over the `frames` frames it reads. */
export function frameBudget(budget: ReadBudget, frames: number): ReadBudget {
  return {columns: Math.floor(budget.columns / frames)}
}

/** Scales a box from detector-map coordinates to image pixels (the axes scale apart when the aspect changed). */
export function toImage(b: RotatedBox, sx: number, sy: number): RotatedBox {
  const wx = b.ux * b.halfW * sx
  const wy = b.uy * b.halfW * sy
  const hx = -b.uy * b.halfH * sx
  const hy = b.ux * b.halfH * sy
  const halfW = Math.hypot(wx, wy)
  return {cx: b.cx * sx, cy: b.cy * sy, halfW, halfH: Math.hypot(hx, hy), ux: wx / halfW, uy: wy / halfW}
}

function upright(b: RotatedBox, img: RgbImage): TextBox {
  const cs = corners(b)
  const x0 = Math.max(0, Math.floor(Math.min(...cs.map((c) => c.x))))
  const y0 = Math.max(0, Math.floor(Math.min(...cs.map((c) => c.y))))
  const x1 = Math.min(img.width, Math.ceil(Math.max(...cs.map((c) => c.x))))
  const y1 = Math.min(img.height, Math.ceil(Math.max(...cs.map((c) => c.y))))
  return {x: x0, y: y0, width: x1 - x0, height: y1 - y0}
}

/** Text regions of one frame, as rotated boxes in its pixels in reading order, and whether the detector kept only the largest. */
export async function detectLines(model: TextModel, img: RgbImage, o: ReadOptions = DEFAULT_READ_OPTIONS): Promise<{boxes: RotatedBox[]; truncated: boolean}> {
  const input = await detectorInput(img, o.detectorSide)
  const map = await model.detect(input.tensor, input.width, input.height)
  const found = await boxesFromMap(map, input.width, input.height, o.boxes)
  return {boxes: found.boxes.map((s) => toImage(s.box, input.scaleX, input.scaleY)), truncated: found.truncated}
}

/** The boxes `budget` lets a frame read: the first in reading order, while its columns last. */
export function withinBudget(boxes: RotatedBox[], budget: ReadBudget, o: ReadOptions = DEFAULT_READ_OPTIONS): RotatedBox[] {
  let columns = 0
  const kept: RotatedBox[] = []
  for (const box of boxes) {
    columns += paddedWidth(lineWidth(box, o.maxLineWidth), o.maxLineWidth, o.maxPadding)
    if (columns > budget.columns) break
    kept.push(box)
  }
  return kept
}

/**
 * Reads boxes of frames in recogniser runs of lines of one padded width (across frames); returns each frame's
 * lines in reading order. A line reads the same whatever it shares a run with.
 */
export async function recogniseLines(model: TextModel, items: {img: RgbImage; boxes: RotatedBox[]}[], o: ReadOptions = DEFAULT_READ_OPTIONS): Promise<TextLine[][]> {
  const jobs = items.flatMap((item, frame) =>
    item.boxes.map((box, line) => {
      const width = lineWidth(box, o.maxLineWidth)
      return {frame, line, box, img: item.img, width, padded: paddedWidth(width, o.maxLineWidth, o.maxPadding)}
    }),
  )
  const order = [...jobs].sort((a, b) => a.padded - b.padded)
  const read: TextLine[][] = items.map(() => [])
  for (let start = 0, end = 1; start < order.length; start = end, end = start + 1) {
    const most = Math.min(o.batch, Math.max(1, Math.floor(o.runColumns / order[start].padded)))
    while (end < order.length && end - start < most && order[end].padded === order[start].padded) end++
    const chunk = order.slice(start, end)
    const batchWidth = chunk[0].padded
    const tensor = new Float32Array(chunk.length * 3 * REC_HEIGHT * batchWidth)
    for (const [i, job] of chunk.entries()) {
      sampleLine(job.img, job.box, tensor, i, job.width, batchWidth)
      // A wide line takes milliseconds to sample: other requests (GET /health) are answered in between.
      await nextTurn()
    }
    const out = await model.recognise(tensor, chunk.length, batchWidth)
    const decoded = ctcDecode(out.probs, chunk.length, out.steps, out.classes, model.symbols)
    chunk.forEach((job, i) => (read[job.frame][job.line] = {text: decoded[i].text, confidence: decoded[i].confidence, box: upright(job.box, job.img)}))
  }
  return read.map((lines) => lines.filter((l) => l.text !== '' && l.confidence >= o.minConfidence))
}

/** What each frame reads: its lines, within its budget (by default the whole of `o.budget` each). */
export async function readText(model: TextModel, frames: RgbImage[], o: ReadOptions = DEFAULT_READ_OPTIONS, budgets: ReadBudget[] = frames.map(() => o.budget)): Promise<FrameText[]> {
  const items: {img: RgbImage; boxes: RotatedBox[]; truncated: boolean}[] = []
  for (const [i, img] of frames.entries()) {
    const found = await detectLines(model, img, o)
    const boxes = withinBudget(found.boxes, budgets[i], o)
    items.push({img, boxes, truncated: found.truncated || boxes.length < found.boxes.length})
  }
  const read = await recogniseLines(model, items, o)
  return read.map((lines, i) => ({lines, truncated: items[i].truncated}))
}
