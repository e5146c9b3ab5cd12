/**
 * The policy file (docs/policy.md): its shape, and a validator that reads the YAML syntax tree so that every
 * problem carries the line and column it is on. All problems are reported, not just the first; a file with
 * YAML syntax errors reports those alone, since its tree is not reliable.
 *
 * This file reads the core keys (preset, trim_borders, neutral, specialists, categories); each signal's own
 * section (`hash_lists:`, `text:`) is read by that signal's PolicySection (section.ts), passed in.
 *
 * Rules beyond the shape:
 * - a new (non built-in) category needs at least one prompt, even when it is disabled (this catches a
 *   misspelt built-in name under `enabled: false`);
 * - a `parent` written in the file must name an enabled category; a built-in whose built-in parent is
 *   disabled, and whose parent the file does not set, simply loses its parent (disabling violence leaves
 *   weapons, gore and self_harm standing on their own);
 * - the parents of the enabled categories must not form a cycle.
 */
import {isMap, LineCounter, parseDocument} from 'yaml'

import {grouped} from '../sizes.js'
import {closest, didYouMean} from '../suggest.js'
import {DEFAULT_CATEGORIES} from './defaults.js'
import {parentCycles} from './parents.js'
import type {PolicyPlugins, SectionRead} from './section.js'
import {PRESETS} from './types.js'
import type {Calibration, PresetName, Specialists} from './types.js'
import {
  aliasedValues,
  anchorTargets,
  deref,
  describe,
  describeKind,
  fieldsOf,
  keyOf,
  mergeKeys,
  offsetOf,
  readBoolean,
  readNamed,
  readNumber,
  readTextList,
  report,
  scalarValue,
  unknownKey,
  validName,
  type PolicyProblem,
  type YamlContext as Context,
} from './yaml-reader.js'

export type {PolicyProblem} from './yaml-reader.js'

/** One entry under `categories:`; absent fields keep the built-in's value (or the default for a new one). */
export interface CategoryEntry {
  name: string
  enabled?: boolean
  prompts?: string[]
  negatives?: string[]
  parent?: string | null
  threshold?: number
  calibration?: Partial<Calibration>
}

/** A validated policy file, as written (defaults not merged: see buildPolicy in load.ts). */
export interface PolicyFile {
  preset?: PresetName
  trim_borders?: boolean
  /** Replaces the default neutral prompts when given. */
  neutral?: string[]
  /** `nsfw: false` switches the embedded NSFW specialist off. */
  specialists?: Partial<Specialists>
  categories: CategoryEntry[]
  /** Each signal's section (`hash_lists`, `text`), under its key, as that section read it. */
  [section: string]: unknown
}

export interface PolicyValidation {
  problems: PolicyProblem[]
  /** Present when there is no problem. */
  file?: PolicyFile
  /**
   * With problems, what could still be read (an entry with a problem left out; absent when the YAML itself is
   * broken): lets a checker go on to the files the policy names and report their problems in the same round.
   */
  read?: PolicyFile
}

const CORE_KEYS = ['preset', 'trim_borders', 'neutral', 'specialists', 'categories'] as const
const CATEGORY_KEYS = ['enabled', 'prompts', 'negatives', 'parent', 'threshold', 'calibration'] as const
const CALIBRATION_KEYS = ['scale', 'bias'] as const
const BUILTIN_NAMES = new Set(DEFAULT_CATEGORIES.map((c) => c.name))
/** Far more than sharing lists between categories repeats; aliases of aliases in a small file could repeat billions. */
const MAX_ALIASED_VALUES = 100_000

/** Where each category and its `parent` value are, for the checks that need the whole file. */
interface EntryPlace {
  keyOffset: number
  parentOffset?: number
}

function readCalibration(ctx: Context, node: unknown, at: number, path: string): Partial<Calibration> | undefined {
  if (!isMap(node)) {
    report(ctx, offsetOf(node, at), `${path} must be a mapping with scale and bias, not ${describe(node)}`)
    return undefined
  }
  const calibration: Partial<Calibration> = {}
  for (const {key, value, at: valueAt, pair} of fieldsOf(ctx, node, at, ` in ${path}`)) {
    if (key === 'scale') {
      calibration.scale = readNumber(ctx, value, valueAt, `${path}.scale`, {above: 0, text: 'a number above 0'})
    } else if (key === 'bias') {
      calibration.bias = readNumber(ctx, value, valueAt, `${path}.bias`, {text: 'a number'})
    } else {
      unknownKey(ctx, pair, key, ` in ${path}`, CALIBRATION_KEYS)
    }
  }
  return calibration
}

function readSpecialists(ctx: Context, node: unknown, at: number, switches: ReadonlyMap<string, boolean>): Partial<Specialists> | undefined {
  if (!isMap(node)) {
    report(ctx, offsetOf(node, at), `specialists must be a mapping such as {nsfw: false}, not ${describe(node)}`)
    return undefined
  }
  const specialists: Record<string, boolean> = {}
  for (const pair of node.items) {
    const key = keyOf(ctx, pair, ' in specialists')
    if (key === undefined) continue
    if (switches.has(key)) {
      const value = readBoolean(ctx, deref(ctx, pair.value), offsetOf(pair.key, at), `specialists.${key}`)
      if (value !== undefined) specialists[key] = value
    } else unknownKey(ctx, pair, key, ' in specialists', [...switches.keys()])
  }
  return specialists
}

function readCategory(ctx: Context, name: string, node: unknown, at: number, place: EntryPlace): CategoryEntry {
  const path = `categories.${name}`
  const entry: CategoryEntry = {name}
  const isNew = !BUILTIN_NAMES.has(name)
  const near = isNew ? closest(name, BUILTIN_NAMES) : undefined
  const needsPrompts = () =>
    report(ctx, at, `new category ${JSON.stringify(name)} needs prompts: a list of at least one prompt${near ? ` (or did you mean the built-in "${near}"?)` : ''}`)
  if (scalarValue(node) === null) {
    if (isNew) needsPrompts()
    return entry
  }
  if (!isMap(node)) {
    report(ctx, offsetOf(node, at), `${path} must be a mapping of category fields, not ${describe(node)}`)
    return entry
  }
  for (const {key, value, at: valueAt, pair} of fieldsOf(ctx, node, at, ` in ${path}`)) {
    const field = `${path}.${key}`
    switch (key) {
      case 'enabled':
        entry.enabled = readBoolean(ctx, value, valueAt, field)
        break
      case 'prompts':
        entry.prompts = readTextList(ctx, value, valueAt, field, true)
        break
      case 'negatives':
        entry.negatives = readTextList(ctx, value, valueAt, field, false)
        break
      case 'parent': {
        const parent = scalarValue(value)
        if (parent === null || (typeof parent === 'string' && parent !== '')) {
          entry.parent = parent
          place.parentOffset = offsetOf(value, valueAt)
        } else {
          report(ctx, offsetOf(value, valueAt), `${field} must be a category name or null, not ${describe(value)}`)
        }
        break
      }
      case 'threshold':
        entry.threshold = readNumber(ctx, value, valueAt, field, {min: 0, max: 1, text: 'a number from 0 to 1'})
        break
      case 'calibration':
        entry.calibration = readCalibration(ctx, value, valueAt, field)
        break
      default:
        unknownKey(ctx, pair, key, ` in ${path}`, CATEGORY_KEYS)
    }
  }
  if (isNew && !node.items.some((pair) => scalarValue(pair.key) === 'prompts')) needsPrompts()
  return entry
}

function readCategories(ctx: Context, node: unknown, at: number, places: Map<string, EntryPlace>): CategoryEntry[] {
  // Names as they fold: `Weapons` beside the built-in `weapons` would be a second label where one meant to tune it.
  const folded = new Map([...BUILTIN_NAMES].map((n) => [n.toLowerCase(), n]))
  return readNamed(ctx, node, at, 'categories', 'category names to their fields', (name, value, keyOffset) => {
    if (!BUILTIN_NAMES.has(name) && !validName(ctx, name, keyOffset, 'category')) return undefined
    const same = folded.get(name.toLowerCase())
    if (same !== undefined && same !== name) {
      report(ctx, keyOffset, `category name ${JSON.stringify(name)} differs from ${JSON.stringify(same)} only in case: write ${same} to change that category, or give this one a name of its own`)
      return undefined
    }
    folded.set(name.toLowerCase(), name)
    const place: EntryPlace = {keyOffset}
    const entry = readCategory(ctx, name, value, keyOffset, place)
    places.set(name, place)
    return entry
  })
}

/** Parents after merging with the built-ins: a written parent must exist, and parents must not loop. */
function checkParents(ctx: Context, entries: CategoryEntry[], places: Map<string, EntryPlace>): void {
  const parents = new Map<string, string | null>()
  const disabled = new Set<string>()
  for (const c of DEFAULT_CATEGORIES) parents.set(c.name, c.parent)
  for (const entry of entries) {
    if (entry.enabled === false) {
      disabled.add(entry.name)
      parents.delete(entry.name)
      continue
    }
    const inherited = parents.get(entry.name) ?? null
    parents.set(entry.name, entry.parent === undefined ? inherited : entry.parent)
  }
  for (const entry of entries) {
    const place = places.get(entry.name)
    if (entry.enabled === false || typeof entry.parent !== 'string' || place?.parentOffset === undefined) continue
    if (!parents.has(entry.parent)) {
      const why = disabled.has(entry.parent)
        ? `category ${JSON.stringify(entry.parent)} is disabled`
        : `no category is named ${JSON.stringify(entry.parent)}${didYouMean(entry.parent, parents.keys())}`
      report(ctx, place.parentOffset, `categories.${entry.name}.parent: ${why}`)
      parents.set(entry.name, null)
    }
  }
  // A built-in parent that is disabled is dropped, as buildPolicy does.
  for (const [name, parent] of parents) if (parent !== null && !parents.has(parent)) parents.set(name, null)

  for (const cycle of parentCycles(parents)) reportCycle(ctx, cycle, places)
}

/** The built-ins have no cycle, so some member's parent is written in the file: the first such line gets it. */
function reportCycle(ctx: Context, cycle: string[], places: Map<string, EntryPlace>): void {
  const offset = (name: string) => places.get(name)?.parentOffset ?? Number.POSITIVE_INFINITY
  const first = cycle.reduce((best, name) => (offset(name) < offset(best) ? name : best))
  const i = cycle.indexOf(first)
  const loop = [...cycle.slice(i), ...cycle.slice(0, i), first]
  const at = Number.isFinite(offset(first)) ? offset(first) : (places.get(first)?.keyOffset ?? 0)
  report(ctx, at, `categories.${first}.parent: a cycle of parents: ${loop.join(' → ')}`)
}

/**
 * A YAML error in words for a person: the library's message is written for a programmer (`please use
 * YAML.parseAllDocuments()`) and a repeated key does not name the key.
 */
function yamlProblem(error: {code: string; message: string; pos: [number, number]}, text: string): string {
  if (error.code === 'DUPLICATE_KEY') {
    const key = /^\s*["']?([^"':\n]*)/.exec(text.slice(error.pos[0]))?.[1]?.trim()
    return `YAML: the key ${key ? JSON.stringify(key) : 'here'} is given twice in the same mapping: keep one`
  }
  if (error.code === 'MULTIPLE_DOCS') return 'YAML: a policy file holds one document: this `---` starts a second one'
  if (error.code === 'TAG_RESOLVE_FAILED') {
    const tag = text.slice(error.pos[0], error.pos[1])
    return `YAML: the tag ${tag} means nothing to mod, which would read the value as if it were not there: remove it (a policy holds plain text, numbers, true or false, lists and mappings)`
  }
  if (tooDeep(error)) return 'YAML: the values here nest too deeply to be read (hundreds of levels): a policy nests a few'
  return `YAML: ${error.message}`
}

/** The library's parser ran out of stack: its message names a JavaScript engine's internals, not the file's problem. */
const tooDeep = (error: {code: string; message: string}): boolean => error.code === 'RESOURCE_EXHAUSTION' && /call stack|stack overflow/i.test(error.message)

/**
 * Parses and checks a policy file's text, the signals' sections by the plugins given; `file` is returned only
 * when there is no problem.
 */
export function validatePolicyText(plugins: PolicyPlugins, text: string): PolicyValidation {
  const lineCounter = new LineCounter()
  const doc = parseDocument(text, {lineCounter, prettyErrors: false, uniqueKeys: true})
  const {targets, unresolved} = anchorTargets(doc)
  const ctx: Context = {lineCounter, problems: [], targets}
  // The library reads a value under a tag it does not know (`!float 0.5`, `!!flaot`) as if the tag were not there,
  // with only a warning: the file's writer meant something by it that the policy would silently not do.
  const found = [...doc.errors, ...doc.warnings.filter((w) => w.code === 'TAG_RESOLVE_FAILED')]
  // Running out of stack stops the parser at several places at once (its lexer and its composer): said once, first.
  const firstDeep = found.filter(tooDeep).sort((a, b) => a.pos[0] - b.pos[0])[0]
  const errors = found.filter((e) => !tooDeep(e) || e === firstDeep)
  if (errors.length > 0) {
    for (const error of errors) report(ctx, error.pos[0], yamlProblem(error, text))
    return {problems: sortProblems(ctx.problems)}
  }
  if (unresolved.length > 0) {
    for (const alias of unresolved) {
      report(ctx, offsetOf(alias, 0), `YAML: the alias *${alias.source} has no anchor &${alias.source} before it: anchor the value where it is first written, then repeat it with *${alias.source}`)
    }
    return {problems: ctx.problems}
  }
  const merges = mergeKeys(doc)
  if (merges.length > 0) {
    for (const key of merges) {
      report(ctx, offsetOf(key, 0), 'YAML: `<<` merges a mapping in YAML 1.1 only; a policy is read as YAML 1.2, where it is a key like any other: write the fields out (an alias, `*name`, may stand for a whole value)')
    }
    return {problems: ctx.problems}
  }
  const [firstAlias] = targets.keys()
  if (firstAlias !== undefined && aliasedValues(targets) > MAX_ALIASED_VALUES) {
    const limit = grouped(MAX_ALIASED_VALUES)
    report(ctx, offsetOf(firstAlias, 0), `YAML: the aliases of this file (the first, *${firstAlias.source}, here) repeat more than ${limit} values in all, where a policy may repeat at most ${limit}: write the values out, or repeat fewer`)
    return {problems: ctx.problems}
  }

  const topKeys = [...CORE_KEYS, ...plugins.sections.map((s) => s.section.key)]
  const file: PolicyFile = {categories: []}
  const places = new Map<string, EntryPlace>()
  const checks: NonNullable<SectionRead<unknown>['check']>[] = []
  const root = doc.contents
  if (root !== null && scalarValue(root) !== null) {
    if (!isMap(root)) {
      report(ctx, offsetOf(root, 0), `a policy file must be a mapping (keys ${topKeys.join(', ')}), not ${describeKind(root)}`)
      return {problems: ctx.problems}
    }
    for (const pair of root.items) {
      const key = keyOf(ctx, pair, '')
      if (key === undefined) continue
      const value = deref(ctx, pair.value)
      const at = offsetOf(pair.key, 0)
      switch (key) {
        case 'preset': {
          const preset = scalarValue(value)
          if (typeof preset === 'string' && (PRESETS as readonly string[]).includes(preset)) file.preset = preset as PresetName
          else report(ctx, offsetOf(value, at), `preset must be one of ${PRESETS.join(', ')}, not ${describe(value)}`)
          break
        }
        case 'trim_borders':
          file.trim_borders = readBoolean(ctx, value, at, 'trim_borders')
          break
        case 'neutral':
          // At least one: a category with no negatives would otherwise be measured against nothing and score 1 on every image.
          file.neutral = readTextList(ctx, value, at, 'neutral', true)
          break
        case 'specialists':
          file.specialists = readSpecialists(ctx, value, at, plugins.switches)
          break
        case 'categories':
          file.categories = readCategories(ctx, value, at, places)
          break
        default: {
          const section = plugins.sections.find((s) => s.section.key === key)?.section
          if (section === undefined) {
            unknownKey(ctx, pair, key, '', topKeys)
            break
          }
          const read = section.read(ctx, value, at)
          if (read.value !== undefined) file[key] = read.value
          if (read.check) checks.push(read.check)
        }
      }
    }
  }
  checkParents(ctx, file.categories, places)
  const categories = {
    names: [...new Set([...DEFAULT_CATEGORIES.map((c) => c.name), ...file.categories.map((e) => e.name)])],
    disabled: new Set(file.categories.filter((e) => e.enabled === false).map((e) => e.name)),
  }
  for (const check of checks) check(categories)
  if (ctx.problems.length > 0) return {problems: sortProblems(ctx.problems), read: file}
  return {problems: [], file}
}

export function sortProblems(problems: PolicyProblem[]): PolicyProblem[] {
  return [...problems].sort((a, b) => a.line - b.line || a.column - b.column)
}
