/** Labels → the moderation result of CONTRACTS §2. */
import type {Label, ModerationResult, Origin} from '../types.js'
import {roundScore} from './calibrate.js'

export interface LabelInput {
  name: string
  score: number
  threshold: number
  parent: string | null
  origin: Origin
}

/**
 * The one place a label's score is rounded and its violation decided. The decision uses the rounded score so
 * that a result never shows a score equal to its threshold without the violation.
 */
export function makeLabel(input: LabelInput): Label {
  const score = roundScore(Math.min(1, Math.max(0, input.score)))
  return {
    name: input.name,
    score,
    threshold: input.threshold,
    parent: input.parent,
    violated: score >= input.threshold,
    origin: input.origin,
  }
}

function byScoreThenName(a: Label, b: Label): number {
  return b.score - a.score || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)
}

/** Labels sorted by score (descending, then name); violations are labels at or above their threshold. A
 * violated child does not add its parent: each label stands on its own score. */
export function buildResult(source: string, labels: readonly Label[]): ModerationResult {
  const sorted = labels.map((label) => makeLabel(label)).sort(byScoreThenName)
  const violations = sorted
    .filter((label) => label.violated)
    .map((label) => ({name: label.name, confidence: label.score, parent: label.parent, threshold: label.threshold}))
  return {source, is_safe: violations.length === 0, violations, labels: sorted}
}

/** For animated images: every label keeps its highest score over the frames. */
export function mergeFrameLabels(frames: readonly (readonly Label[])[]): Label[] {
  const merged = new Map<string, Label>()
  for (const frame of frames) {
    for (const label of frame) {
      const seen = merged.get(label.name)
      if (seen === undefined || label.score > seen.score) merged.set(label.name, makeLabel(label))
    }
  }
  return [...merged.values()]
}
