/**
 * Reading the text of frames: detect regions on each frame at a bounded resolution, then read every line of
 * every frame in recogniser batches of similar widths (few padded columns), and return the lines with their
 * boxes in the frame's own pixels.
 */
import type {RgbImage} from '../../types.js'
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
   * A run's lines are padded to its widest, and padding costs the recogniser as much as text: a line shares a
   * run only with lines at most this many times its width. A run costs little else (bench/README.md, "text":
   * three lines of 408, 664 and 672 columns took 125 ms of CPU in one run, 105 ms in three).
   */
  maxPadding: number
  boxes: BoxOptions
}

export const DEFAULT_READ_OPTIONS: ReadOptions = {detectorSide: 736, minConfidence: 0.5, maxLineWidth: 1280, batch: 8, maxPadding: 1.1, boxes: DEFAULT_BOX_OPTIONS}

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

/** Text regions of one frame, as rotated boxes in its pixels. */
export async function detectLines(model: TextModel, img: RgbImage, o: ReadOptions = DEFAULT_READ_OPTIONS): Promise<RotatedBox[]> {
  const input = await detectorInput(img, o.detectorSide)
  const map = await model.detect(input.tensor, input.width, input.height)
  return boxesFromMap(map, input.width, input.height, o.boxes).map((s) => toImage(s.box, input.scaleX, input.scaleY))
}

/** Reads boxes of frames, batched across frames by width; returns each frame's lines in reading order. */
export async function recogniseLines(model: TextModel, items: {img: RgbImage; boxes: RotatedBox[]}[], o: ReadOptions = DEFAULT_READ_OPTIONS): Promise<TextLine[][]> {
  const jobs = items.flatMap((item, frame) => item.boxes.map((box, line) => ({frame, line, box, img: item.img, width: lineWidth(box, o.maxLineWidth)})))
  const order = [...jobs].sort((a, b) => a.width - b.width)
  const read: TextLine[][] = items.map(() => [])
  for (let start = 0, end = 1; start < order.length; start = end, end = start + 1) {
    while (end < order.length && end - start < o.batch && order[end].width <= order[start].width * o.maxPadding) end++
    const chunk = order.slice(start, end)
    const batchWidth = Math.ceil(chunk.at(-1)!.width / 4) * 4
    const tensor = new Float32Array(chunk.length * 3 * REC_HEIGHT * batchWidth)
    chunk.forEach((job, i) => sampleLine(job.img, job.box, tensor, i, job.width, batchWidth))
    const out = await model.recognise(tensor, chunk.length, batchWidth)
    const decoded = ctcDecode(out.probs, chunk.length, out.steps, out.classes, model.symbols)
    chunk.forEach((job, i) => (read[job.frame][job.line] = {text: decoded[i].text, confidence: decoded[i].confidence, box: upright(job.box, job.img)}))
  }
  return read.map((lines) => lines.filter((l) => l.text !== '' && l.confidence >= o.minConfidence))
}

/** The lines of each frame. */
export async function readText(model: TextModel, frames: RgbImage[], o: ReadOptions = DEFAULT_READ_OPTIONS): Promise<TextLine[][]> {
  const items = []
  for (const img of frames) items.push({img, boxes: await detectLines(model, img, o)})
  return recogniseLines(model, items, o)
}
