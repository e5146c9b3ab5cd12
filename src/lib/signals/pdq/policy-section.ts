/**
 * The policy file's `hash_lists:` section: named files of known-bad PDQ hashes, the category their matches are
 * violations of (`known_bad` unless a list names another enabled category), and the largest distance that
 * matches. `mod policy validate` reads every list through and reports each bad line.
 */
import {dirname, resolve} from 'node:path'

import {isMap} from 'yaml'

import {CATEGORY_NAME_PATTERN} from '../../names.js'
import type {PolicySection, SectionCheck} from '../../policy/section.js'
import type {Policy} from '../../policy/types.js'
import {didYouMean} from '../../suggest.js'
import {
  describe,
  fieldsOf,
  offsetOf,
  positionAt,
  readNamed,
  readBoolean,
  readWhole,
  report,
  scalarValue,
  unknownKey,
  validName,
  type YamlContext,
} from '../../policy/yaml-reader.js'
import {checkHashListFile} from './list-load.js'
import {DEFAULT_DISTANCE_THRESHOLD} from './match.js'
import {MAX_THRESHOLD} from './multi-index.js'

/** One entry under `hash_lists:`: a file of known-bad PDQ hashes, and where its matches count. */
export interface HashListEntry {
  name: string
  /** As written: relative to the policy file's folder unless absolute. */
  file: string
  /** The category a match is a violation of. */
  category: string
  /** Largest Hamming distance that matches. */
  distance: number
  /** One mapped copy shared by every process (true), each process's own copy (false); absent: by the file's size. */
  shared?: boolean
  /** 1-based line of the `file:` value, for problems found in the list file itself. */
  line: number
}

/** A list of known-bad PDQ hashes as the policy names it, its file resolved against the policy file's folder. */
export interface PolicyHashList {
  name: string
  /** Absolute path of the list file. */
  file: string
  /** The category its matches are violations of. */
  category: string
  /** Largest Hamming distance that matches. */
  distance: number
  /** One mapped copy shared by every process (true), each process's own copy (false); absent: by the file's size. */
  shared?: boolean
}

/** The category of hash-list matches unless a list names another. */
export const DEFAULT_HASH_CATEGORY = 'known_bad'

const KEY = 'hash_lists'
const HASH_LIST_KEYS = ['file', 'category', 'distance', 'shared'] as const

/** The policy's hash lists (the `pdq` signal runs only when there is one). */
export function hashListsOf(policy: Policy): readonly PolicyHashList[] {
  return (policy.sections[KEY] as PolicyHashList[] | undefined) ?? []
}

function readHashList(ctx: YamlContext, name: string, node: unknown, at: number, categoryAt: Map<string, number>): HashListEntry | undefined {
  const path = `hash_lists.${name}`
  if (!isMap(node)) {
    report(ctx, offsetOf(node, at), `${path} must be a mapping such as {file: removals.txt}, not ${describe(node)}`)
    return undefined
  }
  const entry: Partial<HashListEntry> = {name, category: DEFAULT_HASH_CATEGORY, distance: DEFAULT_DISTANCE_THRESHOLD}
  let ok = true
  for (const {key, value, at: valueAt, pair} of fieldsOf(ctx, node, at, ` in ${path}`)) {
    const text = scalarValue(value)
    switch (key) {
      case 'file':
        if (typeof text === 'string' && text.trim() !== '') {
          entry.file = text
          entry.line = positionAt(ctx, offsetOf(value, valueAt)).line
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
        const d = readWhole(ctx, value, valueAt, `${path}.distance`, {min: 0, max: MAX_THRESHOLD})
        if (d === undefined) ok = false
        else entry.distance = d
        break
      }
      case 'shared': {
        const shared = readBoolean(ctx, value, valueAt, `${path}.shared`)
        if (shared === undefined) ok = false
        else entry.shared = shared
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
  // An entry with other problems (reported: the policy is refused) still has its file checked, so that one round
  // of `mod policy validate` names every problem; its bad fields keep their defaults.
  return entry as HashListEntry
}

/** A hash list of the policy, checked: its entries, or its problems (`line` 0 for the file as a whole). */
interface ListCheck {
  name: string
  file: string
  entries: number
  problems: {line: number; message: string}[]
}

/** Bad lines of one list file listed by `mod policy validate`, at most: a file that is no hash list has one a line. */
const MAX_LINE_PROBLEMS = 20

/** Reads each list file (relative to the policy file's folder) and reports its bad lines. */
async function checkLists(lists: readonly HashListEntry[], policyPath: string): Promise<SectionCheck> {
  const checks = await Promise.all(
    lists.map(async (l): Promise<ListCheck> => {
      const file = resolve(dirname(policyPath), l.file)
      try {
        const {count, errors} = await checkHashListFile(file)
        return {name: l.name, file, entries: count, problems: errors}
      } catch (e) {
        return {name: l.name, file, entries: 0, problems: [{line: 0, message: (e as Error).message}]}
      }
    }),
  )
  const reported = new Set<string>()
  return {
    // A list file that cannot be read is reported on the line of its `file:` in the policy; a file two lists name,
    // once; a file of many bad lines (not a hash list at all) by its first MAX_LINE_PROBLEMS and a count.
    problems: checks.flatMap((l, i) => {
      if (reported.has(l.file)) return []
      reported.add(l.file)
      const atFile = (message: string) => ({file: policyPath, line: lists[i].line, message: `hash_lists.${l.name}: ${message}`})
      const shown = l.problems.slice(0, MAX_LINE_PROBLEMS).map((p) => (p.line === 0 ? atFile(p.message) : {file: l.file, line: p.line, message: p.message}))
      const more = l.problems.length - shown.length
      return more > 0 ? [...shown, atFile(`${more} more bad ${more === 1 ? 'line' : 'lines'} in ${l.file} (the first ${MAX_LINE_PROBLEMS} are listed)`)] : shown
    }),
    lines: checks.map((l) => ({label: 'hash list', text: `${l.name}: ${l.entries} ${l.entries === 1 ? 'hash' : 'hashes'} in ${l.file}`})),
    ...(checks.length > 0 ? {output: checks} : {}),
  }
}

export const hashListsSection: PolicySection<HashListEntry[], PolicyHashList[]> = {
  key: KEY,
  help: 'hash_lists: PDQ hashes of known images (docs/policy.md#hash-lists)',
  ownCategories: [DEFAULT_HASH_CATEGORY],
  read(ctx, node, at) {
    const categoryAt = new Map<string, number>()
    const lists = readNamed(ctx, node, at, KEY, 'list names to {file, category, distance}', (name, value, keyOffset) =>
      validName(ctx, name, keyOffset, 'hash list') ? readHashList(ctx, name, value, keyOffset, categoryAt) : undefined,
    )
    return {
      value: lists,
      // A list's category must be an enabled category of the policy, or known_bad (which exists only for lists).
      check({names, disabled}) {
        const known = new Set([...names, DEFAULT_HASH_CATEGORY])
        for (const list of lists) {
          const at = categoryAt.get(list.name)
          if (at === undefined) continue
          if (disabled.has(list.category)) report(ctx, at, `hash_lists.${list.name}.category: category "${list.category}" is disabled`)
          else if (!known.has(list.category)) {
            report(ctx, at, `hash_lists.${list.name}.category: no category is named "${list.category}"${didYouMean(list.category, known)}`)
          }
        }
      },
    }
  },
  build(lists, dir) {
    const built = (lists ?? []).map((l) => ({name: l.name, file: resolve(dir, l.file), category: l.category, distance: l.distance, ...(l.shared === undefined ? {} : {shared: l.shared})}))
    return {value: built, feeds: built.map((l) => ({category: l.category, weight: 1}))}
  },
  verify: checkLists,
  // Hash list files are named by their absolute paths, so the output reads them from any folder.
  show: (lists) =>
    lists.length > 0 ? Object.fromEntries(lists.map((l) => [l.name, {file: l.file, category: l.category, distance: l.distance, ...(l.shared === undefined ? {} : {shared: l.shared})}])) : undefined,
}
