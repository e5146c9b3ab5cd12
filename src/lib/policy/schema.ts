/**
 * The policy file (docs/policy.md): its shape, and a validator that reads the YAML syntax tree so that every
 * problem carries the line and column it is on. All problems are reported, not just the first; a file with
 * YAML syntax errors reports those alone, since its tree is not reliable.
 *
 * Rules beyond the shape:
 * - a new (non built-in) category needs at least one prompt, even when it is disabled (this catches a
 *   misspelt built-in name under `enabled: false`);
 * - a `parent` written in the file must name an enabled category; a built-in whose built-in parent is
 *   disabled, and whose parent the file does not set, simply loses its parent (disabling violence leaves
 *   weapons, gore and self_harm standing on their own);
 * - the parents of the enabled categories must not form a cycle;
 * - a text rule feeds an enabled category or `contact_info` (the category fed by text alone), holds exactly
 *   one kind of rule (words and/or words_file, regex, or detect), and its regular expressions are RE2 syntax of
 *   bounded size (text/regex.ts).
 */
import {isAlias, isMap, isScalar, isSeq, LineCounter, parseDocument} from 'yaml'
import type {Document, Node as YamlNode, Pair} from 'yaml'

import {CONTACT_DETECTORS, type ContactDetector} from '../signals/text/contact.js'
import {entryKeys} from '../signals/text/normalise.js'
import {patternProblem} from '../signals/text/regex.js'
import {DEFAULT_DISTANCE_THRESHOLD} from '../signals/pdq/match.js'
import {MAX_THRESHOLD} from '../signals/pdq/multi-index.js'
import {closest, didYouMean} from '../suggest.js'
import {DEFAULT_CATEGORIES} from './defaults.js'
import {parentCycles} from './parents.js'
import {POLICY_SWITCHES} from '../signals/registry.js'
import {PRESETS} from './types.js'
import type {Calibration, PresetName, Specialists} from './types.js'

export interface PolicyProblem {
  /** 1-based. */
  line: number
  /** 1-based. */
  column: number
  message: string
}

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

/** One entry under `hash_lists:`: a file of known-bad PDQ hashes, and where its matches count. */
export interface HashListEntry {
  name: string
  /** As written: relative to the policy file's folder unless absolute. */
  file: string
  /** The category a match is a violation of. */
  category: string
  /** Largest Hamming distance that matches. */
  distance: number
  /** 1-based line of the `file:` value, for problems found in the list file itself. */
  line: number
}

/** The category of hash-list matches unless a list names another. */
export const DEFAULT_HASH_CATEGORY = 'known_bad'

/** A validated policy file, as written (defaults not merged: see buildPolicy in load.ts). */
export interface PolicyFile {
  preset?: PresetName
  trim_borders?: boolean
  /** Replaces the default neutral prompts when given. */
  neutral?: string[]
  /** `nsfw: false` switches the embedded NSFW specialist off. */
  specialists?: Partial<Specialists>
  categories: CategoryEntry[]
  hash_lists?: HashListEntry[]
  /** Rules over the text read in images; the text signal runs only when there is at least one. */
  text?: TextSection
}

/** One entry under `text.rules:`. A list file is read by load.ts, relative to the policy file. */
export interface TextRuleEntry {
  name: string
  category: string
  words?: string[]
  words_file?: string
  /** Where `words_file`'s value is, for problems found when reading the file. */
  wordsFileAt?: {line: number; column: number}
  regex?: string[]
  detect?: ContactDetector[]
}

export interface TextSection {
  /** Read video frames too (off by default: reading text costs more than the other signals per frame). */
  video?: boolean
  rules: TextRuleEntry[]
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

const TOP_KEYS = ['preset', 'trim_borders', 'neutral', 'specialists', 'categories', 'hash_lists', 'text'] as const
const TEXT_KEYS = ['video', 'rules'] as const
const TEXT_RULE_KEYS = ['category', 'words', 'words_file', 'regex', 'detect'] as const
/** Why an entry whose folding leaves no word (punctuation, symbols, emoji) is refused. */
export const NO_WORD = 'holds no letter or digit, so it could never match a word read'
/** The category fed by text alone: enabled by naming it in a text rule. */
export const TEXT_ONLY_CATEGORY = 'contact_info'
const CATEGORY_KEYS = ['enabled', 'prompts', 'negatives', 'parent', 'threshold', 'calibration'] as const
const CALIBRATION_KEYS = ['scale', 'bias'] as const
const HASH_LIST_KEYS = ['file', 'category', 'distance'] as const
/** Names of new categories (and of head labels): they end up in JSON keys, URLs and terminal tables. */
export const CATEGORY_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/

/** The name of a category, hash list or text rule: CATEGORY_NAME_PATTERN, or a problem reported at `at`. */
function validName(ctx: Context, name: string, at: number, what: string): boolean {
  if (CATEGORY_NAME_PATTERN.test(name)) return true
  report(ctx, at, `${what} name "${name}" may hold only letters, digits, "_", "-" and "." (at most 64)`)
  return false
}
const BUILTIN_NAMES = new Set(DEFAULT_CATEGORIES.map((c) => c.name))

interface Context {
  doc: Document
  lineCounter: LineCounter
  problems: PolicyProblem[]
}

/** Where each category and its `parent` value are, for the checks that need the whole file. */
interface EntryPlace {
  keyOffset: number
  parentOffset?: number
}

function report(ctx: Context, offset: number, message: string): void {
  const {line, col} = ctx.lineCounter.linePos(offset)
  ctx.problems.push({line, column: col, message})
}

function offsetOf(node: unknown, fallback: number): number {
  const range = (node as YamlNode | null)?.range
  return range ? range[0] : fallback
}

/** Aliases stand for their anchored node; problems then point at the anchored value. */
function deref(ctx: Context, node: unknown): unknown {
  return isAlias(node) ? node.resolve(ctx.doc) : node
}

function describe(node: unknown): string {
  if (isMap(node)) return 'a mapping'
  if (isSeq(node)) return 'a list'
  const value = scalarValue(node)
  if (value === null || value === undefined) return 'empty'
  return typeof value === 'string' ? JSON.stringify(value) : String(value)
}

function scalarValue(node: unknown): unknown {
  return isScalar(node) ? node.value : undefined
}

function keyOf(ctx: Context, pair: Pair, where: string): string | undefined {
  const key = scalarValue(pair.key)
  if (typeof key === 'string') return key
  report(ctx, offsetOf(pair.key, 0), `keys${where} must be text, not ${describe(pair.key)}`)
  return undefined
}

function readBoolean(ctx: Context, node: unknown, at: number, path: string): boolean | undefined {
  const value = scalarValue(node)
  if (typeof value === 'boolean') return value
  report(ctx, offsetOf(node, at), `${path} must be true or false, not ${describe(node)}`)
  return undefined
}

function readNumber(
  ctx: Context,
  node: unknown,
  at: number,
  path: string,
  range: {min?: number; max?: number; above?: number; text: string},
): number | undefined {
  const value = scalarValue(node)
  const fits =
    typeof value === 'number' &&
    Number.isFinite(value) &&
    (range.min === undefined || value >= range.min) &&
    (range.max === undefined || value <= range.max) &&
    (range.above === undefined || value > range.above)
  if (fits) return value as number
  report(ctx, offsetOf(node, at), `${path} must be ${range.text}, not ${describe(node)}`)
  return undefined
}

function readTextList(ctx: Context, node: unknown, at: number, path: string, atLeastOne: boolean, noun = 'prompt'): string[] | undefined {
  if (!isSeq(node)) {
    report(ctx, offsetOf(node, at), `${path} must be a list of ${noun === 'prompt' ? 'prompts' : 'words or phrases'}, not ${describe(node)}`)
    return undefined
  }
  const texts: string[] = []
  node.items.forEach((raw, i) => {
    const item = deref(ctx, raw)
    const value = scalarValue(item)
    if (typeof value === 'string' && value.trim() !== '') texts.push(value)
    else report(ctx, offsetOf(item, offsetOf(node, at)), `${path}[${i}] must be non-empty text, not ${describe(item)}`)
  })
  if (atLeastOne && node.items.length === 0) {
    report(ctx, offsetOf(node, at), `${path} must list at least one ${noun}`)
    return undefined
  }
  return texts.length === node.items.length ? texts : undefined
}

function unknownKey(ctx: Context, pair: Pair, key: string, where: string, expected: readonly string[]): void {
  report(ctx, offsetOf(pair.key, 0), `unknown key "${key}"${where}${didYouMean(key, expected)} (expected one of ${expected.join(', ')})`)
}

function readCalibration(ctx: Context, node: unknown, at: number, path: string): Partial<Calibration> | undefined {
  if (!isMap(node)) {
    report(ctx, offsetOf(node, at), `${path} must be a mapping with scale and bias, not ${describe(node)}`)
    return undefined
  }
  const calibration: Partial<Calibration> = {}
  for (const pair of node.items) {
    const key = keyOf(ctx, pair, ` in ${path}`)
    if (key === undefined) continue
    const value = deref(ctx, pair.value)
    const valueAt = offsetOf(pair.key, at)
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

function readSpecialists(ctx: Context, node: unknown, at: number): Partial<Specialists> | undefined {
  if (!isMap(node)) {
    report(ctx, offsetOf(node, at), `specialists must be a mapping such as {nsfw: false}, not ${describe(node)}`)
    return undefined
  }
  const specialists: Record<string, boolean> = {}
  for (const pair of node.items) {
    const key = keyOf(ctx, pair, ' in specialists')
    if (key === undefined) continue
    if (POLICY_SWITCHES.has(key)) {
      const value = readBoolean(ctx, deref(ctx, pair.value), offsetOf(pair.key, at), `specialists.${key}`)
      if (value !== undefined) specialists[key] = value
    } else unknownKey(ctx, pair, key, ' in specialists', [...POLICY_SWITCHES.keys()])
  }
  return specialists
}

function readCategory(ctx: Context, name: string, node: unknown, at: number, place: EntryPlace): CategoryEntry {
  const path = `categories.${name}`
  const entry: CategoryEntry = {name}
  const isNew = !BUILTIN_NAMES.has(name)
  const near = isNew ? closest(name, BUILTIN_NAMES) : undefined
  const needsPrompts = () =>
    report(ctx, at, `new category "${name}" needs prompts: a list of at least one prompt${near ? ` (or did you mean the built-in "${near}"?)` : ''}`)
  if (scalarValue(node) === null) {
    if (isNew) needsPrompts()
    return entry
  }
  if (!isMap(node)) {
    report(ctx, offsetOf(node, at), `${path} must be a mapping of category fields, not ${describe(node)}`)
    return entry
  }
  for (const pair of node.items) {
    const key = keyOf(ctx, pair, ` in ${path}`)
    if (key === undefined) continue
    const value = deref(ctx, pair.value)
    const valueAt = offsetOf(pair.key, at)
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

/**
 * A mapping from names to entries (`categories`, `hash_lists`, `text.rules`): empty when written empty, else
 * each entry read by `read` (its name, its value, where its key is); what it returns is kept unless undefined.
 */
function readNamed<T>(
  ctx: Context,
  node: unknown,
  at: number,
  path: string,
  shape: string,
  read: (name: string, value: unknown, keyOffset: number) => T | undefined,
): T[] {
  if (scalarValue(node) === null) return []
  if (!isMap(node)) {
    report(ctx, offsetOf(node, at), `${path} must be a mapping from ${shape}, not ${describe(node)}`)
    return []
  }
  const entries: T[] = []
  for (const pair of node.items) {
    const name = keyOf(ctx, pair, ` under ${path}`)
    if (name === undefined) continue
    const entry = read(name, deref(ctx, pair.value), offsetOf(pair.key, at))
    if (entry !== undefined) entries.push(entry)
  }
  return entries
}

function readCategories(ctx: Context, node: unknown, at: number, places: Map<string, EntryPlace>): CategoryEntry[] {
  return readNamed(ctx, node, at, 'categories', 'category names to their fields', (name, value, keyOffset) => {
    if (!BUILTIN_NAMES.has(name) && !validName(ctx, name, keyOffset, 'category')) return undefined
    const place: EntryPlace = {keyOffset}
    const entry = readCategory(ctx, name, value, keyOffset, place)
    places.set(name, place)
    return entry
  })
}

function readHashList(ctx: Context, name: string, node: unknown, at: number, categoryAt: Map<string, number>): HashListEntry | undefined {
  const path = `hash_lists.${name}`
  if (!isMap(node)) {
    report(ctx, offsetOf(node, at), `${path} must be a mapping such as {file: removals.txt}, not ${describe(node)}`)
    return undefined
  }
  const entry: Partial<HashListEntry> = {name, category: DEFAULT_HASH_CATEGORY, distance: DEFAULT_DISTANCE_THRESHOLD}
  let ok = true
  for (const pair of node.items) {
    const key = keyOf(ctx, pair, ` in ${path}`)
    if (key === undefined) continue
    const value = deref(ctx, pair.value)
    const valueAt = offsetOf(pair.key, at)
    const text = scalarValue(value)
    switch (key) {
      case 'file':
        if (typeof text === 'string' && text.trim() !== '') {
          entry.file = text
          entry.line = ctx.lineCounter.linePos(offsetOf(value, valueAt)).line
        } else {
          report(ctx, offsetOf(value, valueAt), `${path}.file must be the path of a hash list file, not ${describe(value)}`)
          ok = false
        }
        break
      case 'category':
        if (typeof text === 'string' && CATEGORY_NAME_PATTERN.test(text)) {
          entry.category = text
          categoryAt.set(name, offsetOf(value, valueAt))
        } else {
          report(ctx, offsetOf(value, valueAt), `${path}.category must be a category name, not ${describe(value)}`)
          ok = false
        }
        break
      case 'distance': {
        const d = readNumber(ctx, value, valueAt, `${path}.distance`, {min: 0, max: MAX_THRESHOLD, text: `a whole number from 0 to ${MAX_THRESHOLD}`})
        if (d !== undefined && Number.isInteger(d)) entry.distance = d
        else {
          if (d !== undefined) report(ctx, offsetOf(value, valueAt), `${path}.distance must be a whole number from 0 to ${MAX_THRESHOLD}, not ${describe(value)}`)
          ok = false
        }
        break
      }
      default:
        unknownKey(ctx, pair, key, ` in ${path}`, HASH_LIST_KEYS)
        ok = false
    }
  }
  if (entry.file === undefined) {
    if (ok) report(ctx, at, `${path} needs file: the path of a hash list file`)
    return undefined
  }
  return ok ? (entry as HashListEntry) : undefined
}

function readHashLists(ctx: Context, node: unknown, at: number, categoryAt: Map<string, number>): HashListEntry[] {
  return readNamed(ctx, node, at, 'hash_lists', 'list names to {file, category, distance}', (name, value, keyOffset) =>
    validName(ctx, name, keyOffset, 'hash list') ? readHashList(ctx, name, value, keyOffset, categoryAt) : undefined,
  )
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
        ? `category "${entry.parent}" is disabled`
        : `no category is named "${entry.parent}"${didYouMean(entry.parent, parents.keys())}`
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

/** A list's category must be an enabled category of the policy, or known_bad (which exists only for lists). */
function checkListCategories(ctx: Context, file: PolicyFile, categoryAt: Map<string, number>): void {
  const disabled = new Set(file.categories.filter((e) => e.enabled === false).map((e) => e.name))
  const names = new Set([...DEFAULT_CATEGORIES.map((c) => c.name), ...file.categories.map((e) => e.name), DEFAULT_HASH_CATEGORY])
  for (const list of file.hash_lists ?? []) {
    const at = categoryAt.get(list.name)
    if (at === undefined) continue
    if (disabled.has(list.category)) report(ctx, at, `hash_lists.${list.name}.category: category "${list.category}" is disabled`)
    else if (!names.has(list.category)) {
      report(ctx, at, `hash_lists.${list.name}.category: no category is named "${list.category}"${didYouMean(list.category, names)}`)
    }
  }
}

function readTextRule(ctx: Context, name: string, node: unknown, at: number, places: TextRulePlace[]): TextRuleEntry | undefined {
  const path = `text.rules.${name}`
  if (!isMap(node)) {
    report(ctx, offsetOf(node, at), `${path} must be a mapping with category and words, words_file, regex or detect, not ${describe(node)}`)
    return undefined
  }
  const rule: Partial<TextRuleEntry> = {name}
  let ok = true
  for (const pair of node.items) {
    const key = keyOf(ctx, pair, ` in ${path}`)
    if (key === undefined) continue
    const value = deref(ctx, pair.value)
    const valueAt = offsetOf(pair.key, at)
    const field = `${path}.${key}`
    switch (key) {
      case 'category': {
        const category = scalarValue(value)
        if (typeof category === 'string' && category !== '') {
          rule.category = category
          places.push({name, categoryOffset: offsetOf(value, valueAt)})
        } else report(ctx, offsetOf(value, valueAt), `${field} must be a category name, not ${describe(value)}`)
        break
      }
      case 'words': {
        const list = readTextList(ctx, value, valueAt, field, true, 'word or phrase')
        const blank = list?.findIndex((w) => entryKeys(w).length === 0) ?? -1
        if (list && blank >= 0) {
          const item = isSeq(value) ? deref(ctx, value.items[blank]) : value
          report(ctx, offsetOf(item, valueAt), `${field}[${blank}] ${JSON.stringify(list[blank])} ${NO_WORD}`)
          ok = false
        } else if (list) rule.words = list
        else ok = false
        break
      }
      case 'words_file': {
        const file = scalarValue(value)
        if (typeof file === 'string' && file.trim() !== '') {
          rule.words_file = file
          const {line, col} = ctx.lineCounter.linePos(offsetOf(value, valueAt))
          rule.wordsFileAt = {line, column: col}
        } else {
          report(ctx, offsetOf(value, valueAt), `${field} must be the path of a list file (one word or phrase a line), not ${describe(value)}`)
          ok = false
        }
        break
      }
      case 'regex': {
        const items = isSeq(value) ? value.items.map((item) => deref(ctx, item)) : [value]
        if (items.length === 0) report(ctx, offsetOf(value, valueAt), `${field} must list at least one regular expression`)
        const patterns: string[] = []
        items.forEach((item, i) => {
          const source = scalarValue(item)
          const where = isSeq(value) ? `${field}[${i}]` : field
          if (typeof source !== 'string' || source === '') {
            report(ctx, offsetOf(item, valueAt), `${where} must be a regular expression, not ${describe(item)}`)
            return
          }
          const problem = patternProblem(source)
          if (problem) report(ctx, offsetOf(item, valueAt), `${where} ${problem}`)
          else patterns.push(source)
        })
        if (patterns.length === items.length && items.length > 0) rule.regex = patterns
        else ok = false
        break
      }
      case 'detect': {
        const items = isSeq(value) ? value.items.map((item) => deref(ctx, item)) : [value]
        if (items.length === 0) report(ctx, offsetOf(value, valueAt), `${field} must list at least one detector among ${CONTACT_DETECTORS.join(', ')}`)
        const detect: ContactDetector[] = []
        for (const item of items) {
          const d = scalarValue(item)
          if (typeof d === 'string' && (CONTACT_DETECTORS as readonly string[]).includes(d)) detect.push(d as ContactDetector)
          else report(ctx, offsetOf(item, valueAt), `${field} must list detectors among ${CONTACT_DETECTORS.join(', ')}, not ${describe(item)}`)
        }
        if (detect.length === items.length && items.length > 0) rule.detect = detect
        else ok = false
        break
      }
      default:
        unknownKey(ctx, pair, key, ` in ${path}`, TEXT_RULE_KEYS)
    }
  }
  const kinds = [rule.words !== undefined || rule.words_file !== undefined, rule.regex !== undefined, rule.detect !== undefined].filter(Boolean).length
  if (rule.category === undefined) report(ctx, at, `${path} needs a category: the category its hits feed`)
  else if (ok && kinds === 0) report(ctx, at, `${path} needs words, words_file, regex or detect`)
  else if (kinds > 1) report(ctx, at, `${path} holds one kind of rule: words (and words_file), regex or detect; split it into rules`)
  return ok && kinds === 1 && rule.category !== undefined ? (rule as TextRuleEntry) : undefined
}

interface TextRulePlace {
  name: string
  categoryOffset: number
}

function readTextSection(ctx: Context, node: unknown, at: number, places: TextRulePlace[]): TextSection | undefined {
  // An empty `text:`, like an empty `categories:` or `hash_lists:`, holds no rule.
  if (scalarValue(node) === null) return undefined
  if (!isMap(node)) {
    report(ctx, offsetOf(node, at), `text must be a mapping with rules (and video), not ${describe(node)}`)
    return undefined
  }
  const section: TextSection = {rules: []}
  for (const pair of node.items) {
    const key = keyOf(ctx, pair, ' in text')
    if (key === undefined) continue
    const value = deref(ctx, pair.value)
    const valueAt = offsetOf(pair.key, at)
    if (key === 'video') section.video = readBoolean(ctx, value, valueAt, 'text.video')
    else if (key === 'rules') {
      const rules = readNamed(ctx, value, valueAt, 'text.rules', 'rule names to rules', (name, rule, ruleAt) =>
        validName(ctx, name, ruleAt, 'rule') ? readTextRule(ctx, name, rule, ruleAt, places) : undefined,
      )
      section.rules.push(...rules)
    } else unknownKey(ctx, pair, key, ' in text', TEXT_KEYS)
  }
  return section
}

/** A text rule's category must be enabled after merging with the built-ins, or the text-only category. */
function checkTextCategories(ctx: Context, entries: CategoryEntry[], places: TextRulePlace[], rules: TextRuleEntry[]): void {
  const enabled = new Set([...DEFAULT_CATEGORIES.map((c) => c.name), ...entries.map((e) => e.name), TEXT_ONLY_CATEGORY])
  for (const e of entries) if (e.enabled === false) enabled.delete(e.name)
  for (const place of places) {
    const rule = rules.find((r) => r.name === place.name)
    const category = rule?.category
    if (category === undefined || enabled.has(category)) continue
    report(ctx, place.categoryOffset, `text.rules.${place.name}.category: no enabled category is named "${category}"${didYouMean(category, enabled)}`)
  }
}

/** Parses and checks a policy file's text; `file` is returned only when there is no problem. */
export function validatePolicyText(text: string): PolicyValidation {
  const lineCounter = new LineCounter()
  const doc = parseDocument(text, {lineCounter, prettyErrors: false, uniqueKeys: true})
  const ctx: Context = {doc, lineCounter, problems: []}
  if (doc.errors.length > 0) {
    for (const error of doc.errors) report(ctx, error.pos[0], `YAML: ${error.message}`)
    return {problems: sortProblems(ctx.problems)}
  }

  const file: PolicyFile = {categories: []}
  const places = new Map<string, EntryPlace>()
  const listCategoryAt = new Map<string, number>()
  const textPlaces: TextRulePlace[] = []
  const root = doc.contents
  if (root !== null && scalarValue(root) !== null) {
    if (!isMap(root)) {
      report(ctx, offsetOf(root, 0), `a policy file must be a mapping (keys ${TOP_KEYS.join(', ')}), not ${describe(root)}`)
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
          file.neutral = readTextList(ctx, value, at, 'neutral', false)
          break
        case 'specialists':
          file.specialists = readSpecialists(ctx, value, at)
          break
        case 'categories':
          file.categories = readCategories(ctx, value, at, places)
          break
        case 'hash_lists':
          file.hash_lists = readHashLists(ctx, value, at, listCategoryAt)
          break
        case 'text': {
          const text = readTextSection(ctx, value, at, textPlaces)
          if (text) file.text = text
          break
        }
        default:
          unknownKey(ctx, pair, key, '', TOP_KEYS)
      }
    }
  }
  checkParents(ctx, file.categories, places)
  checkListCategories(ctx, file, listCategoryAt)
  if (file.text) checkTextCategories(ctx, file.categories, textPlaces, file.text.rules)
  if (ctx.problems.length > 0) return {problems: sortProblems(ctx.problems), read: file}
  return {problems: [], file}
}

function sortProblems(problems: PolicyProblem[]): PolicyProblem[] {
  return [...problems].sort((a, b) => a.line - b.line || a.column - b.column)
}
