/**
 * Every signal mod knows, in the order listings and results show them. How they open and combine is declared on
 * each signal (`combine`, `needs`) and checked here, when the registry is built (combination.ts): this list's
 * order decides none of it. Everything that lists signals derives from this
 * list: the result, segment and /health schemas (and their types), `--only`, `mod categories`, policy sections,
 * the engine and eval. A new signal is one folder beside these and one line here.
 */
import {clipSignal} from './clip/signal.js'
import {codesSignal} from './codes/signal.js'
import {runOrder} from './combination.js'
import {headSignal} from './head/signal.js'
import {nsfwSignal} from './nsfw/signal.js'
import {nudenetSignal} from './nudenet/signal.js'
import type {PolicyPlugins} from '../policy/section.js'
import {pdqSignal} from './pdq/signal.js'
import type {Addon, Signal} from './signal.js'
import {textSignal} from './text/engine-signal.js'

const REGISTERED = [
  clipSignal,
  nsfwSignal,
  nudenetSignal,
  headSignal,
  textSignal,
  codesSignal,
  pdqSignal,
] as const

// Declarations that contradict each other stop every start, not only the setups that open the signals concerned.
runOrder(REGISTERED)

export const SIGNALS: readonly Signal[] = REGISTERED

type Intersection<U> = (U extends unknown ? (x: U) => void : never) extends (x: infer I) => void ? I : never
type FieldsOf<S, K extends 'imageFields' | 'segmentFields'> = Intersection<
  S extends {readonly evidence: infer E} ? (E extends {readonly [k in K]?: infer F} ? NonNullable<F> : {}) : {}
>

/** The fields the registry's signals add to image results, as JSON Schema properties: what the result type is built from. */
export type ImageEvidenceFields = FieldsOf<(typeof REGISTERED)[number], 'imageFields'>
/** The fields they add to video segments. */
export type SegmentEvidenceFields = FieldsOf<(typeof REGISTERED)[number], 'segmentFields'>

export const SIGNAL_NAMES: readonly string[] = SIGNALS.map((s) => s.name)

/** The signals a policy switches (`specialists: {nsfw: false}`), each with its state when the policy says nothing. */
export const POLICY_SWITCHES: ReadonlyMap<string, boolean> = new Map(
  SIGNALS.filter((s) => s.policySwitch !== undefined).map((s) => [s.name, s.policySwitch === 'on']),
)

/** What the policy module reads policy files with: the signals' sections (in the order of their keys) and switches. */
export const POLICY_PLUGINS: PolicyPlugins = {
  sections: SIGNALS.flatMap((s) => (s.policy ? [{signal: s.name, section: s.policy}] : [])).sort((a, b) => a.section.key.localeCompare(b.section.key)),
  switches: POLICY_SWITCHES,
}

/** The models users pull on purpose for a signal (`mod models pull nudenet`): what the model commands loop over. */
export const ADDONS: readonly Addon[] = SIGNALS.flatMap((s) => (s.addon ? [s.addon] : []))

/** The signals that score categories on their own: what `--only` can name. */
export const MODEL_SIGNALS: readonly Signal[] = SIGNALS.filter((s) => s.kind === 'model')
