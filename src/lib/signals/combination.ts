/**
 * How a signal's findings combine with the others', declared on each signal (`Signal.combine`) and checked when a
 * registry is built, so that the order signals are listed in decides nothing. A frame's labels are made in three
 * steps:
 * 1. `mean`: the signals' `scores` enter each category's weighted mean (scoring/combine.ts); a mean does not
 *    depend on the order of its terms.
 * 2. `revise`: each such signal's `adjust` may lower or replace the combined scores (NudeNet caps the nudity
 *    family, a trained head blends its own): these do not commute, so each names the revisers it comes `after`.
 * 3. `max`: each such signal's `adjust` raises a category to at least its hit's score (a rule hit to 1, a
 *    hash-list match to its confidence), which no later step may undo; maxima commute.
 * Signals open in the same order (`runOrder`): what a signal `needs` opens before it, every `mean` signal before
 * any `revise` one, every `revise` one before any `max` one; signals nothing orders go by name.
 */
import {ModError} from '../errors.js'

export type Combination =
  | {readonly mode: 'mean'}
  | {readonly mode: 'revise'; readonly after?: readonly string[]}
  | {readonly mode: 'max'}

/** What the order is read from: a signal's name, kind, needs and combination. */
export interface Combining {
  readonly name: string
  readonly kind: 'model' | 'labels'
  readonly needs?: readonly string[]
  readonly combine: Combination
}

const STEP = {mean: 0, revise: 1, max: 2} as const

function invalid(message: string): ModError {
  return new ModError('internal', `the signals' combination declarations contradict each other: ${message}`)
}

/** The declarations one signal makes on its own: a signal built on combined labels cannot enter their mean, and `after` names known revisers. */
function checkOwn(s: Combining, byName: ReadonlyMap<string, Combining>): void {
  if (s.kind === 'labels' && s.combine.mode === 'mean') throw invalid(`${s.name} builds on the combined labels, so its scores cannot enter their mean`)
  for (const name of s.combine.mode === 'revise' ? (s.combine.after ?? []) : []) {
    const other = byName.get(name)
    if (other === s) throw invalid(`${s.name} revises after itself`)
    if (other === undefined) throw invalid(`${s.name} revises after ${name}, which is not a signal`)
    if (other.combine.mode === 'max') throw invalid(`${s.name} revises after ${name}, whose maximum must come after every revision`)
  }
}

/** The signals that must come before `s`: what it needs and revises after, and every signal of an earlier step. */
function before(s: Combining, signals: readonly Combining[]): Combining[] {
  const named = new Set([...(s.needs ?? []), ...(s.combine.mode === 'revise' ? (s.combine.after ?? []) : [])])
  return signals.filter((o) => o !== s && (named.has(o.name) || STEP[o.combine.mode] < STEP[s.combine.mode]))
}

/**
 * The order signals open and combine in, whatever the order they are listed in; a ModError `internal` when their
 * declarations contradict each other (two of one name, a reviser after a maximum or after an unknown signal, a
 * signal that must come both before and after another).
 */
export function runOrder<S extends Combining>(signals: readonly S[]): S[] {
  const byName = new Map(signals.map((s) => [s.name, s]))
  if (byName.size !== signals.length) throw invalid('two signals share a name')
  for (const s of signals) checkOwn(s, byName)
  const waits = new Map(signals.map((s) => [s, before(s, signals)]))
  const order: S[] = []
  const left = [...signals].sort((a, b) => (a.name < b.name ? -1 : 1))
  while (left.length > 0) {
    const next = left.findIndex((s) => (waits.get(s) ?? []).every((o) => order.includes(o as S)))
    if (next < 0) throw invalid(`${left.map((s) => s.name).join(', ')} wait on each other (needs, after, or their steps)`)
    order.push(...left.splice(next, 1))
  }
  return order
}

/** An opened signal must do what its declaration says: give scores for the mean, or adjust labels after it. */
export function checkOpened(s: Combining, open: {scores?: unknown; adjust?: unknown}): void {
  const {mode} = s.combine
  if (open.scores !== undefined && mode !== 'mean') throw invalid(`${s.name} gives scores but declares ${mode}, not mean`)
  if (open.adjust !== undefined && mode === 'mean') throw invalid(`${s.name} adjusts the combined labels but declares mean`)
}
