/**
 * The detector's probability map to text boxes, as PaddleOCR's DB post-processing does it but without
 * OpenCV: threshold the map, label its connected components, fit each a minimum-area rectangle, score it by the
 * mean probability inside, and grow it by the unclip distance (area × ratio / perimeter) the detector was
 * trained to expect, since DB maps shrink each text region.
 */
import {setImmediate as nextTurn} from 'node:timers/promises'

export interface Point {
  x: number
  y: number
}

/**
 * A rotated rectangle: its centre, its half-extents along its own axes, and the unit vector of its width
 * axis (the reading direction). Corners are centre ± halfW·u ± halfH·v with v = u rotated +90°.
 */
export interface RotatedBox {
  cx: number
  cy: number
  halfW: number
  halfH: number
  ux: number
  uy: number
}

export interface BoxOptions {
  /** A map pixel is text above this probability. */
  threshold: number
  /** A region is kept when the mean probability inside its rectangle reaches this. */
  boxThreshold: number
  /** How far to grow each rectangle: distance = area × ratio / perimeter. */
  unclipRatio: number
  /** Regions whose shorter side is below this (map pixels) are noise. */
  minSide: number
  /** At most this many regions, the largest first. */
  maxBoxes: number
}

export const DEFAULT_BOX_OPTIONS: BoxOptions = {threshold: 0.3, boxThreshold: 0.6, unclipRatio: 1.5, minSide: 3, maxBoxes: 200}

export interface ScoredBox {
  box: RotatedBox
  score: number
}

/** The four corners, clockwise from top-left of the reading direction. */
export function corners(b: RotatedBox): Point[] {
  const vx = -b.uy
  const vy = b.ux
  const at = (sw: number, sh: number) => ({x: b.cx + sw * b.halfW * b.ux + sh * b.halfH * vx, y: b.cy + sw * b.halfW * b.uy + sh * b.halfH * vy})
  return [at(-1, -1), at(1, -1), at(1, 1), at(-1, 1)]
}

/** Labels 8-connected regions of `mask`; returns each region's pixel indices. */
export function components(mask: Uint8Array, width: number, height: number): number[][] {
  const label = new Int32Array(width * height).fill(-1)
  const regions: number[][] = []
  const stack: number[] = []
  for (let start = 0; start < mask.length; start++) {
    if (!mask[start] || label[start] !== -1) continue
    const id = regions.length
    const pixels: number[] = []
    label[start] = id
    stack.push(start)
    while (stack.length > 0) {
      const p = stack.pop()!
      pixels.push(p)
      const x = p % width
      const y = (p - x) / width
      for (let dy = -1; dy <= 1; dy++) {
        const ny = y + dy
        if (ny < 0 || ny >= height) continue
        for (let dx = -1; dx <= 1; dx++) {
          const nx = x + dx
          if (nx < 0 || nx >= width) continue
          const q = ny * width + nx
          if (mask[q] && label[q] === -1) {
            label[q] = id
            stack.push(q)
          }
        }
      }
    }
    regions.push(pixels)
  }
  return regions
}

/** Convex hull (Andrew's monotone chain) of the pixel squares' corners, counter-clockwise. */
function hull(pixels: number[], width: number): Point[] {
  // Only each row's extreme pixels can be on the hull.
  const rows = new Map<number, [number, number]>()
  for (const p of pixels) {
    const x = p % width
    const y = (p - x) / width
    const r = rows.get(y)
    if (!r) rows.set(y, [x, x])
    else {
      if (x < r[0]) r[0] = x
      if (x > r[1]) r[1] = x
    }
  }
  const pts: Point[] = []
  for (const [y, [a, b]] of rows) pts.push({x: a, y}, {x: a, y: y + 1}, {x: b + 1, y}, {x: b + 1, y: y + 1})
  return convexHull(pts)
}

/** Convex hull (Andrew's monotone chain) of points, counter-clockwise. */
function convexHull(points: Point[]): Point[] {
  const pts = [...points]
  pts.sort((p, q) => p.x - q.x || p.y - q.y)
  const cross = (o: Point, a: Point, b: Point) => (a.x - o.x) * (b.y - o.y) - (a.y - o.y) * (b.x - o.x)
  const lower: Point[] = []
  for (const p of pts) {
    while (lower.length >= 2 && cross(lower[lower.length - 2], lower[lower.length - 1], p) <= 0) lower.pop()
    lower.push(p)
  }
  const upper: Point[] = []
  for (let i = pts.length - 1; i >= 0; i--) {
    const p = pts[i]
    while (upper.length >= 2 && cross(upper[upper.length - 2], upper[upper.length - 1], p) <= 0) upper.pop()
    upper.push(p)
  }
  return [...lower.slice(0, -1), ...upper.slice(0, -1)]
}

/**
 * The minimum-area rectangle around a convex polygon (one of its sides lies on a hull edge). Its width axis is
 * the axis closer to horizontal, turned to point right, unless the rectangle is much taller than wide.
 */
export function minAreaRect(poly: Point[]): RotatedBox {
  let best: RotatedBox | undefined
  let bestArea = Infinity
  for (let i = 0; i < poly.length; i++) {
    const a = poly[i]
    const b = poly[(i + 1) % poly.length]
    const len = Math.hypot(b.x - a.x, b.y - a.y)
    if (len === 0) continue
    const ux = (b.x - a.x) / len
    const uy = (b.y - a.y) / len
    let minU = Infinity
    let maxU = -Infinity
    let minV = Infinity
    let maxV = -Infinity
    for (const p of poly) {
      const u = p.x * ux + p.y * uy
      const v = -p.x * uy + p.y * ux
      minU = Math.min(minU, u)
      maxU = Math.max(maxU, u)
      minV = Math.min(minV, v)
      maxV = Math.max(maxV, v)
    }
    const area = (maxU - minU) * (maxV - minV)
    if (area < bestArea) {
      bestArea = area
      const mu = (minU + maxU) / 2
      const mv = (minV + maxV) / 2
      best = {cx: mu * ux - mv * uy, cy: mu * uy + mv * ux, halfW: (maxU - minU) / 2, halfH: (maxV - minV) / 2, ux, uy}
    }
  }
  return orient(best ?? {cx: poly[0].x, cy: poly[0].y, halfW: 0, halfH: 0, ux: 1, uy: 0})
}

/** Turns the rectangle so that its width axis is the reading direction (near horizontal, pointing right). */
function orient(b: RotatedBox): RotatedBox {
  let r = b
  // Pick the axis closer to horizontal as the width axis.
  if (Math.abs(r.uy) > Math.abs(r.ux)) r = {...r, halfW: r.halfH, halfH: r.halfW, ux: r.uy, uy: -r.ux}
  if (r.ux < 0) r = {...r, ux: -r.ux, uy: -r.uy}
  // A region much taller than wide is a vertical line of text: read it top to bottom.
  if (r.halfH >= 1.5 * r.halfW) r = {...r, halfW: r.halfH, halfH: r.halfW, ux: -r.uy, uy: r.ux}
  return r
}

/** Mean of `prob` over the map pixels whose centres fall inside the rectangle. */
function meanInside(prob: Float32Array, width: number, height: number, b: RotatedBox): number {
  const cs = corners(b)
  const x0 = Math.max(0, Math.floor(Math.min(...cs.map((c) => c.x))))
  const x1 = Math.min(width - 1, Math.ceil(Math.max(...cs.map((c) => c.x))))
  const y0 = Math.max(0, Math.floor(Math.min(...cs.map((c) => c.y))))
  const y1 = Math.min(height - 1, Math.ceil(Math.max(...cs.map((c) => c.y))))
  let sum = 0
  let n = 0
  for (let y = y0; y <= y1; y++) {
    for (let x = x0; x <= x1; x++) {
      const dx = x + 0.5 - b.cx
      const dy = y + 0.5 - b.cy
      if (Math.abs(dx * b.ux + dy * b.uy) > b.halfW || Math.abs(-dx * b.uy + dy * b.ux) > b.halfH) continue
      sum += prob[y * width + x]
      n++
    }
  }
  return n === 0 ? 0 : sum / n
}

/** How far `b`'s centre lies off the line through `a`'s centre along `a`'s reading direction. */
function offLine(a: RotatedBox, b: RotatedBox): number {
  return Math.abs(-(b.cx - a.cx) * a.uy + (b.cy - a.cy) * a.ux)
}

function sameLine(a: RotatedBox, b: RotatedBox): boolean {
  return offLine(a, b) < 0.5 * Math.min(a.halfH, b.halfH) && Math.max(a.halfH, b.halfH) < 1.5 * Math.min(a.halfH, b.halfH)
}

/**
 * Joins the boxes of words on one line that touch or nearly touch (a gap under half the line's height): the
 * recogniser reads a line better than its words apart, and grown word boxes would overlap and read a letter
 * of their neighbour twice.
 */
export function joinLines(boxes: ScoredBox[]): ScoredBox[] {
  const out = [...boxes]
  for (let merged = true; merged; ) {
    merged = false
    for (let i = 0; i < out.length && !merged; i++) {
      for (let j = i + 1; j < out.length && !merged; j++) {
        const a = out[i].box
        const b = out[j].box
        if (!sameLine(a, b) || Math.abs(a.ux * b.uy - a.uy * b.ux) > Math.sin((10 * Math.PI) / 180)) continue
        const gap = Math.abs((b.cx - a.cx) * a.ux + (b.cy - a.cy) * a.uy) - a.halfW - b.halfW
        if (gap > Math.max(a.halfH, b.halfH)) continue
        const joined = minAreaRect(convexHull([...corners(a), ...corners(b)]))
        const weight = a.halfW + b.halfW
        out[i] = {box: joined, score: (out[i].score * a.halfW + out[j].score * b.halfW) / weight}
        out.splice(j, 1)
        merged = true
      }
    }
  }
  return out
}

/**
 * Text boxes in map coordinates, in reading order: top to bottom, then left to right within a line; `truncated`
 * when there were more regions than `maxBoxes` (the smallest left out). The event loop gets a turn between the
 * steps, each a few milliseconds on a full map.
 */
export async function boxesFromMap(prob: Float32Array, width: number, height: number, o: BoxOptions = DEFAULT_BOX_OPTIONS): Promise<{boxes: ScoredBox[]; truncated: boolean}> {
  const mask = new Uint8Array(prob.length)
  for (let i = 0; i < prob.length; i++) mask[i] = prob[i] > o.threshold ? 1 : 0
  const found = components(mask, width, height).filter((r) => r.length >= o.minSide * o.minSide)
  const regions = found.sort((a, b) => b.length - a.length).slice(0, o.maxBoxes)
  await nextTurn()
  const out: ScoredBox[] = []
  for (const [i, region] of regions.entries()) {
    if (i % 32 === 31) await nextTurn()
    const box = minAreaRect(hull(region, width))
    if (Math.min(box.halfW, box.halfH) * 2 < o.minSide) continue
    const score = meanInside(prob, width, height, box)
    if (score < o.boxThreshold) continue
    const w = box.halfW * 2
    const h = box.halfH * 2
    const d = (w * h * o.unclipRatio) / (2 * (w + h))
    out.push({box: {...box, halfW: box.halfW + d, halfH: box.halfH + d}, score})
  }
  await nextTurn()
  const boxes = joinLines(out).sort((p, q) => {
    const a = p.box
    const b = q.box
    return sameLine(a, b) ? (a.cx - b.cx) * a.ux + (a.cy - b.cy) * a.uy : a.cy - b.cy
  })
  return {boxes, truncated: found.length > o.maxBoxes}
}
