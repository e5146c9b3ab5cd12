/**
 * Signals → one score per category. Each category names the model signals that feed it and their weights
 * (policy defaults: the zero-shot prompts for every category, the NSFW specialist as well for nudity,
 * sexual_activity and suggestive). Its score is the weighted mean of the calibrated scores of the signals
 * that ran on the image; a category no loaded signal feeds is not evaluated (left out of the labels and named
 * in `not_evaluated`). A trained head blends in afterwards (head.ts).
 */
import type {Category, ModelSignal, Policy} from '../policy/types.js'
import type {ScoredLabel} from './result.js'

/** Per signal that ran on a frame: category name → calibrated score in [0, 1]. */
export type FrameSignals = Partial<Record<ModelSignal, ReadonlyMap<string, number>>>

/** The model signals a category is fed by (weight above 0), in a fixed order. */
export function feedingSignals(category: Category): ModelSignal[] {
  return (Object.keys(category.signals) as ModelSignal[]).filter((s) => (category.signals[s] ?? 0) > 0).sort()
}

/** Names of the categories that none of the `available` signals feeds. */
export function notEvaluated(policy: Policy, available: ReadonlySet<ModelSignal>): string[] {
  return policy.categories.filter((c) => !feedingSignals(c).some((s) => available.has(s))).map((c) => c.name)
}

export function combineSignals(policy: Policy, signals: FrameSignals): ScoredLabel[] {
  const labels: ScoredLabel[] = []
  for (const category of policy.categories) {
    let sum = 0
    let weight = 0
    for (const signal of feedingSignals(category)) {
      const score = signals[signal]?.get(category.name)
      if (score === undefined) continue
      const w = category.signals[signal] as number
      sum += w * score
      weight += w
    }
    if (weight === 0) continue
    labels.push({
      name: category.name,
      score: sum / weight,
      threshold: category.threshold,
      parent: category.parent,
      origin: category.origin,
    })
  }
  return labels
}
