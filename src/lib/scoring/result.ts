/** Labels → the moderation result. Scores stay floats until here, where they are rounded once. */
import type {Static} from '../typebox.js'

import type {Label as LabelSchema, Origin, Violation as ViolationSchema} from '../schema-parts.js'
import {roundScore} from './calibrate.js'

type Label = Static<typeof LabelSchema>

/** A result before the signals' evidence is added (see schemas.ts for the whole result). */
export interface ScoredResult {
  source: string
  is_safe: boolean
  violations: Static<typeof ViolationSchema>[]
  labels: Label[]
  not_evaluated: string[]
}

/** A label as the signals score it, before rounding and the violation decision. */
export interface ScoredLabel {
  name: string
  score: number
  threshold: number
  parent: string | null
  origin: Origin
}

/**
 * The one place a score is rounded (to 4 decimals, clamped to [0, 1]) and its violation decided, for images and
 * video frames alike. The decision uses the rounded score so that a result never shows a score equal to its
 * threshold without the violation.
 */
export function decideViolation(score: number, threshold: number): {score: number; violated: boolean} {
  const rounded = roundScore(Math.min(1, Math.max(0, score)))
  return {score: rounded, violated: rounded >= threshold}
}

export function finishLabel(input: ScoredLabel): Label {
  const {score, violated} = decideViolation(input.score, input.threshold)
  return {name: input.name, score, threshold: input.threshold, parent: input.parent, violated, origin: input.origin}
}

function byScoreThenName(a: Label, b: Label): number {
  return b.score - a.score || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)
}

/**
 * Labels sorted by score (descending, then name); violations are labels at or above their threshold. A
 * violated child does not add its parent: each label stands on its own score. `notEvaluated` names the
 * categories of the policy that no loaded signal could score.
 */
export function buildResult(source: string, labels: readonly ScoredLabel[], notEvaluated: readonly string[] = []): ScoredResult {
  const sorted = labels.map(finishLabel).sort(byScoreThenName)
  const violations = sorted
    .filter((label) => label.violated)
    .map((label) => ({name: label.name, confidence: label.score, parent: label.parent, threshold: label.threshold}))
  return {source, is_safe: violations.length === 0, violations, labels: sorted, not_evaluated: [...notEvaluated]}
}

/** For animated images: every label keeps its highest score over the frames. */
export function mergeFrameLabels(frames: readonly (readonly ScoredLabel[])[]): ScoredLabel[] {
  const merged = new Map<string, ScoredLabel>()
  for (const frame of frames) {
    for (const label of frame) {
      const seen = merged.get(label.name)
      if (seen === undefined || label.score > seen.score) merged.set(label.name, label)
    }
  }
  return [...merged.values()]
}
