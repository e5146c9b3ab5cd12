/** Policy files: reading, merging with the built-in defaults, and finding one by name (cosmiconfig). */
import {open} from 'node:fs/promises'
import {homedir} from 'node:os'
import path from 'node:path'

import {cosmiconfig} from 'cosmiconfig'

import {ModError} from '../errors.js'
import {POLICY_SWITCHES} from '../signals/registry.js'
import {formatSize} from '../sizes.js'
import {CLIP_ONLY, CUSTOM_CALIBRATION, DEFAULT_CATEGORIES, DEFAULT_NEUTRAL, DEFAULT_THRESHOLD} from './defaults.js'
import {entryKeys} from '../signals/text/normalise.js'
import {DEFAULT_HASH_CATEGORY, NO_WORD, TEXT_ONLY_CATEGORY, validatePolicyText} from './schema.js'
import type {PolicyFile, PolicyProblem} from './schema.js'
import type {Category, Policy, PresetName, TextPolicy} from './types.js'

/** Names looked for in each folder, nearest folder first. */
export const POLICY_FILE_NAMES: readonly string[] = Object.freeze([
  '.modrc',
  '.modrc.yaml',
  '.modrc.yml',
  'mod.config.yaml',
  'mod.config.yml',
])

/** A policy is a short hand-written file; anything bigger is a wrong path. */
export const MAX_POLICY_BYTES = 1024 * 1024

/**
 * A category one signal alone feeds, which exists only while the policy maps something to it: `known_bad` for
 * hash-list matches (any match within its list's distance, confidence 0.52 or more at distance 31 or less, is
 * at or above its threshold of 0.5) and `contact_info` for text rules (a hit scores 1). No prompts.
 */
function onlyCategory(name: string, signal: string): Category {
  return {
    name,
    parent: null,
    threshold: DEFAULT_THRESHOLD,
    prompts: [],
    negatives: [],
    calibration: {...CUSTOM_CALIBRATION},
    origin: 'builtin',
    signals: {[signal]: 1},
  }
}

/**
 * The active policy: the built-ins with the file's changes, then the file's new categories in file order.
 * A built-in changes only the fields given; `enabled: false` removes a category; a category whose parent is
 * disabled loses its parent (a written parent that is disabled is a validation error, so this only touches
 * inherited built-in parents). Hash list files are resolved against `dir` (the policy file's folder); every
 * category a list maps to is fed by the `pdq` signal as well, and every category a text rule names by the
 * `text` signal. Expects a file from validatePolicyText.
 */
export function buildPolicy(file?: PolicyFile, dir = '.', lists: WordLists = new Map()): Policy {
  const entries = file?.categories ?? []
  const categories: Category[] = []
  for (const builtin of DEFAULT_CATEGORIES) {
    const entry = entries.find((e) => e.name === builtin.name)
    if (entry?.enabled === false) continue
    categories.push({
      name: builtin.name,
      parent: entry?.parent !== undefined ? entry.parent : builtin.parent,
      threshold: entry?.threshold ?? builtin.threshold,
      prompts: [...(entry?.prompts ?? builtin.prompts)],
      negatives: [...(entry?.negatives ?? builtin.negatives)],
      calibration: {...builtin.calibration, ...entry?.calibration},
      origin: 'builtin',
      signals: {...builtin.signals},
    })
  }
  const builtinNames = new Set(DEFAULT_CATEGORIES.map((c) => c.name))
  for (const entry of entries) {
    if (builtinNames.has(entry.name) || entry.enabled === false) continue
    categories.push({
      name: entry.name,
      parent: entry.parent ?? null,
      threshold: entry.threshold ?? DEFAULT_THRESHOLD,
      prompts: [...(entry.prompts ?? [])],
      negatives: [...(entry.negatives ?? [])],
      calibration: {...CUSTOM_CALIBRATION, ...entry.calibration},
      origin: 'custom',
      signals: {...CLIP_ONLY},
    })
  }
  const active = new Set(categories.map((c) => c.name))
  for (const category of categories) if (category.parent !== null && !active.has(category.parent)) category.parent = null
  const hashLists = (file?.hash_lists ?? []).map((l) => ({name: l.name, file: path.resolve(dir, l.file), category: l.category, distance: l.distance}))
  for (const list of hashLists) {
    let category = categories.find((c) => c.name === list.category)
    if (category === undefined) {
      category = onlyCategory(DEFAULT_HASH_CATEGORY, 'pdq')
      categories.push(category)
    }
    category.signals = {...category.signals, pdq: 1}
  }
  for (const rule of file?.text?.rules ?? []) {
    let category = categories.find((c) => c.name === rule.category)
    if (category === undefined && rule.category === TEXT_ONLY_CATEGORY) {
      category = onlyCategory(TEXT_ONLY_CATEGORY, 'text')
      categories.push(category)
    }
    if (category !== undefined) category.signals = {...category.signals, text: 1}
  }
  return {
    ...(file?.preset === undefined ? {} : {preset: file.preset}),
    trim_borders: file?.trim_borders ?? true,
    categories,
    neutral: [...(file?.neutral ?? DEFAULT_NEUTRAL)],
    specialists: Object.fromEntries([...POLICY_SWITCHES].map(([name, on]) => [name, file?.specialists?.[name] ?? on])),
    hash_lists: hashLists,
    ...(file?.text && file.text.rules.length > 0 ? {text: buildTextPolicy(file, lists)} : {}),
  }
}

/** Words read from each rule's `words_file`, by rule name. */
export type WordLists = ReadonlyMap<string, readonly string[]>

function buildTextPolicy(file: PolicyFile, lists: WordLists): TextPolicy {
  return {
    video: file.text?.video ?? false,
    rules: (file.text?.rules ?? []).map((r) => ({
      name: r.name,
      category: r.category,
      ...(r.words || r.words_file ? {words: [...(r.words ?? []), ...(lists.get(r.name) ?? [])]} : {}),
      ...(r.regex ? {patterns: [...r.regex]} : {}),
      ...(r.detect ? {detect: [...r.detect]} : {}),
    })),
  }
}

/** A word list file: at most this size (a list of a hundred thousand entries fits). */
export const MAX_WORD_LIST_BYTES = 4 * 1024 * 1024

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
 * Reads the `words_file` of each text rule, relative to the policy file's folder; a file that cannot be read
 * is a problem on the line of its `words_file`.
 */
export async function readWordLists(file: PolicyFile, policyPath: string): Promise<{lists: Map<string, string[]>; problems: PolicyProblem[]}> {
  const lists = new Map<string, string[]>()
  const problems: PolicyProblem[] = []
  for (const rule of file.text?.rules ?? []) {
    if (rule.words_file === undefined) continue
    const at = rule.wordsFileAt ?? {line: 1, column: 1}
    try {
      const text = await readConfigText(path.resolve(path.dirname(policyPath), rule.words_file), 'word list', MAX_WORD_LIST_BYTES)
      const words = parseWordList(text)
      const blank = firstWithoutWord(text)
      if (words.length === 0) problems.push({...at, message: `text.rules.${rule.name}.words_file ${rule.words_file} lists no word`})
      else if (blank) problems.push({...at, message: `text.rules.${rule.name}.words_file ${rule.words_file}: line ${blank.line}, ${JSON.stringify(blank.entry)}, ${NO_WORD}`})
      lists.set(rule.name, words)
    } catch (e) {
      problems.push({...at, message: `text.rules.${rule.name}.words_file: ${(e as Error).message}`})
    }
  }
  return {lists, problems}
}

/**
 * Validates a policy file's text and reads the word lists it names, also when the text has problems, so that all
 * are reported at once; `file` only when there is no problem, `read` what could be read (see validatePolicyText).
 */
export async function validatePolicyFile(filePath: string): Promise<{problems: PolicyProblem[]; file?: PolicyFile; read?: PolicyFile; lists: WordLists}> {
  const validation = validatePolicyText(await readPolicyText(filePath))
  const {problems, file} = validation
  const read = validation.read ?? file
  const words = read ? await readWordLists(read, filePath) : {problems: [], lists: new Map<string, string[]>()}
  const all = [...problems, ...words.problems].sort((a, b) => a.line - b.line || a.column - b.column)
  if (file === undefined || all.length > 0) return {problems: all, read, lists: new Map()}
  return {problems: [], file, read, lists: words.lists}
}

/** "path:line:col: message", the form editors and CI logs link to. */
export function formatProblems(filePath: string, problems: readonly PolicyProblem[]): string[] {
  return problems.map((p) => `${filePath}:${p.line}:${p.column}: ${p.message}`)
}

/** Reads a configuration file (policy, head) as UTF-8 text, refusing one over maxBytes before reading it. */
export async function readConfigText(filePath: string, what: string, maxBytes: number): Promise<string> {
  let handle
  try {
    handle = await open(filePath, 'r')
    const stats = await handle.stat()
    if (!stats.isFile()) throw new ModError('invalid_config', `the ${what} ${filePath} is not a file`)
    if (stats.size > maxBytes) throw new ModError('invalid_config', `the ${what} ${filePath} is larger than ${formatSize(maxBytes)}`)
    return await handle.readFile({encoding: 'utf8'})
  } catch (e) {
    if (e instanceof ModError) throw e
    const code = (e as NodeJS.ErrnoException).code
    const why = code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : (e as Error).message
    throw new ModError('invalid_config', `cannot read the ${what} ${filePath}: ${why}`)
  } finally {
    await handle?.close()
  }
}

export function readPolicyText(filePath: string): Promise<string> {
  return readConfigText(filePath, 'policy file', MAX_POLICY_BYTES)
}

/** Reads, validates and merges a policy file; every problem is listed in the error, one per line. */
export async function loadPolicyFile(filePath: string): Promise<{policy: Policy; file: PolicyFile}> {
  const {problems, file, lists} = await validatePolicyFile(filePath)
  if (file === undefined) {
    const lines = formatProblems(filePath, problems)
    throw new ModError('invalid_config', `invalid policy file ${filePath}:\n${lines.join('\n')}`, {problems})
  }
  return {policy: buildPolicy(file, path.dirname(path.resolve(filePath)), lists), file}
}

/**
 * Looks for a policy file from `searchFrom` up to the home folder (or the file system root when searchFrom
 * is outside home), then in the user's config folder (`~/.config/mod/config.yaml` and the like, cosmiconfig's
 * "global" strategy). Only the path is returned: the file is parsed by loadPolicyFile, with line numbers.
 * Script files are never executed.
 */
export async function findPolicyFile(searchFrom: string, options: {stopDir?: string} = {}): Promise<string | undefined> {
  const from = path.resolve(searchFrom)
  const home = homedir()
  const insideHome = from === home || from.startsWith(home + path.sep)
  const locate = () => true
  const skip = () => null
  const explorer = cosmiconfig('mod', {
    searchPlaces: [...POLICY_FILE_NAMES],
    searchStrategy: 'global',
    stopDir: options.stopDir ?? (insideHome ? home : path.parse(from).root),
    ignoreEmptySearchPlaces: false,
    cache: false,
    loaders: {
      noExt: locate,
      '.yaml': locate,
      '.yml': locate,
      '.json': locate,
      '.js': skip,
      '.cjs': skip,
      '.mjs': skip,
      '.ts': skip,
    },
  })
  const found = await explorer.search(from)
  return found?.filepath
}

/** What a valid policy file does, for `mod policy validate`. */
export interface PolicySummary {
  /** Active categories after merging with the built-ins. */
  categories: number
  custom: string[]
  disabled: string[]
  /** Built-ins the file changes (other than disabling them). */
  changed: string[]
  preset: PresetName | null
  trim_borders: boolean
  /** Names of the text rules. */
  text_rules: string[]
}

export function summarizePolicy(file: PolicyFile): PolicySummary {
  const policy = buildPolicy(file)
  const builtinNames = new Set(DEFAULT_CATEGORIES.map((c) => c.name))
  return {
    categories: policy.categories.length,
    custom: policy.categories.filter((c) => c.origin === 'custom').map((c) => c.name),
    disabled: file.categories.filter((e) => e.enabled === false).map((e) => e.name),
    changed: file.categories
      .filter((e) => builtinNames.has(e.name) && e.enabled !== false && Object.keys(e).some((k) => k !== 'name' && k !== 'enabled'))
      .map((e) => e.name),
    preset: policy.preset ?? null,
    trim_borders: policy.trim_borders,
    text_rules: (file.text?.rules ?? []).map((r) => r.name),
  }
}
