/**
 * Codes rules: which of the codes read in a frame feed a category. A rule names its category and holds one kind of
 * check:
 * - `any: true`: every code;
 * - `domains: {deny: [...]}`: a code whose payload points to a listed domain or one of its subdomains
 *   (hosts.ts says which hosts a payload points to, and how they are compared);
 * - `domains: {allow: [...]}`: a code whose payload points anywhere else (a payload with no address passes);
 * - `words`, `regex` or `detect`: the text rules' checks (rules/match.ts, which the text rules use too: the same folding of words, RE2
 *   patterns and contact detectors), on the payload's lines (their start: payload.ts).
 * Any rule may name `formats` to look at codes of those formats only. A rule hits a code once: the hit names the
 * first thing that matched (the host, the word, the detector's find).
 */
import {CONTACT_DETECTORS, type ContactDetector} from '../../rules/contact.js'
import {entryKeys} from '../../rules/normalise.js'
import type {RuleLine} from '../../rules/types.js'
import {patternProblem} from '../../rules/regex.js'
import {applyRules, compileRules, type CompiledRule} from '../../rules/match.js'
import {CODE_FORMATS, isCodeFormat, type CodeFormat} from './formats.js'
import {domainProblem, hostMatches, listedDomain, payloadHosts} from './hosts.js'
import {checkedLines} from './payload.js'
import type {CodeBox, FoundCode} from './read.js'

/** A rule under `codes.rules`, as the policy file wrote it: names and lists not yet checked. */
export interface CodesRuleEntry {
  name: string
  category: string
  formats?: readonly string[]
  any?: boolean
  domains?: {deny?: readonly string[]; allow?: readonly string[]}
  words?: readonly string[]
  regex?: readonly string[]
  detect?: readonly string[]
}

export interface CodesSectionEntry {
  rules: readonly CodesRuleEntry[]
}

interface RuleBase {
  name: string
  category: string
  /** Only codes of these formats; absent: every format. */
  formats?: readonly CodeFormat[]
}

/** A checked rule: exactly one kind of check. */
export type CodesRule =
  | (RuleBase & {any: true})
  | (RuleBase & {domains: {deny: readonly string[]}})
  | (RuleBase & {domains: {allow: readonly string[]}})
  | (RuleBase & {words: readonly string[]})
  | (RuleBase & {regex: readonly string[]})
  | (RuleBase & {detect: readonly ContactDetector[]})

export interface CodesSection {
  rules: CodesRule[]
}

export interface CodesProblem {
  /** Where it is, from the section down: `['rules', 'promo', 'domains', 'deny', 2]`. */
  path: (string | number)[]
  /** For a person, starting with the place as written in the file (`codes.rules.promo.domains.deny[2]`). */
  message: string
}

const KINDS = ['any', 'domains', 'words', 'regex', 'detect'] as const

function place(path: readonly (string | number)[]): string {
  return path.reduce<string>((at, step) => (typeof step === 'number' ? `${at}[${step}]` : `${at}.${step}`), 'codes')
}

/** Checks a list's entries with `problem`, reporting an empty list as `empty`. */
function checkList(
  problems: CodesProblem[],
  path: (string | number)[],
  list: readonly string[],
  empty: string,
  problem: (entry: string) => string | undefined,
): void {
  if (list.length === 0) problems.push({path, message: `${place(path)} ${empty}`})
  list.forEach((entry, i) => {
    const why = problem(entry)
    if (why !== undefined) problems.push({path: [...path, i], message: `${place([...path, i])} ${JSON.stringify(entry)} ${why}`})
  })
}

function checkRule(rule: CodesRuleEntry, problems: CodesProblem[]): void {
  const at = ['rules', rule.name]
  const here = (...more: (string | number)[]) => [...at, ...more]
  const report = (path: (string | number)[], message: string) => problems.push({path, message: `${place(path)} ${message}`})
  if (rule.category.trim() === '') report(here('category'), 'must name the category its hits feed')
  if (rule.formats !== undefined) {
    checkList(problems, here('formats'), rule.formats, `must list at least one format among ${CODE_FORMATS.join(', ')}`, (f) =>
      isCodeFormat(f) ? undefined : `is not a format; the formats are ${CODE_FORMATS.join(', ')}`,
    )
  }
  const kinds = KINDS.filter((k) => rule[k] !== undefined)
  if (kinds.length === 0) report(at, `needs one of ${KINDS.join(', ')}`)
  if (kinds.length > 1) report(at, `holds one kind of rule (${kinds.join(' and ')} here): split it into rules`)
  if (rule.any === false) report(here('any'), 'must be true (every code), or left out')
  if (rule.domains !== undefined) {
    const lists = (['deny', 'allow'] as const).filter((k) => rule.domains?.[k] !== undefined)
    if (lists.length !== 1) report(here('domains'), 'holds either deny or allow: a list of domains')
    for (const k of lists) {
      checkList(problems, here('domains', k), rule.domains[k] ?? [], 'must list at least one domain', domainProblem)
    }
  }
  if (rule.words !== undefined) {
    checkList(problems, here('words'), rule.words, 'must list at least one word or phrase', (w) =>
      entryKeys(w).length === 0 ? 'holds no letter or digit, so it could never match a word' : undefined,
    )
  }
  if (rule.regex !== undefined) checkList(problems, here('regex'), rule.regex, 'must list at least one regular expression', patternProblem)
  if (rule.detect !== undefined) {
    checkList(problems, here('detect'), rule.detect, `must list at least one detector among ${CONTACT_DETECTORS.join(', ')}`, (d) =>
      (CONTACT_DETECTORS as readonly string[]).includes(d) ? undefined : `is not a detector; the detectors are ${CONTACT_DETECTORS.join(', ')}`,
    )
  }
}

/** The section's problems (all of them), and the checked section when there is none. */
export function checkCodesSection(entry: CodesSectionEntry): {problems: CodesProblem[]; section?: CodesSection} {
  const problems: CodesProblem[] = []
  for (const rule of entry.rules) checkRule(rule, problems)
  // With no problem, each rule holds exactly one kind of check, with known formats and detectors.
  return problems.length > 0 ? {problems} : {problems, section: {rules: entry.rules as CodesRule[]}}
}

export interface CodeHit {
  rule: string
  category: string
  format: CodeFormat
  payload: string
  box: CodeBox
  /** What matched: the host for a domain rule, the text found for words, regex and detect; absent for `any`. */
  matched?: string
  /** The detector that found it, for a `detect` rule. */
  detector?: ContactDetector
}

type Check =
  | {kind: 'any'}
  | {kind: 'deny' | 'allow'; domains: string[]}
  | {kind: 'text'; rule: CompiledRule}

export interface CompiledCodesRule {
  name: string
  category: string
  formats?: ReadonlySet<CodeFormat>
  check: Check
}

function compileCheck(rule: CodesRule): Check {
  if ('any' in rule) return {kind: 'any'}
  if ('domains' in rule) {
    const [kind, list] = 'deny' in rule.domains ? (['deny', rule.domains.deny] as const) : (['allow', rule.domains.allow] as const)
    return {kind, domains: list.map((d) => listedDomain(d)).filter((d): d is string => d !== undefined)}
  }
  const text = {name: rule.name, category: rule.category}
  if ('words' in rule) return {kind: 'text', rule: compileRules([{...text, words: rule.words}])[0]}
  if ('regex' in rule) return {kind: 'text', rule: compileRules([{...text, patterns: rule.regex}])[0]}
  return {kind: 'text', rule: compileRules([{...text, detect: rule.detect}])[0]}
}

/** Rules of a checked section, ready to apply. */
export function compileCodesRules(section: CodesSection): CompiledCodesRule[] {
  return section.rules.map((rule) => ({
    name: rule.name,
    category: rule.category,
    ...(rule.formats === undefined ? {} : {formats: new Set(rule.formats)}),
    check: compileCheck(rule),
  }))
}

/** What the checks look at in a code, each part worked out once whatever the number of rules. */
interface Payload {
  /** The checked lines (payload.ts), each read as a line of text in the code's box. */
  lines(): RuleLine[]
  hosts(): string[]
}

function payloadOf(code: FoundCode): Payload {
  let lines: RuleLine[] | undefined
  let hosts: string[] | undefined
  const [x, y, width, height] = code.box
  return {
    lines: () => (lines ??= checkedLines(code.payload).map((text) => ({text, box: {x, y, width, height}}))),
    hosts: () => (hosts ??= payloadHosts(code.payload)),
  }
}

/** What a rule matched in a code (nothing named for `any`); undefined for no match. */
function match(check: Check, payload: Payload): {matched?: string; detector?: ContactDetector} | undefined {
  switch (check.kind) {
    case 'any':
      return {}
    case 'deny': {
      const host = payload.hosts().find((h) => check.domains.some((d) => hostMatches(h, d)))
      return host === undefined ? undefined : {matched: host}
    }
    case 'allow': {
      const host = payload.hosts().find((h) => !check.domains.some((d) => hostMatches(h, d)))
      return host === undefined ? undefined : {matched: host}
    }
    case 'text': {
      const hit = applyRules([check.rule], payload.lines())[0]
      return hit === undefined ? undefined : {matched: hit.text, ...(hit.detector === undefined ? {} : {detector: hit.detector})}
    }
  }
}

/** Every rule's hits among the codes of a frame: rule by rule, codes in the order given. */
export function applyCodesRules(rules: readonly CompiledCodesRule[], codes: readonly FoundCode[]): CodeHit[] {
  const hits: CodeHit[] = []
  const payloads = codes.map(payloadOf)
  for (const rule of rules) {
    for (const [i, code] of codes.entries()) {
      if (rule.formats !== undefined && !rule.formats.has(code.format)) continue
      const found = match(rule.check, payloads[i])
      if (found === undefined) continue
      hits.push({
        rule: rule.name,
        category: rule.category,
        format: code.format,
        payload: code.payload,
        box: code.box,
        ...found,
      })
    }
  }
  return hits
}
