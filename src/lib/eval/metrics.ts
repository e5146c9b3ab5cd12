/**
 * Moderation metrics from scored, labelled images (pure functions).
 *
 * An image is flagged with a label when its score is at least the label's threshold, as in scan results.
 * For each label L:
 *   recall     = flagged images that have L / images that have L
 *   precision  = flagged images that have L / images flagged with L (any truth)
 *   safe_fpr   = safe images flagged with L / safe images
 * and the two headline figures of the specification:
 *   average recall       = mean of the labels' recalls (labels with at least one image)
 *   safe images flagged  = safe images flagged with any label / safe images
 * A figure whose denominator is 0 is null.
 */

export interface ScoredSample {
  /** The image's labels; empty for a safe image. */
  truth: readonly string[]
  /** One score per label, in the order of the label list given with it. */
  scores: ArrayLike<number>
}

export interface LabelThreshold {
  name: string
  threshold: number
}

export interface LabelMetrics {
  name: string
  threshold: number
  /** Images that have the label. */
  positives: number
  true_positives: number
  false_positives: number
  false_negatives: number
  /** Safe images flagged with this label. */
  safe_flagged: number
  recall: number | null
  precision: number | null
  safe_fpr: number | null
}

/** counts[r][c]: images of row r (a label, or safe) that are flagged with column c (a label, or none at all). */
export interface Confusion {
  rows: string[]
  columns: string[]
  counts: number[][]
}

export interface SweepPoint {
  threshold: number
  recall: number | null
  precision: number | null
  safe_fpr: number | null
}

export interface EvalMetrics {
  images: number
  safe_images: number
  average_recall: number | null
  safe_flagged: number | null
  labels: LabelMetrics[]
  confusion: Confusion
  /** Per label: the figures at thresholds 0.05, 0.10 … 0.95. */
  sweep: Record<string, SweepPoint[]>
}

export const SWEEP_THRESHOLDS: readonly number[] = Array.from({length: 19}, (_, i) => Math.round((i + 1) * 5) / 100)
export const NONE_COLUMN = '(none)'
export const SAFE_ROW = 'safe'

const ratio = (a: number, b: number): number | null => (b === 0 ? null : a / b)

function countsAt(samples: readonly ScoredSample[], name: string, index: number, threshold: number) {
  let positives = 0
  let tp = 0
  let fp = 0
  let safe = 0
  let safeFlagged = 0
  for (const s of samples) {
    const has = s.truth.includes(name)
    const flagged = s.scores[index] >= threshold
    if (has) positives++
    if (has && flagged) tp++
    if (!has && flagged) fp++
    if (s.truth.length === 0) {
      safe++
      if (flagged) safeFlagged++
    }
  }
  return {positives, tp, fp, safe, safeFlagged}
}

export function labelMetrics(samples: readonly ScoredSample[], label: LabelThreshold, index: number): LabelMetrics {
  const c = countsAt(samples, label.name, index, label.threshold)
  return {
    name: label.name,
    threshold: label.threshold,
    positives: c.positives,
    true_positives: c.tp,
    false_positives: c.fp,
    false_negatives: c.positives - c.tp,
    safe_flagged: c.safeFlagged,
    recall: ratio(c.tp, c.positives),
    precision: ratio(c.tp, c.tp + c.fp),
    safe_fpr: ratio(c.safeFlagged, c.safe),
  }
}

export function sweep(samples: readonly ScoredSample[], name: string, index: number, thresholds = SWEEP_THRESHOLDS): SweepPoint[] {
  return thresholds.map((threshold) => {
    const c = countsAt(samples, name, index, threshold)
    return {threshold, recall: ratio(c.tp, c.positives), precision: ratio(c.tp, c.tp + c.fp), safe_fpr: ratio(c.safeFlagged, c.safe)}
  })
}

export function confusion(samples: readonly ScoredSample[], labels: readonly LabelThreshold[]): Confusion {
  const present = labels.filter((l) => samples.some((s) => s.truth.includes(l.name))).map((l) => l.name)
  const rows = [...present, SAFE_ROW]
  const columns = [...labels.map((l) => l.name), NONE_COLUMN]
  const counts = rows.map(() => columns.map(() => 0))
  for (const s of samples) {
    const flagged = labels.map((l, i) => s.scores[i] >= l.threshold)
    const rowsOf = s.truth.length === 0 ? [rows.length - 1] : s.truth.map((t) => rows.indexOf(t)).filter((r) => r >= 0)
    for (const r of rowsOf) {
      flagged.forEach((f, c) => f && counts[r][c]++)
      if (!flagged.includes(true)) counts[r][columns.length - 1]++
    }
  }
  return {rows, columns, counts}
}

export function computeMetrics(samples: readonly ScoredSample[], labels: readonly LabelThreshold[]): EvalMetrics {
  const perLabel = labels.map((l, i) => labelMetrics(samples, l, i))
  const recalls = perLabel.map((m) => m.recall).filter((r): r is number => r !== null)
  const safe = samples.filter((s) => s.truth.length === 0)
  const safeFlagged = safe.filter((s) => labels.some((l, i) => s.scores[i] >= l.threshold)).length
  return {
    images: samples.length,
    safe_images: safe.length,
    average_recall: recalls.length === 0 ? null : recalls.reduce((a, b) => a + b, 0) / recalls.length,
    safe_flagged: ratio(safeFlagged, safe.length),
    labels: perLabel,
    confusion: confusion(samples, labels),
    sweep: Object.fromEntries(labels.map((l, i) => [l.name, sweep(samples, l.name, i)])),
  }
}

export interface CurvePoint {
  threshold: number
  recall: number
  precision: number
}

/**
 * The precision-recall curve of one label: one point per distinct score, from the highest threshold down,
 * at most maxPoints points (evenly picked; the last, lowest threshold is always kept). Empty without positives.
 */
export function prCurve(samples: readonly ScoredSample[], name: string, index: number, maxPoints = 200): CurvePoint[] {
  const scored = samples.map((s) => ({score: s.scores[index], has: s.truth.includes(name)})).sort((a, b) => b.score - a.score)
  const positives = scored.filter((s) => s.has).length
  if (positives === 0) return []
  const points: CurvePoint[] = []
  let tp = 0
  let flagged = 0
  for (let i = 0; i < scored.length; i++) {
    flagged++
    if (scored[i].has) tp++
    if (i + 1 < scored.length && scored[i + 1].score === scored[i].score) continue
    points.push({threshold: scored[i].score, recall: tp / positives, precision: tp / flagged})
  }
  if (points.length <= maxPoints) return points
  const step = (points.length - 1) / (maxPoints - 1)
  return Array.from({length: maxPoints}, (_, k) => points[Math.round(k * step)])
}

export interface Histogram {
  /** Lower edges of the bins; the last bin includes 1. */
  edges: number[]
  positives: number[]
  safe: number[]
  /** Images with other labels only. */
  others: number[]
}

export function histogram(samples: readonly ScoredSample[], name: string, index: number, bins = 20): Histogram {
  const edges = Array.from({length: bins}, (_, i) => Math.round((i / bins) * 1e6) / 1e6)
  const h: Histogram = {edges, positives: edges.map(() => 0), safe: edges.map(() => 0), others: edges.map(() => 0)}
  for (const s of samples) {
    const bin = Math.min(bins - 1, Math.max(0, Math.floor(s.scores[index] * bins)))
    if (s.truth.includes(name)) h.positives[bin]++
    else if (s.truth.length === 0) h.safe[bin]++
    else h.others[bin]++
  }
  return h
}
