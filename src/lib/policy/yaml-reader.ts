/**
 * Reading a policy file's YAML syntax tree so that every problem carries the line and column it is on: the
 * helpers the file's core sections (schema.ts) and each signal's own section (`signals/<name>/policy-section.ts`)
 * read their nodes with. A reader reports a problem and goes on, so that one round lists them all.
 */
import {isAlias, isMap, isPair, isScalar, isSeq, visit} from 'yaml'
import type {Alias, Document, LineCounter, Node as YamlNode, Pair, YAMLMap} from 'yaml'

import {countOf, wholeRange} from '../config/env.js'
import {CATEGORY_NAME_PATTERN, CATEGORY_NAME_RULE} from '../names.js'
import {didYouMean} from '../suggest.js'

export interface PolicyProblem {
  /** 1-based. */
  line: number
  /** 1-based. */
  column: number
  message: string
}

/** One file being read: its line positions, its aliases' anchored nodes, and the problems found so far. */
export interface YamlContext {
  lineCounter: LineCounter
  problems: PolicyProblem[]
  /** Each alias's anchored node (anchorTargets): the library's own lookup walks the whole file at each alias. */
  targets: ReadonlyMap<Alias, YamlNode>
}

/** The 1-based line and column of an offset in the file. */
export function positionAt(ctx: YamlContext, offset: number): {line: number; column: number} {
  const {line, col} = ctx.lineCounter.linePos(offset)
  return {line, column: col}
}

export function report(ctx: YamlContext, offset: number, message: string): void {
  ctx.problems.push({...positionAt(ctx, offset), message})
}

/** Where a node starts, or `fallback` (its key's offset) for a node the tree holds without a place (an empty value). */
export function offsetOf(node: unknown, fallback: number): number {
  const range = (node as YamlNode | null)?.range
  return range ? range[0] : fallback
}

/** Aliases stand for their anchored node; problems then point at the anchored value. */
export function deref(ctx: YamlContext, node: unknown): unknown {
  return isAlias(node) ? ctx.targets.get(node) : node
}

/**
 * Each alias of the document and the node it stands for, the last one anchored under its name before it; and the
 * aliases with no such anchor, which the library leaves for its own reading to refuse (this reader would see nothing).
 */
export function anchorTargets(doc: Document): {targets: Map<Alias, YamlNode>; unresolved: Alias[]} {
  const anchored = new Map<string, YamlNode>()
  const targets = new Map<Alias, YamlNode>()
  const unresolved: Alias[] = []
  visit(doc, {
    Node(_key, node) {
      if (isAlias(node)) {
        const target = anchored.get(node.source)
        if (target === undefined) unresolved.push(node)
        else targets.set(node, target)
      } else if (node.anchor !== undefined) anchored.set(node.anchor, node)
    },
  })
  return {targets, unresolved}
}

/**
 * The document's merge keys (a plain `<<` key, as in `<<: *defaults`): YAML 1.1's, which YAML 1.2 reads as a key
 * like any other, so the fields it was meant to bring in would be missing.
 */
export function mergeKeys(doc: Document): YamlNode[] {
  const keys: YamlNode[] = []
  visit(doc, {
    Pair(_key, pair) {
      if (isScalar(pair.key) && pair.key.value === '<<' && pair.key.type === 'PLAIN') keys.push(pair.key)
    },
  })
  return keys
}

/**
 * How many values the document's aliases (`targets`, of anchorTargets: each with what it stands for) repeat once
 * each is replaced by its value (an alias within an anchored value repeated as often as that value is). A few
 * kilobytes of aliases of aliases stand for billions of values, which the library's own reading refuses (its
 * maxAliasCount) and this reader must too.
 */
export function aliasedValues(targets: ReadonlyMap<Alias, YamlNode>): number {
  const sizes = new Map<unknown, number>()
  const size = (node: unknown): number => {
    const known = sizes.get(node)
    if (known !== undefined) return known
    // An alias within its own anchored value (`&a [*a]`) counts once rather than for ever.
    sizes.set(node, 1)
    let n = 1
    if (isAlias(node)) {
      const target = targets.get(node)
      n = target === undefined ? 1 : size(target)
    } else if (isMap(node) || isSeq(node)) {
      for (const item of node.items as unknown[]) n += isPair(item) ? size(item.key) + size(item.value) : size(item)
    }
    sizes.set(node, n)
    return n
  }
  let aliased = 0
  for (const alias of targets.keys()) aliased += size(alias)
  return aliased
}

/** A node as a problem names it: `a mapping`, `a list`, `empty`, or its value. */
export function describe(node: unknown): string {
  if (isMap(node)) return 'a mapping'
  if (isSeq(node)) return 'a list'
  const value = scalarValue(node)
  if (value === null || value === undefined) return 'empty'
  // A number as written (`99999999999999999999`, `1e4`), not as read (`100000000000000000000`, `10000`).
  if (typeof value === 'number' && isScalar(node) && typeof node.source === 'string' && node.source.length <= MAX_QUOTED) return node.source
  if (typeof value !== 'string') return String(value)
  // A value is quoted to show a typo; a long or many-line one is a wrong file (a .env, a key), never copied out.
  return value.length <= MAX_QUOTED && !/[\r\n]/.test(value) ? JSON.stringify(value) : `text (${value.length} characters)`
}

/** What a whole document that is not a mapping is, without its content: the file is likely not a policy at all. */
export function describeKind(node: unknown): string {
  if (isSeq(node)) return 'a list'
  const value = scalarValue(node)
  if (value === null || value === undefined) return 'empty'
  return typeof value === 'string' ? `text (${value.length} characters)` : `a ${typeof value}`
}

/** The longest value quoted in a message. */
const MAX_QUOTED = 64

export function scalarValue(node: unknown): unknown {
  return isScalar(node) ? node.value : undefined
}

/** A mapping key as text, or a problem (`where` says in which mapping, e.g. ` in text`). */
export function keyOf(ctx: YamlContext, pair: Pair, where: string): string | undefined {
  const key = scalarValue(pair.key)
  if (typeof key === 'string') return key
  report(ctx, offsetOf(pair.key, 0), `keys${where} must be text, not ${describe(pair.key)}`)
  return undefined
}

/** One field of a mapping: its key, its value (an alias followed), where its key is, and its pair. */
export interface MappingField {
  key: string
  value: unknown
  at: number
  pair: Pair
}

/** The fields of a mapping whose keys are text; another key is a problem (`where`: in which mapping, ` in text`). */
export function fieldsOf(ctx: YamlContext, node: YAMLMap, at: number, where: string): MappingField[] {
  return node.items.flatMap((pair) => {
    const key = keyOf(ctx, pair, where)
    return key === undefined ? [] : [{key, value: deref(ctx, pair.value), at: offsetOf(pair.key, at), pair}]
  })
}

export function unknownKey(ctx: YamlContext, pair: Pair, key: string, where: string, expected: readonly string[]): void {
  report(ctx, offsetOf(pair.key, 0), `unknown key ${JSON.stringify(key)}${where}${didYouMean(key, expected)} (expected one of ${expected.join(', ')})`)
}

/** The name of a category, hash list or rule: CATEGORY_NAME_PATTERN, or a problem reported at `at`. */
export function validName(ctx: YamlContext, name: string, at: number, what: string): boolean {
  if (CATEGORY_NAME_PATTERN.test(name)) return true
  report(ctx, at, `${what} name ${JSON.stringify(name)} ${CATEGORY_NAME_RULE}`)
  return false
}

export function readBoolean(ctx: YamlContext, node: unknown, at: number, path: string): boolean | undefined {
  const value = scalarValue(node)
  if (typeof value === 'boolean') return value
  report(ctx, offsetOf(node, at), `${path} must be true or false, not ${describe(node)}`)
  return undefined
}

/**
 * A whole number written in plain decimal, from min to max (`text`: how a problem says it, the range by default), as
 * the MOD_* variables take one: `1e4`, `0x1000`, `2000.0` and a quoted number are refused, where YAML would read them
 * as numbers a person may not have meant.
 */
export function readWhole(ctx: YamlContext, node: unknown, at: number, path: string, range: {min: number; max: number; text?: string}): number | undefined {
  const n = isScalar(node) && node.type === 'PLAIN' && typeof node.source === 'string' ? countOf(node.source, range.min, range.max) : undefined
  if (n !== undefined) return n
  report(ctx, offsetOf(node, at), `${path} must be ${range.text ?? wholeRange(range.min, range.max)}, not ${describe(node)}`)
  return undefined
}

export function readNumber(
  ctx: YamlContext,
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

/** A list of non-empty texts (prompts, or words and phrases when `noun` says so); undefined when any item is not one. */
export function readTextList(ctx: YamlContext, node: unknown, at: number, path: string, atLeastOne: boolean, noun = 'prompt'): string[] | undefined {
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

/**
 * A mapping from names to entries (`categories`, `hash_lists`, `text.rules`): empty when written empty, else
 * each entry read by `read` (its name, its value, where its key is); what it returns is kept unless undefined.
 */
export function readNamed<T>(
  ctx: YamlContext,
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
