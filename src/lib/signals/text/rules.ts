/**
 * Text rules: what in the read lines feeds a category. A rule is a word list (whole words or phrases, compared
 * after normalise.ts's folding), regular expressions (regex.ts: RE2 syntax, linear time, on the NFKC text of a
 * line, case-insensitive), or
 * built-in contact detectors (contact.ts). Rules look at one line at a time. A hit names the rule, its
 * category, the text that matched (NFKC) and the box of its line.
 */
import {findContacts, type ContactDetector} from './contact.js'
import {entryKeys, nfkc, words, type Word} from './normalise.js'
import type {TextBox, TextLine} from './read.js'
import {compilePattern, patternMatches, type Pattern} from './regex.js'

export interface TextRule {
  name: string
  category: string
  /** Words and phrases (inline and from list files, already read). */
  words?: readonly string[]
  /** Regular expressions (RE2 syntax), accepted by regex.ts's patternProblem. */
  patterns?: readonly string[]
  detect?: readonly ContactDetector[]
}

export interface TextHit {
  rule: string
  category: string
  /** The matched text as read, NFKC-normalised. */
  text: string
  /** The box of the line it was read in. */
  box: TextBox
  /** The built-in detector that found it, for a `detect` rule. */
  detector?: ContactDetector
}

export interface CompiledRule {
  name: string
  category: string
  /** Entries as folded words, by their first word, longest first: a line costs one look-up per word. */
  entries: ReadonlyMap<string, string[][]>
  patterns: Pattern[]
  detect: readonly ContactDetector[]
}

export function compileRules(rules: readonly TextRule[]): CompiledRule[] {
  return rules.map((r) => ({
    name: r.name,
    category: r.category,
    entries: byFirstWord((r.words ?? []).map(entryKeys)),
    patterns: (r.patterns ?? []).map(compilePattern),
    detect: r.detect ?? [],
  }))
}

function byFirstWord(entries: string[][]): Map<string, string[][]> {
  const map = new Map<string, string[][]>()
  for (const e of entries) {
    if (e.length === 0) continue
    const list = map.get(e[0]) ?? []
    list.push(e)
    map.set(e[0], list)
  }
  for (const list of map.values()) list.sort((a, b) => b.length - a.length)
  return map
}

function wordHits(rule: CompiledRule, text: string, ws: readonly Word[]): string[] {
  const hits: string[] = []
  for (let i = 0; i < ws.length; i++) {
    const entry = rule.entries.get(ws[i].key)?.find((e) => e.every((k, j) => ws[i + j]?.key === k))
    if (!entry) continue
    hits.push(text.slice(ws[i].start, ws[i + entry.length - 1].end))
    i += entry.length - 1
  }
  return hits
}

/** Every hit of every rule in the lines, rule by rule, left to right within a line. */
export function applyRules(rules: readonly CompiledRule[], lines: readonly TextLine[]): TextHit[] {
  const hits: TextHit[] = []
  // Every rule looks at the same folded lines: fold each once.
  const folded = lines.map((line) => {
    const text = nfkc(line.text)
    return {text, words: words(text), box: line.box}
  })
  for (const rule of rules) {
    for (const {text, words: ws, box} of folded) {
      const hit = (t: string) => ({rule: rule.name, category: rule.category, text: t, box})
      for (const t of wordHits(rule, text, ws)) hits.push(hit(t))
      for (const p of rule.patterns) for (const m of patternMatches(p, text)) hits.push(hit(text.slice(m.start, m.end)))
      for (const c of findContacts(text, rule.detect)) hits.push({...hit(text.slice(c.start, c.end)), detector: c.detector})
    }
  }
  return hits
}
