/**
 * NudeNet's `_postprocess`: from the model's output for one frame ([22, 2100]: box centre and size in input
 * pixels, then 18 class scores, per candidate) to detections in the frame's pixels. A candidate counts with its
 * best class when that scores at least CANDIDATE_SCORE; then OpenCV's `cv2.dnn.NMSBoxes` (across classes, as the
 * package calls it) keeps, best score first, each candidate scoring above NMS_SCORE that overlaps no kept one by
 * more than NMS_IOU. Boxes are [x, y, width, height], clipped to the frame and truncated to whole pixels.
 */
import {iou} from '../overlap.js'
import {NUDENET_ANCHORS, NUDENET_LABELS, NUDENET_SIZE, type NudenetLabel} from './labels.js'

export const CANDIDATE_SCORE = 0.2
export const NMS_SCORE = 0.25
export const NMS_IOU = 0.45

export interface Detection {
  label: NudenetLabel
  score: number
  /** [x, y, width, height] in the frame's pixels. */
  box: [number, number, number, number]
}

interface Candidate {
  label: number
  score: number
  box: [number, number, number, number]
}

/** `output` is one frame's [22, 2100] slice; width and height are the frame's. */
export function decodeNudenet(output: Float32Array, width: number, height: number): Detection[] {
  const n = NUDENET_ANCHORS
  const classes = NUDENET_LABELS.length
  const side = Math.max(width, height)
  const scale = side / NUDENET_SIZE
  const candidates: Candidate[] = []
  for (let i = 0; i < n; i++) {
    let best = 0
    let score = output[4 * n + i]
    for (let c = 1; c < classes; c++) {
      const s = output[(4 + c) * n + i]
      if (s > score) {
        score = s
        best = c
      }
    }
    if (score < CANDIDATE_SCORE) continue
    const w0 = output[2 * n + i]
    const h0 = output[3 * n + i]
    const x = Math.max(0, Math.min((output[i] - w0 / 2) * scale, width))
    const y = Math.max(0, Math.min((output[n + i] - h0 / 2) * scale, height))
    candidates.push({label: best, score, box: [x, y, Math.min(w0 * scale, width - x), Math.min(h0 * scale, height - y)]})
  }
  // A stable sort, best first: ties keep the output's order, as OpenCV's stable_sort does.
  const order = candidates.filter((c) => c.score > NMS_SCORE).sort((a, b) => b.score - a.score)
  const kept: Candidate[] = []
  for (const c of order) {
    if (kept.every((k) => iou(k.box, c.box) <= NMS_IOU)) kept.push(c)
  }
  return kept.map((c) => ({
    label: NUDENET_LABELS[c.label],
    score: c.score,
    box: [Math.trunc(c.box[0]), Math.trunc(c.box[1]), Math.trunc(c.box[2]), Math.trunc(c.box[3])],
  }))
}
