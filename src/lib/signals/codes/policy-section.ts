/**
 * The policy file's `codes:` section: rules over the QR codes and barcodes read in images, each feeding one
 * category (an enabled one, or `contact_info`, which exists only while a rule names it). What a rule may hold is
 * checked by rules.ts; this file reads it from the YAML and puts each problem on the line it is about.
 */
import {isMap, isSeq} from 'yaml'

import type {PolicySection} from '../../policy/section.js'
import type {Policy} from '../../policy/types.js'
import {deref, describe, fieldsOf, keyOf, offsetOf, readBoolean, readNamed, report, scalarValue, unknownKey, validName, type YamlContext} from '../../policy/yaml-reader.js'
import {didYouMean} from '../../suggest.js'
import {checkCodesSection, type CodesRuleEntry, type CodesSection} from './rules.js'

const KEY = 'codes'
const SECTION_KEYS = ['rules'] as const
const RULE_KEYS = ['category', 'formats', 'any', 'domains', 'words', 'regex', 'detect'] as const
const DOMAIN_KEYS = ['deny', 'allow'] as const
/** The category a rule may feed without the policy enabling it: created by naming it, as text rules do. */
export const CODES_ONLY_CATEGORY = 'contact_info'

/** The policy's codes rules: present only when it has at least one (the codes signal runs only then). */
export function codesPolicyOf(policy: Policy): CodesSection | undefined {
  return policy.sections[KEY] as CodesSection | undefined
}

/** Where each part of the section is in the file, by its path from the section down, for rules.ts's problems. */
type Places = Map<string, number>
const placeKey = (path: readonly (string | number)[]) => JSON.stringify(path)

/** A list of strings (or one string), each item's place recorded under `path` and its index. */
function readStrings(ctx: YamlContext, node: unknown, at: number, field: string, path: (string | number)[], places: Places): string[] | undefined {
  const items = isSeq(node) ? node.items.map((item) => deref(ctx, item)) : [node]
  const out: string[] = []
  items.forEach((item, i) => {
    const value = scalarValue(item)
    places.set(placeKey([...path, i]), offsetOf(item, at))
    if (typeof value === 'string' || typeof value === 'number') out.push(String(value))
    else report(ctx, offsetOf(item, at), `${isSeq(node) ? `${field}[${i}]` : field} must be text, not ${describe(item)}`)
  })
  return out.length === items.length ? out : undefined
}

function readRule(ctx: YamlContext, name: string, node: unknown, at: number, places: Places): CodesRuleEntry | undefined {
  const path = `codes.rules.${name}`
  const here = ['rules', name]
  places.set(placeKey(here), at)
  if (!isMap(node)) {
    report(ctx, offsetOf(node, at), `${path} must be a mapping with category and any, domains, words, regex or detect, not ${describe(node)}`)
    return undefined
  }
  const rule: {-readonly [K in keyof CodesRuleEntry]?: CodesRuleEntry[K]} = {name}
  let ok = true
  for (const {key, value, at: valueAt, pair} of fieldsOf(ctx, node, at, ` in ${path}`)) {
    const field = `${path}.${key}`
    places.set(placeKey([...here, key]), offsetOf(value, valueAt))
    switch (key) {
      case 'category': {
        const category = scalarValue(value)
        if (typeof category === 'string' && category !== '') rule.category = category
        else {
          report(ctx, offsetOf(value, valueAt), `${field} must be a category name, not ${describe(value)}`)
          ok = false
        }
        break
      }
      case 'any':
        rule.any = readBoolean(ctx, value, valueAt, field)
        ok &&= rule.any !== undefined
        break
      case 'domains': {
        if (!isMap(value)) {
          report(ctx, offsetOf(value, valueAt), `${field} must be a mapping with deny or allow: a list of domains, not ${describe(value)}`)
          ok = false
          break
        }
        const domains: {deny?: string[]; allow?: string[]} = {}
        for (const inner of value.items) {
          const list = keyOf(ctx, inner, ` in ${field}`)
          if (list === undefined) continue
          if (list !== 'deny' && list !== 'allow') {
            unknownKey(ctx, inner, list, ` in ${field}`, DOMAIN_KEYS)
            ok = false
            continue
          }
          const listValue = deref(ctx, inner.value)
          places.set(placeKey([...here, key, list]), offsetOf(listValue, offsetOf(inner.key, valueAt)))
          const read = readStrings(ctx, listValue, offsetOf(inner.key, valueAt), `${field}.${list}`, [...here, key, list], places)
          if (read) domains[list] = read
          else ok = false
        }
        rule.domains = domains
        break
      }
      case 'formats':
      case 'words':
      case 'regex':
      case 'detect': {
        const read = readStrings(ctx, value, valueAt, field, [...here, key], places)
        if (read) rule[key] = read
        else ok = false
        break
      }
      default:
        unknownKey(ctx, pair, key, ` in ${path}`, RULE_KEYS)
        ok = false
    }
  }
  if (rule.category === undefined) {
    if (ok) report(ctx, at, `${path} needs a category: the category its hits feed`)
    return undefined
  }
  return ok ? (rule as CodesRuleEntry) : undefined
}

/** Reports a problem of rules.ts on the nearest part of the section it names. */
function reportAt(ctx: YamlContext, places: Places, path: readonly (string | number)[], message: string, at: number): void {
  for (let n = path.length; n > 0; n--) {
    const offset = places.get(placeKey(path.slice(0, n)))
    if (offset !== undefined) return report(ctx, offset, message)
  }
  report(ctx, at, message)
}

/** The rules read (those without a problem of their own), and the checked section when there is no problem at all. */
function readSection(ctx: YamlContext, node: unknown, at: number, places: Places): {entries: CodesRuleEntry[]; section?: CodesSection} {
  // An empty `codes:` holds no rule.
  if (scalarValue(node) === null) return {entries: []}
  if (!isMap(node)) {
    report(ctx, offsetOf(node, at), `codes must be a mapping with rules, not ${describe(node)}`)
    return {entries: []}
  }
  const entries: CodesRuleEntry[] = []
  let ok = true
  for (const pair of node.items) {
    const key = keyOf(ctx, pair, ' in codes')
    if (key === undefined) continue
    if (key !== 'rules') {
      unknownKey(ctx, pair, key, ' in codes', SECTION_KEYS)
      continue
    }
    readNamed(ctx, deref(ctx, pair.value), offsetOf(pair.key, at), 'codes.rules', 'rule names to rules', (name, rule, ruleAt) => {
      const entry = validName(ctx, name, ruleAt, 'rule') ? readRule(ctx, name, rule, ruleAt, places) : undefined
      if (entry) entries.push(entry)
      else ok = false
      return entry
    })
  }
  const {problems, section} = checkCodesSection({rules: entries})
  for (const p of problems) reportAt(ctx, places, p.path, p.message, at)
  return {entries, ...(ok && section ? {section} : {})}
}

export const codesSection: PolicySection<CodesSection, CodesSection> = {
  key: KEY,
  help: 'codes: QR codes and barcodes read in images (docs/policy.md#codes-in-images)',
  ownCategories: [CODES_ONLY_CATEGORY],
  read(ctx, node, at) {
    const places: Places = new Map()
    const {entries, section} = readSection(ctx, node, at, places)
    return {
      ...(section ? {value: section} : {}),
      // A rule's category must be enabled after merging with the built-ins, or the codes-only category; checked
      // for every rule read, also when others have problems, so that one round reports them all.
      check({names, disabled}) {
        const enabled = new Set([...names, CODES_ONLY_CATEGORY])
        for (const name of disabled) enabled.delete(name)
        for (const rule of entries) {
          if (enabled.has(rule.category)) continue
          const offset = places.get(placeKey(['rules', rule.name, 'category'])) ?? at
          report(ctx, offset, `codes.rules.${rule.name}.category: no enabled category is named "${rule.category}"${didYouMean(rule.category, enabled)}`)
        }
      },
    }
  },
  build(section) {
    if (section === undefined || section.rules.length === 0) return {feeds: []}
    return {value: section, feeds: section.rules.map((r) => ({category: r.category, weight: 1}))}
  },
  // Said only by a policy that has codes rules: the summaries of the others stay as they were.
  summary(section) {
    if (section === undefined) return {fields: {}, lines: []}
    const names = section.rules.map((r) => r.name)
    return {fields: {codes_rules: names}, lines: [{label: 'codes rules', text: names.join(', ')}]}
  },
  show: (section) => ({
    rules: Object.fromEntries(section.rules.map(({name, ...rule}) => [name, rule])),
  }),
}
