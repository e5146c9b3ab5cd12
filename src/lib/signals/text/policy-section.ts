/**
 * The policy file's `text:` section: rules over the text read in images, each feeding one category (an enabled
 * one, or `contact_info`, which exists only while a rule names it). A rule holds exactly one kind: words (written
 * and/or a `words_file` read relative to the policy file), regular expressions (RE2 syntax of bounded size,
 * src/lib/rules/regex.ts) or contact detectors. `video: true` reads video frames too; `budget` bounds the reading of each
 * image in recogniser columns (read.ts ReadBudget).
 */
import {resolve} from 'node:path'

import {isMap, isSeq} from 'yaml'

import {readConfigText} from '../../config-file.js'
import type {PolicySection} from '../../policy/section.js'
import type {Policy} from '../../policy/types.js'
import {
  deref,
  describe,
  fieldsOf,
  offsetOf,
  positionAt,
  readBoolean,
  readNamed,
  readTextList,
  readWhole,
  report,
  scalarValue,
  unknownKey,
  validName,
  type PolicyProblem,
  type YamlContext,
} from '../../policy/yaml-reader.js'
import {didYouMean} from '../../suggest.js'
import {CONTACT_DETECTORS, type ContactDetector} from '../../rules/contact.js'
import {entryKeys} from '../../rules/normalise.js'
import {BUDGET_RANGE, MAX_TEXT_BUDGET, MIN_TEXT_BUDGET} from './read.js'
import {patternProblem} from '../../rules/regex.js'
import type {TextRule} from '../../rules/match.js'

/** One entry under `text.rules:`. A list file is read by readFiles, relative to the policy file. */
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

/** The `text:` section as written. */
export interface TextSection {
  /** Read video frames too (off by default: reading text costs more than the other signals per frame). */
  video?: boolean
  /** Recogniser columns an image may read (read.ts ReadBudget); absent: DEFAULT_TEXT_BUDGET. */
  budget?: number
  rules: TextRuleEntry[]
}

/** The text rules of the active policy. */
export interface TextPolicy {
  /** Read the frames of videos too. */
  video: boolean
  /** Recogniser columns an image may read, when the policy sets it (MOD_TEXT_BUDGET wins over it). */
  budget?: number
  /** Word lists hold their files' entries. */
  rules: TextRule[]
}

/** Words read from each rule's `words_file`, by rule name. */
export type WordLists = ReadonlyMap<string, readonly string[]>

const KEY = 'text'
const TEXT_KEYS = ['video', 'budget', 'rules'] as const
const TEXT_RULE_KEYS = ['category', 'words', 'words_file', 'regex', 'detect'] as const
/** Why an entry whose folding leaves no word (punctuation, symbols, emoji) is refused. */
export const NO_WORD = 'holds no letter or digit, so it could never match a word read'
/** The category fed by text alone: enabled by naming it in a text rule. */
export const TEXT_ONLY_CATEGORY = 'contact_info'
/** A word list file: at most this size (a list of a hundred thousand entries fits). */
export const MAX_WORD_LIST_BYTES = 4 * 1024 * 1024

/** The policy's text rules: present only when it has at least one (the text signal runs only then). */
export function textPolicyOf(policy: Policy): TextPolicy | undefined {
  return policy.sections[KEY] as TextPolicy | undefined
}

interface TextRulePlace {
  name: string
  categoryOffset: number
}

/** Each field of a field reader: its node, where it is, and its path in problems (`text.rules.promo.words`). */
type FieldAt = [ctx: YamlContext, value: unknown, valueAt: number, field: string]

/** `words:`, every entry holding a word; undefined after a problem, reported. */
function readWords(...[ctx, value, valueAt, field]: FieldAt): string[] | undefined {
  const list = readTextList(ctx, value, valueAt, field, true, 'word or phrase')
  const blank = list?.findIndex((w) => entryKeys(w).length === 0) ?? -1
  if (!list || blank < 0) return list
  const item = isSeq(value) ? deref(ctx, value.items[blank]) : value
  report(ctx, offsetOf(item, valueAt), `${field}[${blank}] ${JSON.stringify(list[blank])} ${NO_WORD}`)
  return undefined
}

/** `regex:`, one or a list, each accepted by RE2 within its size; undefined after a problem, reported. */
function readPatterns(...[ctx, value, valueAt, field]: FieldAt): string[] | undefined {
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
  return patterns.length === items.length && items.length > 0 ? patterns : undefined
}

/** `detect:`, one or a list of the built-in detectors; undefined after a problem, reported. */
function readDetectors(...[ctx, value, valueAt, field]: FieldAt): ContactDetector[] | undefined {
  const items = isSeq(value) ? value.items.map((item) => deref(ctx, item)) : [value]
  if (items.length === 0) report(ctx, offsetOf(value, valueAt), `${field} must list at least one detector among ${CONTACT_DETECTORS.join(', ')}`)
  const detect: ContactDetector[] = []
  for (const item of items) {
    const d = scalarValue(item)
    if (typeof d === 'string' && (CONTACT_DETECTORS as readonly string[]).includes(d)) detect.push(d as ContactDetector)
    else report(ctx, offsetOf(item, valueAt), `${field} must list detectors among ${CONTACT_DETECTORS.join(', ')}, not ${describe(item)}`)
  }
  return detect.length === items.length && items.length > 0 ? detect : undefined
}

/** `words_file:`, a path, and where it is written for problems found reading the file; undefined after a problem, reported. */
function readWordsFile(...[ctx, value, valueAt, field]: FieldAt): Pick<TextRuleEntry, 'words_file' | 'wordsFileAt'> | undefined {
  const file = scalarValue(value)
  if (typeof file === 'string' && file.trim() !== '') return {words_file: file, wordsFileAt: positionAt(ctx, offsetOf(value, valueAt))}
  report(ctx, offsetOf(value, valueAt), `${field} must be the path of a list file (one word or phrase a line), not ${describe(value)}`)
  return undefined
}

/** Whether the rule holds exactly one kind and a category, reporting what is missing or too much. */
function oneKind(ctx: YamlContext, rule: Partial<TextRuleEntry>, path: string, at: number, ok: boolean): boolean {
  const kinds = [rule.words !== undefined || rule.words_file !== undefined, rule.regex !== undefined, rule.detect !== undefined].filter(Boolean).length
  if (rule.category === undefined) report(ctx, at, `${path} needs a category: the category its hits feed`)
  else if (ok && kinds === 0) report(ctx, at, `${path} needs words, words_file, regex or detect`)
  else if (kinds > 1) report(ctx, at, `${path} holds one kind of rule: words (and words_file), regex or detect; split it into rules`)
  return ok && kinds === 1 && rule.category !== undefined
}

function readTextRule(ctx: YamlContext, name: string, node: unknown, at: number, places: TextRulePlace[]): TextRuleEntry | undefined {
  const path = `text.rules.${name}`
  if (!isMap(node)) {
    report(ctx, offsetOf(node, at), `${path} must be a mapping with category and words, words_file, regex or detect, not ${describe(node)}`)
    return undefined
  }
  const rule: Partial<TextRuleEntry> = {name}
  let ok = true
  // A field read, or a problem reported: the rule is then refused.
  const take = <T>(read: T | undefined, keep: (value: T) => void) => {
    if (read === undefined) ok = false
    else keep(read)
  }
  for (const {key, value, at: valueAt, pair} of fieldsOf(ctx, node, at, ` in ${path}`)) {
    const field: FieldAt = [ctx, value, valueAt, `${path}.${key}`]
    if (key === 'category') {
      const category = scalarValue(value)
      if (typeof category === 'string' && category !== '') {
        rule.category = category
        places.push({name, categoryOffset: offsetOf(value, valueAt)})
      } else report(ctx, offsetOf(value, valueAt), `${path}.${key} must be a category name, not ${describe(value)}`)
    } else if (key === 'words') take(readWords(...field), (words) => (rule.words = words))
    else if (key === 'words_file') take(readWordsFile(...field), (file) => Object.assign(rule, file))
    else if (key === 'regex') take(readPatterns(...field), (regex) => (rule.regex = regex))
    else if (key === 'detect') take(readDetectors(...field), (detect) => (rule.detect = detect))
    else unknownKey(ctx, pair, key, ` in ${path}`, TEXT_RULE_KEYS)
  }
  return oneKind(ctx, rule, path, at, ok) ? (rule as TextRuleEntry) : undefined
}


function readBudget(ctx: YamlContext, node: unknown, at: number): number | undefined {
  return readWhole(ctx, node, at, 'text.budget', {min: MIN_TEXT_BUDGET, max: MAX_TEXT_BUDGET, text: BUDGET_RANGE})
}

function readTextSection(ctx: YamlContext, node: unknown, at: number, places: TextRulePlace[]): TextSection | undefined {
  // An empty `text:`, like an empty `categories:` or `hash_lists:`, holds no rule.
  if (scalarValue(node) === null) return undefined
  if (!isMap(node)) {
    report(ctx, offsetOf(node, at), `text must be a mapping with rules (and video), not ${describe(node)}`)
    return undefined
  }
  const section: TextSection = {rules: []}
  for (const {key, value, at: valueAt, pair} of fieldsOf(ctx, node, at, ' in text')) {
    if (key === 'video') section.video = readBoolean(ctx, value, valueAt, 'text.video')
    else if (key === 'budget') section.budget = readBudget(ctx, value, valueAt)
    else if (key === 'rules') {
      const rules = readNamed(ctx, value, valueAt, 'text.rules', 'rule names to rules', (name, rule, ruleAt) =>
        validName(ctx, name, ruleAt, 'rule') ? readTextRule(ctx, name, rule, ruleAt, places) : undefined,
      )
      section.rules.push(...rules)
    } else unknownKey(ctx, pair, key, ' in text', TEXT_KEYS)
  }
  return section
}

/** A list file's entries: one word or phrase a line; blank lines and lines starting with `#` are skipped. */
export function parseWordList(text: string): string[] {
  return text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'))
}

/** The first entry of a list file whose folding leaves no word, with its 1-based line. */
function firstWithoutWord(text: string): {line: number; entry: string} | undefined {
  const lines = text.split('\n')
  for (let i = 0; i < lines.length; i++) {
    const entry = lines[i].trim()
    if (entry !== '' && !entry.startsWith('#') && entryKeys(entry).length === 0) return {line: i + 1, entry}
  }
  return undefined
}

/**
 * Reads one list file named at `at` (its value's place in the policy) by `field` (`text.rules.spam.words_file`),
 * relative to the policy file's folder: its entries, and a problem on that line when the file cannot be read, lists
 * no word, or holds an entry without one (then the entries are still given). Another section may name word lists
 * with it.
 */
export async function readWordListFile(
  dir: string,
  file: string,
  field: string,
  at: {line: number; column: number},
): Promise<{words?: string[]; problem?: PolicyProblem}> {
  try {
    const text = await readConfigText(resolve(dir, file), 'word list', MAX_WORD_LIST_BYTES)
    const words = parseWordList(text)
    const blank = firstWithoutWord(text)
    if (words.length === 0) return {words, problem: {...at, message: `${field} ${file} lists no word`}}
    if (blank) return {words, problem: {...at, message: `${field} ${file}: line ${blank.line}, ${JSON.stringify(blank.entry)}, ${NO_WORD}`}}
    return {words}
  } catch (e) {
    return {problem: {...at, message: `${field}: ${(e as Error).message}`}}
  }
}

/** Reads the `words_file` of each text rule; a file that cannot be read is a problem on the line of its `words_file`. */
async function readWordLists(section: TextSection, dir: string): Promise<{files: WordLists; problems: PolicyProblem[]}> {
  const lists = new Map<string, string[]>()
  const problems: PolicyProblem[] = []
  for (const rule of section.rules) {
    if (rule.words_file === undefined) continue
    const {words, problem} = await readWordListFile(dir, rule.words_file, `text.rules.${rule.name}.words_file`, rule.wordsFileAt ?? {line: 1, column: 1})
    if (words) lists.set(rule.name, words)
    if (problem) problems.push(problem)
  }
  return {files: lists, problems}
}

function buildTextPolicy(section: TextSection, lists: WordLists): TextPolicy {
  return {
    video: section.video ?? false,
    ...(section.budget === undefined ? {} : {budget: section.budget}),
    rules: section.rules.map((r) => ({
      name: r.name,
      category: r.category,
      ...(r.words || r.words_file ? {words: [...(r.words ?? []), ...(lists.get(r.name) ?? [])]} : {}),
      ...(r.regex ? {patterns: [...r.regex]} : {}),
      ...(r.detect ? {detect: [...r.detect]} : {}),
    })),
  }
}

export const textSection: PolicySection<TextSection, TextPolicy, WordLists> = {
  key: KEY,
  help: 'text: the text drawn in images (docs/policy.md#text-in-images)',
  ownCategories: [TEXT_ONLY_CATEGORY],
  read(ctx, node, at) {
    const places: TextRulePlace[] = []
    const section = readTextSection(ctx, node, at, places)
    if (section === undefined) return {}
    return {
      value: section,
      // A text rule's category must be enabled after merging with the built-ins, or the text-only category.
      check({names, disabled}) {
        const enabled = new Set([...names, TEXT_ONLY_CATEGORY])
        for (const name of disabled) enabled.delete(name)
        for (const place of places) {
          const category = section.rules.find((r) => r.name === place.name)?.category
          if (category === undefined || enabled.has(category)) continue
          report(ctx, place.categoryOffset, `text.rules.${place.name}.category: no enabled category is named "${category}"${didYouMean(category, enabled)}`)
        }
      },
    }
  },
  readFiles: readWordLists,
  build(section, _dir, lists) {
    if (section === undefined || section.rules.length === 0) return {feeds: []}
    return {value: buildTextPolicy(section, lists ?? new Map()), feeds: section.rules.map((r) => ({category: r.category, weight: 1}))}
  },
  summary(section) {
    const names = (section?.rules ?? []).map((r) => r.name)
    return {fields: {text_rules: names}, lines: [{label: 'text rules', text: names.length > 0 ? names.join(', ') : 'none'}]}
  },
  // Word lists are written out in full: the output stands alone, without the list files.
  show: (text) => ({
    video: text.video,
    ...(text.budget === undefined ? {} : {budget: text.budget}),
    rules: Object.fromEntries(
      text.rules.map((r) => [
        r.name,
        {category: r.category, ...(r.words ? {words: r.words} : {}), ...(r.patterns ? {regex: r.patterns} : {}), ...(r.detect ? {detect: r.detect} : {})},
      ]),
    ),
  }),
}
