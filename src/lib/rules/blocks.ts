/**
 * Lines read in a frame, grouped into blocks of text and put in reading order, so that a phrase written over
 * several lines (a poster's `BUY` / `CHEAP` / `PILLS`, a caption wrapped in two) reads as one text. The reader
 * gives each line with its box, in no reliable order. Two lines belong to one block when they are
 * - on one row: their heights overlap by at least half the smaller height, they are of similar height (at most
 *   1.5 times apart), and the horizontal gap between them is at most the larger height (a word space), or
 * - one under the other: they overlap horizontally, are of similar height, and the vertical gap between them is
 *   at most 0.8 times the smaller height (a line spacing; a title far above a caption stays apart).
 * Blocks are ordered by their top, then left; a block's lines by rows top to bottom (lines whose heights overlap
 * by half are one row) and left to right within a row.
 */
import type {LineBox} from './types.js'

const SIMILAR_HEIGHT = 1.5
const ROW_OVERLAP = 0.5
const WORD_GAP = 1
const LINE_GAP = 0.8

function overlap(a0: number, a1: number, b0: number, b1: number): number {
  return Math.min(a1, b1) - Math.max(a0, b0)
}

function similarHeight(a: LineBox, b: LineBox): boolean {
  return Math.max(a.height, b.height) <= SIMILAR_HEIGHT * Math.min(a.height, b.height)
}

function sameRow(a: LineBox, b: LineBox): boolean {
  return overlap(a.y, a.y + a.height, b.y, b.y + b.height) >= ROW_OVERLAP * Math.min(a.height, b.height)
}

function together(a: LineBox, b: LineBox): boolean {
  if (!similarHeight(a, b)) return false
  if (sameRow(a, b)) return -overlap(a.x, a.x + a.width, b.x, b.x + b.width) <= WORD_GAP * Math.max(a.height, b.height)
  return overlap(a.x, a.x + a.width, b.x, b.x + b.width) > 0 && -overlap(a.y, a.y + a.height, b.y, b.y + b.height) <= LINE_GAP * Math.min(a.height, b.height)
}

/** Orders boxes by rows top to bottom, left to right within a row. */
function readingOrder<T extends {box: LineBox}>(items: T[]): T[] {
  const rows: T[][] = []
  for (const item of [...items].sort((a, b) => a.box.y - b.box.y || a.box.x - b.box.x)) {
    const row = rows.find((r) => r.some((o) => sameRow(o.box, item.box)))
    if (row) row.push(item)
    else rows.push([item])
  }
  return rows.flatMap((r) => r.sort((a, b) => a.box.x - b.box.x))
}

/** The lines grouped into blocks, blocks and their lines in reading order. */
export function textBlocks<T extends {box: LineBox}>(lines: readonly T[]): T[][] {
  // Union-find over the pairs that belong together: a frame holds few lines, so all pairs are cheap.
  const parent = lines.map((_, i) => i)
  const root = (i: number): number => (parent[i] === i ? i : (parent[i] = root(parent[i])))
  for (let i = 0; i < lines.length; i++) {
    for (let j = i + 1; j < lines.length; j++) if (together(lines[i].box, lines[j].box)) parent[root(j)] = root(i)
  }
  const groups = new Map<number, T[]>()
  lines.forEach((line, i) => groups.set(root(i), [...(groups.get(root(i)) ?? []), line]))
  const top = (b: T[]) => Math.min(...b.map((l) => l.box.y))
  const left = (b: T[]) => Math.min(...b.map((l) => l.box.x))
  return [...groups.values()].map(readingOrder).sort((a, b) => top(a) - top(b) || left(a) - left(b))
}
