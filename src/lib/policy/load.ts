/** Policy files: reading, merging with the built-in defaults, and finding one by name. */
import {lstat, stat} from 'node:fs/promises'
import {homedir} from 'node:os'
import path from 'node:path'

import {readConfigStream, readConfigText} from '../config-file.js'
import {ModError} from '../errors.js'
import {CLIP_ONLY, CUSTOM_CALIBRATION, DEFAULT_CATEGORIES, DEFAULT_NEUTRAL, DEFAULT_THRESHOLD} from './defaults.js'
import {sortProblems, validatePolicyText} from './schema.js'
import type {PolicyFile, PolicyProblem} from './schema.js'
import type {PolicyPlugins, SummaryLine} from './section.js'
import type {Category, Policy, PresetName} from './types.js'

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
 * A category one signal alone feeds, which exists only while the policy maps something to it (a section's
 * `ownCategories`): `known_bad` for hash-list matches (any match within its list's distance, confidence 0.52 or
 * more at distance 31 or less, is at or above its threshold of 0.5) and `contact_info` for text rules (a hit
 * scores 1). No prompts.
 */
function onlyCategory(name: string, signal: string, weight: number): Category {
  return {
    name,
    parent: null,
    threshold: DEFAULT_THRESHOLD,
    prompts: [],
    negatives: [],
    calibration: {...CUSTOM_CALIBRATION},
    origin: 'builtin',
    signals: {[signal]: weight},
  }
}

/** What each section read from the files it names (word lists), by section key: what buildPolicy gives each. */
export type SectionFiles = ReadonlyMap<string, unknown>

/**
 * The active policy: the built-ins with the file's changes, then the file's new categories in file order.
 * A built-in changes only the fields given; `enabled: false` removes a category; a category whose parent is
 * disabled loses its parent (a written parent that is disabled is a validation error, so this only touches
 * inherited built-in parents). Then each signal's section builds its part (files named resolved against `dir`,
 * the policy file's folder) and names the categories its signal feeds, with the signal's weight in each.
 * Expects a file from validatePolicyText.
 */
export function buildPolicy(plugins: PolicyPlugins, file?: PolicyFile, dir = '.', files: SectionFiles = new Map()): Policy {
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
  const sections: Record<string, unknown> = {}
  for (const {signal, section} of plugins.sections) {
    const built = section.build(file?.[section.key], dir, files.get(section.key))
    if (built.value !== undefined) sections[section.key] = built.value
    for (const feed of built.feeds) {
      let category = categories.find((c) => c.name === feed.category)
      if (category === undefined && section.ownCategories?.includes(feed.category)) {
        category = onlyCategory(feed.category, signal, feed.weight)
        categories.push(category)
      }
      if (category !== undefined) category.signals = {...category.signals, [signal]: feed.weight}
    }
  }
  return {
    ...(file?.preset === undefined ? {} : {preset: file.preset}),
    trim_borders: file?.trim_borders ?? true,
    categories,
    neutral: [...(file?.neutral ?? DEFAULT_NEUTRAL)],
    specialists: Object.fromEntries([...plugins.switches].map(([name, on]) => [name, file?.specialists?.[name] ?? on])),
    sections,
  }
}

/**
 * Reads the files each section of a policy names (word lists), relative to the policy file's folder; a file that
 * cannot be used is a problem on the line that names it.
 */
async function readSectionFiles(plugins: PolicyPlugins, file: PolicyFile, dir: string): Promise<{files: Map<string, unknown>; problems: PolicyProblem[]}> {
  const files = new Map<string, unknown>()
  const problems: PolicyProblem[] = []
  for (const {section} of plugins.sections) {
    const value = file[section.key]
    if (value === undefined || section.readFiles === undefined) continue
    const read = await section.readFiles(value, dir)
    files.set(section.key, read.files)
    problems.push(...read.problems)
  }
  return {files, problems}
}

/**
 * Validates a policy file's text and reads the files its sections name, also when the text has problems, so that
 * all are reported at once; `file` only when there is no problem, `read` what could be read (see validatePolicyText).
 * `text`: the file's text, read elsewhere (stdin); the files it names are then read relative to `filePath`'s folder.
 */
export async function validatePolicyFile(
  plugins: PolicyPlugins,
  filePath: string,
  text?: string,
): Promise<{problems: PolicyProblem[]; file?: PolicyFile; read?: PolicyFile; files: SectionFiles}> {
  const validation = validatePolicyText(plugins, text ?? (await readPolicyText(filePath)))
  const {problems, file} = validation
  const read = validation.read ?? file
  const named = read ? await readSectionFiles(plugins, read, path.dirname(filePath)) : {problems: [], files: new Map<string, unknown>()}
  const all = sortProblems([...problems, ...named.problems])
  if (file === undefined || all.length > 0) return {problems: all, read, files: new Map()}
  // Every category disabled is a file no scan can use: said here, where validate sees it, not first by a scan.
  if (buildPolicy(plugins, file, path.dirname(path.resolve(filePath)), named.files).categories.length === 0) {
    return {problems: [{line: 1, column: 1, message: 'every category is disabled: a policy must leave at least one to check'}], read, files: new Map()}
  }
  return {problems: [], file, read, files: named.files}
}

/** "path:line:col: message", the form editors and CI logs link to. */
export function formatProblems(filePath: string, problems: readonly PolicyProblem[]): string[] {
  return problems.map((p) => `${filePath}:${p.line}:${p.column}: ${p.message}`)
}

export function readPolicyText(filePath: string): Promise<string> {
  return readConfigText(filePath, 'policy file', MAX_POLICY_BYTES)
}

/** A policy file's text read from stdin, within MAX_POLICY_BYTES. */
export function readPolicyStream(stream: AsyncIterable<Buffer | string>): Promise<string> {
  return readConfigStream(stream, 'on stdin', 'policy file', MAX_POLICY_BYTES)
}

/** Reads, validates and merges a policy file; every problem is listed in the error, one per line. */
export async function loadPolicyFile(plugins: PolicyPlugins, filePath: string): Promise<{policy: Policy; file: PolicyFile}> {
  const {problems, file, files} = await validatePolicyFile(plugins, filePath)
  if (file === undefined) {
    const lines = formatProblems(filePath, problems)
    throw new ModError('invalid_config', [`invalid policy file ${filePath}:`, ...lines], {problems})
  }
  return {policy: buildPolicy(plugins, file, path.dirname(path.resolve(filePath)), files), file}
}

/** Names looked for in the user's configuration folder (`~/.config/mod/`), when no folder from the search holds one. */
const USER_POLICY_NAMES: readonly string[] = ['config', 'config.json', 'config.yaml', 'config.yml']

/**
 * Whether a name found in `dir` may be taken as the policy: not when it was put in a folder others may write to
 * (a shared temp folder) by another user than this one or root. Anyone can put a `.modrc.yaml`, or a FIFO that
 * would hold every command, in `/tmp`, and a scan run from below it would take it up.
 */
async function trusted(file: string, dir: string, uid: number | undefined): Promise<boolean> {
  if (uid === undefined) return true
  const [own, folder] = await Promise.all([lstat(file), stat(dir)])
  return (folder.mode & 0o002) === 0 || own.uid === uid || own.uid === 0
}

/**
 * The one of `names` in `dir` that exists (whatever it is: reading it says what is wrong) and may be trusted. Two
 * are refused, naming both: reading one would leave the other's rules silently unapplied.
 */
async function oneIn(dir: string, names: readonly string[], uid: number | undefined): Promise<string | undefined> {
  const found: string[] = []
  for (const name of names) {
    const file = path.join(dir, name)
    const present = await lstat(file).then(
      () => true,
      () => false,
    )
    if (present && (await trusted(file, dir, uid))) found.push(file)
  }
  if (found.length > 1) {
    throw new ModError('invalid_config', `${found.length} policy files in ${dir}: ${found.map((f) => path.basename(f)).join(', ')}; keep one, or name the one to use with --config or MOD_CONFIG`)
  }
  return found[0]
}

/**
 * Looks for a policy file by name (POLICY_FILE_NAMES) from `searchFrom` up to the home folder (or the file system's
 * root when searchFrom is outside home, or `stopDir`), then in the user's configuration folder (`configHome`/mod:
 * `config`, `config.yaml`, …), as cosmiconfig's "global" search does. Only names are looked at, never contents: the
 * file is read by loadPolicyFile, which refuses a FIFO, a device or a file over MAX_POLICY_BYTES at once, and no
 * script is ever run. (cosmiconfig itself is not used: its search first looks in the working folder for a
 * configuration of its own, `.config/config.js` and `package.json` among them, runs the scripts it finds there and
 * lets them add places to search outside the repository, with no option to turn that off; and it reads each file it
 * meets before any check, so a FIFO held it for ever.)
 */
export async function findPolicyFile(searchFrom: string, options: {stopDir?: string; configHome?: string; uid?: number} = {}): Promise<string | undefined> {
  const from = path.resolve(searchFrom)
  const home = homedir()
  const insideHome = from === home || from.startsWith(home + path.sep)
  const stop = path.resolve(options.stopDir ?? (insideHome ? home : path.parse(from).root))
  const uid = 'uid' in options ? options.uid : process.getuid?.()
  for (let dir = from; ; dir = path.dirname(dir)) {
    const found = await oneIn(dir, POLICY_FILE_NAMES, uid)
    if (found) return found
    if (dir === stop || dir === path.dirname(dir)) break
  }
  return oneIn(path.join(options.configHome ?? path.join(home, '.config'), 'mod'), USER_POLICY_NAMES, uid)
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
  /** Each section's fields (`text_rules`: the names of the text rules). */
  [field: string]: unknown
}

export function summarizePolicy(plugins: PolicyPlugins, file: PolicyFile): PolicySummary {
  const policy = buildPolicy(plugins, file)
  const builtinNames = new Set(DEFAULT_CATEGORIES.map((c) => c.name))
  const summary: PolicySummary = {
    categories: policy.categories.length,
    custom: policy.categories.filter((c) => c.origin === 'custom').map((c) => c.name),
    disabled: file.categories.filter((e) => e.enabled === false).map((e) => e.name),
    changed: file.categories
      .filter((e) => builtinNames.has(e.name) && e.enabled !== false && Object.keys(e).some((k) => k !== 'name' && k !== 'enabled'))
      .map((e) => e.name),
    preset: policy.preset ?? null,
    trim_borders: policy.trim_borders,
  }
  for (const {section} of plugins.sections) Object.assign(summary, section.summary?.(file[section.key]).fields)
  return summary
}

/** The sections' lines of `mod policy validate`'s summary of a valid file, in section order. */
export function sectionSummaryLines(plugins: PolicyPlugins, file: PolicyFile): SummaryLine[] {
  return plugins.sections.flatMap(({section}) => section.summary?.(file[section.key]).lines ?? [])
}
