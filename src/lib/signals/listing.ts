/** The category listing (`mod categories`, GET /v1/categories): what feeds each label, without loading a model. */
import type {PresetName} from '../policy/types.js'
import type {CategoriesResult, CategoryListing} from '../types.js'
import type {SignalChoice} from './core.js'
import type {ExtraLabel, Signal, SignalSetup} from './signal.js'

export async function listCategories(
  registry: readonly Signal[],
  setup: SignalSetup & {preset: PresetName},
  choice: SignalChoice,
): Promise<CategoriesResult> {
  const {policy, active} = choice
  const model = await registry.find((s) => s.modelId)?.modelId?.(setup)
  const named = await Promise.all(active.map(async (s) => ({s, labels: (await s.labelNames?.(setup)) ?? []})))
  const byName = (name: string) => named.filter((n) => n.labels.some((l) => l.name === name)).map((n) => n.s.name)
  const feeding = (c: (typeof policy.categories)[number]) =>
    active.filter((s) => s.kind === 'model' && s.weight(c) > 0).map((s) => s.name).sort()
  const listed: CategoryListing[] = policy.categories.map((c) => ({
    name: c.name,
    parent: c.parent,
    threshold: c.threshold,
    origin: c.origin,
    signals: [...feeding(c), ...byName(c.name)],
    prompts: c.prompts,
    negatives: c.negatives,
  }))
  const names = new Set(listed.map((c) => c.name))
  const added = new Map<string, ExtraLabel>()
  for (const {labels} of named) for (const l of labels) if (!names.has(l.name) && !added.has(l.name)) added.set(l.name, l)
  const extra: CategoryListing[] = [...added.values()].map((l) => ({...l, signals: byName(l.name)}))
  return {preset: setup.preset, model: model ?? '', categories: [...listed, ...extra]}
}
