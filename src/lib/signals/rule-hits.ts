/**
 * What the rule signals (text rules, codes rules, hash lists) do to a frame's labels: a hit raises its category's
 * score to the hit's score (1 for a rule, the match's confidence for a hash list), whatever the other signals
 * said; a category that no opened signal scores (contact_info, known_bad, any under --only) is added, at 0 on a
 * frame without hits. They combine by `max` (combination.ts): they open after every signal that scores, and in
 * whatever order they apply the labels come out the same.
 */
import type {Category, Policy} from '../policy/types.js'
import type {ScoredLabel} from '../scoring/result.js'

export interface RuleCategories {
  /** The policy's categories the rules feed. */
  categories: Category[]
  /** Those no opened signal scores: added to every frame's labels. */
  only: Category[]
}

/** The categories the rules feed (`fed`), and which of them only they score, given the signals opened before (every scorer). */
export function ruleCategories(policy: Policy, fed: ReadonlySet<string>, opened: ReadonlyMap<string, {scores?: unknown}>): RuleCategories {
  const before = [...opened].filter(([, s]) => s.scores !== undefined).map(([name]) => name)
  const categories = policy.categories.filter((c) => fed.has(c.name))
  return {categories, only: categories.filter((c) => !before.some((name) => (c.signals[name] ?? 0) > 0))}
}

/** The labels with each hit category's score raised to its hit's (`hits`: category → score). */
export function applyHits(labels: ScoredLabel[], hits: ReadonlyMap<string, number>, {categories, only}: RuleCategories): ScoredLabel[] {
  const out = labels.map((l) => (hits.has(l.name) ? {...l, score: Math.max(l.score, hits.get(l.name) as number)} : l))
  for (const c of categories) {
    if (out.some((l) => l.name === c.name)) continue
    const score = hits.get(c.name)
    if (score !== undefined || only.includes(c)) out.push({name: c.name, score: score ?? 0, threshold: c.threshold, parent: c.parent, origin: c.origin})
  }
  return out
}
