/** Overlap of boxes, and the evidence of an image's frames with what two frames both found listed once. */
/** Intersection over union of two [x, y, width, height] boxes (0 when they do not overlap). */
export function iou(a: readonly number[], b: readonly number[]): number {
  const w = Math.min(a[0] + a[2], b[0] + b[2]) - Math.max(a[0], b[0])
  const h = Math.min(a[1] + a[3], b[1] + b[3]) - Math.max(a[1], b[1])
  if (w <= 0 || h <= 0) return 0
  const inter = w * h
  return inter / (a[2] * a[3] + b[2] * b[3] - inter)
}

/** Boxes overlapping at least this much hold the same finding when it is the same (same line, code, label). */
const SAME_PLACE = 0.5

/**
 * The findings of an image's frames, each listed once: a finding `same` as one listed before it, at the same place,
 * is left out. The frames of a still animation, and the two views of an image with transparency (onto white and
 * onto black), find the same lines, codes and regions again.
 */
export function onceEach<T extends {box: readonly number[]}>(items: readonly T[], same: (a: T, b: T) => boolean): T[] {
  const kept: T[] = []
  for (const item of items) if (!kept.some((k) => same(k, item) && iou(k.box, item.box) >= SAME_PLACE)) kept.push(item)
  return kept
}
