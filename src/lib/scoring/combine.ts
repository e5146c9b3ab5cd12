/**
 * Signals → one score per category. A signal feeds a category with a weight (policy defaults: the zero-shot
 * prompts for every category, the NSFW specialist as well for nudity, sexual_activity and suggestive). The
 * category's score is the weighted mean of the calibrated scores of the signals that ran on the image; a
 * category no loaded signal feeds is not evaluated (left out of the labels and named in `not_evaluated`).
 * Signals that build on the combined labels (a trained head) apply afterwards.
 */
import type {Category, Policy} from '../policy/types.js'
import type {ScoredLabel} from './result.js'

/** Per signal that ran on a frame: category name → calibrated score in [0, 1]. */
export type FrameSignals = Readonly<Record<string, ReadonlyMap<string, number>>>

/** How much a signal counts in a category's score; 0 when it does not feed it. */
export type SignalWeight = (signal: string, category: Category) => number

/** The weights the policy gives (`signals: {clip: 1, nsfw: 3}`). */
export const policyWeight: SignalWeight = (signal, category) => category.signals[signal] ?? 0

/** Of the `signals` named, those that feed `category` (weight above 0), in a fixed order. */
export function feedingSignals(category: Category, signals: Iterable<string>, weight: SignalWeight = policyWeight): string[] {
  return [...signals].filter((s) => weight(s, category) > 0).sort()
}

/** Names of the categories that none of the `available` signals feeds. */
export function notEvaluated(policy: Policy, available: Iterable<string>, weight: SignalWeight = policyWeight): string[] {
  const names = [...available]
  return policy.categories.filter((c) => feedingSignals(c, names, weight).length === 0).map((c) => c.name)
}

/** The signals that scored `category` on the frame, each with its weight and score. */
function scorers(category: Category, signals: FrameSignals, weight: SignalWeight): {signal: string; w: number; score: number}[] {
  return feedingSignals(category, Object.keys(signals), weight).flatMap((signal) => {
    const score = signals[signal]?.get(category.name)
    return score === undefined ? [] : [{signal, w: weight(signal, category), score}]
  })
}

export function combineSignals(policy: Policy, signals: FrameSignals, weight: SignalWeight = policyWeight): ScoredLabel[] {
  const labels: ScoredLabel[] = []
  for (const category of policy.categories) {
    const parts = scorers(category, signals, weight)
    const total = parts.reduce((t, p) => t + p.w, 0)
    const sum = parts.reduce((t, p) => t + p.w * p.score, 0)
    if (total === 0) continue
    labels.push({
      name: category.name,
      score: sum / total,
      threshold: category.threshold,
      parent: category.parent,
      origin: category.origin,
    })
  }
  return labels
}

/**
 * How `category`'s score is made from `own`'s score on the frame: score = rest + share x own's score (the weighted
 * mean above), so that a calibration of `own` can be tried through the whole combination. Undefined when `own` did
 * not score it.
 */
export function shareOf(category: Category, signals: FrameSignals, own: string, weight: SignalWeight = policyWeight): {share: number; rest: number} | undefined {
  const parts = scorers(category, signals, weight)
  const total = parts.reduce((t, p) => t + p.w, 0)
  const mine = parts.find((p) => p.signal === own)
  if (mine === undefined) return undefined
  return {share: mine.w / total, rest: parts.reduce((t, p) => t + (p === mine ? 0 : p.w * p.score), 0) / total}
}
