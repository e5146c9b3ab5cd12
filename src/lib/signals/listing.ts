/**
 * The category listing (`mod categories`, GET /v1/categories) and each category's state (GET /health, /ready):
 * what feeds each label and whether it is evaluated in this setup, without loading a model.
 */
import type {Policy, PresetName} from '../policy/types.js'
import type {CategoriesResult, CategoryListing, CategoryState, Coverage} from '../types.js'
import type {SignalChoice} from './core.js'
import type {ExtraLabel, Signal, SignalSetup} from './signal.js'

/** Which signals score in a setup, and why each other one does not (switched off, or not installed). */
export interface Availability {
  running: ReadonlySet<string>
  why: ReadonlyMap<string, string>
}

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e)
}

/**
 * After a load, the signals the inference core opened (`opened`); before it, those whose model is there
 * (each signal's `missing` check reads no weights), and whose needs are met.
 */
export async function availability(setup: SignalSetup, choice: SignalChoice, opened?: ReadonlySet<string>): Promise<Availability> {
  const running = new Set<string>()
  const why = new Map(choice.off)
  const signalSetup = {...setup, policy: choice.policy}
  for (const s of choice.active) {
    if (opened?.has(s.name)) {
      running.add(s.name)
      continue
    }
    let reason: string | undefined
    try {
      reason = await s.missing?.(signalSetup)
    } catch (e) {
      reason = `it cannot be opened: ${message(e)}`
    }
    if (opened !== undefined) reason ??= 'not installed'
    const unmet = (s.needs ?? []).filter((n) => !running.has(n))
    if (reason === undefined && unmet.length > 0) reason = `it needs ${unmet.join(', ')}`
    if (reason === undefined) running.add(s.name)
    else why.set(s.name, reason)
  }
  return {running, why}
}

/** Per category of the policy: evaluated by the model signals that run and feed it, or why it is not. */
export function categoryStates(registry: readonly Signal[], policy: Policy, available: Availability): CategoryState[] {
  return policy.categories.map((c) => {
    const feeding = registry.filter((s) => s.kind === 'model' && s.weight(c) > 0)
    const by = feeding.filter((s) => available.running.has(s.name)).map((s) => s.name).sort()
    if (by.length > 0) return {name: c.name, evaluated: true, evaluated_by: by}
    const reason =
      feeding.length === 0
        ? 'no signal feeds it (every weight in its `signals` is 0)'
        : feeding.map((s) => `needs ${s.title}: ${available.why.get(s.name) ?? 'it is not running'}`).join('; ')
    return {name: c.name, evaluated: false, evaluated_by: [], reason}
  })
}

/** The signal that reads only the text drawn in an image: a category it alone feeds is not looked for in the picture. */
const TEXT_SIGNAL = 'text'

/**
 * How much of the policy a verdict covers: the one computation behind every coverage statement (the CLI's
 * lines, /health, /ready, /v1/categories). A category scored by text rules alone counts as evaluated and is
 * named in `text_only`, so that no statement passes it off as examined in the image.
 */
export function coverageOf(states: readonly CategoryState[]): Coverage {
  const skipped = states.filter((s) => !s.evaluated).map((s) => s.name)
  const textOnly = states.filter((s) => s.evaluated && s.evaluated_by.every((b) => b === TEXT_SIGNAL)).map((s) => s.name)
  return {evaluated: states.length - skipped.length, total: states.length, not_evaluated: skipped, ...(textOnly.length > 0 ? {text_only: textOnly} : {})}
}

export async function listCategories(
  registry: readonly Signal[],
  setup: SignalSetup & {preset: PresetName},
  choice: SignalChoice,
  available: Availability,
): Promise<CategoriesResult> {
  const {policy, active} = choice
  const model = await registry.find((s) => s.modelId)?.modelId?.(setup)
  const named = await Promise.all(active.map(async (s) => ({s, labels: (await s.labelNames?.(setup)) ?? []})))
  const byName = (name: string) => named.filter((n) => n.labels.some((l) => l.name === name)).map((n) => n.s.name)
  const runningByName = (name: string) => byName(name).filter((s) => available.running.has(s))
  const feeding = (c: (typeof policy.categories)[number]) =>
    active.filter((s) => s.kind === 'model' && s.weight(c) > 0).map((s) => s.name).sort()
  const states = categoryStates(registry, policy, available)
  const listed: CategoryListing[] = policy.categories.map((c, i) => {
    const {name: _name, ...state} = states[i]
    return {
      name: c.name,
      parent: c.parent,
      threshold: c.threshold,
      origin: c.origin,
      signals: [...feeding(c), ...byName(c.name)],
      ...state,
      ...(state.evaluated ? {evaluated_by: [...state.evaluated_by, ...runningByName(c.name)]} : {}),
      prompts: c.prompts,
      negatives: c.negatives,
    }
  })
  const names = new Set(listed.map((c) => c.name))
  const added = new Map<string, ExtraLabel>()
  for (const {labels} of named) for (const l of labels) if (!names.has(l.name) && !added.has(l.name)) added.set(l.name, l)
  const extra: CategoryListing[] = [...added.values()].map((l) => {
    const signals = byName(l.name)
    const by = runningByName(l.name)
    const reason = signals.map((s) => `needs ${registry.find((r) => r.name === s)?.title ?? s}: ${available.why.get(s) ?? 'it is not running'}`).join('; ')
    return {...l, signals, evaluated: by.length > 0, evaluated_by: by, ...(by.length > 0 ? {} : {reason})}
  })
  return {preset: setup.preset, model: model ?? '', coverage: coverageOf(states), categories: [...listed, ...extra]}
}
