/**
 * Text rules, the engine the text signal (lines read in a frame) and the codes signal (a code's payload lines)
 * share: what in lines of text feeds a category. A rule is a word list (whole words or phrases, compared
 * after normalise.ts's folding), regular expressions (regex.ts: RE2 syntax, linear time, on the NFKC text of a
 * line, case-insensitive), or built-in contact detectors (contact.ts). Words match whole, split into pieces, with
 * a `€` misread, or, for long forms, inside a longer word (the constants below say when). Word lists read the
 * lines of a frame by blocks (blocks.ts), so a phrase matches across the lines of one block in reading order;
 * patterns and detectors look at one line at a time. A hit names the rule, its category, the text that matched
 * (NFKC) and the box of its line (of its lines, for a phrase over several).
 */
import {textBlocks} from './blocks.js'
import {findContacts, type ContactDetector} from './contact.js'
import {entryKeys, nfkc, words, type Word} from './normalise.js'
import type {LineBox, RuleLine} from './types.js'
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
  /** The matched text as read, NFKC-normalised; the parts of a phrase over several lines joined by a space (none after a line-end hyphen). */
  text: string
  /** The box of the line it was read in; for a phrase over several lines, the box around them. */
  box: LineBox
  /** The built-in detector that found it, for a `detect` rule. */
  detector?: ContactDetector
}

/**
 * Pieces of a word split by single spaces, hyphens, underscores or dots are joined into a listed form of at
 * least this many folded characters, from at most MAX_PIECES pieces. Shorter forms are too easily made by
 * ordinary neighbouring words (`an al`, `pen is`).
 */
export const MIN_JOINED_LENGTH = 6
const MAX_PIECES = 8

/**
 * The recogniser's dictionary has no `€`, so a `€` standing for an `e` is read as the nearest letter it knows (`f`
 * or `t`) or dropped: `fr€ebies` reads `frfebies`. A read word therefore also matches a listed form (a word, or a
 * phrase's words written together) with one `e` read as `f` or `t`, for forms of at least MIN_MISREAD_LENGTH
 * folded characters, or with one `e` missing, for forms of at least MIN_DROPPED_LENGTH (in a word read whole, or
 * between the two pieces of a word split where the reader took the `€` for a space; not inside pieces, where
 * trying every place for the `e` would cost too much). On 1.9 million words of English prose against 83 words
 * and phrases of spam lists (`bench/word-list-prose.ts`) these cost one false match (`mtth` for `meth`); a dropped
 * `e` in forms of 5 or 6 characters would have cost 94 (`winnr` for `winner`). The forms a read word may stand
 * for are worked out as it is compared, so that a long list costs no more memory.
 */
export const MIN_MISREAD_LENGTH = 4
export const MIN_DROPPED_LENGTH = 7
/**
 * A listed form of at least this many folded characters (a phrase's words written together, usually) also matches
 * inside a longer read word: `getbuycheappillsnow` holds `buy cheap pills`. Shorter forms would match inside
 * ordinary words (on the prose above, at 8 characters `subscribe` inside `unsubscribe`, at 6 `dating` inside
 * `updating`: 2 206 false matches); at 10, none did.
 */
export const MIN_INSIDE_LENGTH = 10

export interface CompiledRule {
  name: string
  category: string
  /** Entries as folded words, by their first word, longest first: a line costs one look-up per word. */
  entries: ReadonlyMap<string, string[][]>
  /** Entries of MIN_JOINED_LENGTH characters or more as one string of their folded words, and the longest's length. */
  joined: ReadonlySet<string>
  longestJoined: number
  /** The length of the longest word of any entry: no longer reading of a read word needs to be tried. */
  longestForm: number
  /** The lengths of the joined forms matched inside longer words (MIN_INSIDE_LENGTH or more). */
  insideLengths: readonly number[]
  patterns: Pattern[]
  detect: readonly ContactDetector[]
}

export function compileRules(rules: readonly TextRule[]): CompiledRule[] {
  return rules.map((r) => {
    const entries = (r.words ?? []).map(entryKeys).filter((e) => e.length > 0)
    const joined = new Set(entries.map((e) => e.join('')).filter((j) => [...j].length >= MIN_JOINED_LENGTH))
    return {
      name: r.name,
      category: r.category,
      entries: byFirstWord(entries),
      joined,
      longestJoined: [...joined].reduce((n, j) => Math.max(n, j.length), 0),
      longestForm: entries.flat().reduce((n, w) => Math.max(n, w.length), 0),
      insideLengths: [...new Set([...joined].map((j) => j.length).filter((n) => n >= MIN_INSIDE_LENGTH))],
      patterns: (r.patterns ?? []).map(compilePattern),
      detect: r.detect ?? [],
    }
  })
}

function byFirstWord(entries: string[][]): Map<string, string[][]> {
  const map = new Map<string, string[][]>()
  for (const e of entries) {
    const list = map.get(e[0]) ?? []
    list.push(e)
    map.set(e[0], list)
  }
  for (const list of map.values()) list.sort((a, b) => b.length - a.length)
  return map
}

/**
 * A word of a block and the line it was read in. A line's first word may join the word before only when the
 * line before ends with a hyphen (`free-` / `bies`): lines are never run together otherwise.
 */
interface BlockWord extends Word {
  line: number
}

/**
 * Whether `test` holds for one of the listed forms a read form may stand for: itself, then itself with one `f` or
 * `t` read back as the `e` it stood for, and (with `drops`) with one `e` put back anywhere; none longer than
 * `longest`. Tried in that order, each built only if the ones before failed.
 */
function someReading(read: string, longest: number, drops: boolean, test: (form: string) => boolean): boolean {
  if (test(read)) return true
  const n = read.length
  if (n >= MIN_MISREAD_LENGTH && n <= longest) {
    for (let at = 0; at < n; at++) {
      if ((read[at] === 'f' || read[at] === 't') && test(`${read.slice(0, at)}e${read.slice(at + 1)}`)) return true
    }
  }
  if (drops && n + 1 >= MIN_DROPPED_LENGTH && n + 1 <= longest) {
    // After an `e`, putting one back gives what putting it back before that `e` gave.
    for (let at = 0; at <= n; at++) if (read[at - 1] !== 'e' && test(`${read.slice(0, at)}e${read.slice(at)}`)) return true
  }
  return false
}

/** Whether a joined form of MIN_INSIDE_LENGTH or more stands inside a longer read word. */
function holdsJoined(rule: CompiledRule, key: string): boolean {
  for (const n of rule.insideLengths) {
    for (let at = 0; at + n <= key.length; at++) if (rule.joined.has(key.slice(at, at + n))) return true
  }
  return false
}

/**
 * How many words from `i` on a listed entry covers (as its words, or as pieces joined into it; 0 for none), and
 * whether its last word matched with its trailing symbols read as letters (`pill$`).
 */
function entryAt(rule: CompiledRule, ws: readonly BlockWord[], i: number): {covered: number; withSymbols: boolean} {
  let best = {covered: 0, withSymbols: false}
  const found = (covered: number, withSymbols: boolean) => {
    if (covered > best.covered) best = {covered, withSymbols}
  }
  const word = ws[i]
  const stands = (read: string | undefined, form: string) => read !== undefined && someReading(read, rule.longestForm, true, (f) => f === form)
  // Every entry starting with what the first word may stand for; `withSymbols`: the first word read with its
  // trailing symbols as letters, which counts only for an entry of one word.
  const entriesFrom = (withSymbols: boolean) => (form: string) => {
    for (const e of rule.entries.get(form) ?? []) {
      const last = e.length - 1
      if (last === 0) found(1, withSymbols)
      else if (!withSymbols && e.every((k, j) => j === 0 || j === last || stands(ws[i + j]?.key, k))) {
        if (stands(ws[i + last]?.key, e[last])) found(e.length, false)
        else if (stands(ws[i + last]?.withSymbols?.key, e[last])) found(e.length, true)
      }
    }
    return false
  }
  someReading(word.key, rule.longestForm, true, entriesFrom(false))
  if (word.withSymbols) someReading(word.withSymbols.key, rule.longestForm, true, entriesFrom(true))
  if (rule.joined.size === 0) return best
  const isJoined = (read: string, drops: boolean) => someReading(read, rule.longestJoined, drops, (form) => rule.joined.has(form))
  let joined = word.key
  if (isJoined(joined, true) || holdsJoined(rule, joined)) found(1, false)
  else if (word.withSymbols && isJoined(word.withSymbols.key, true)) found(1, true)
  for (let j = i + 1; j < ws.length && j - i < MAX_PIECES && ws[j].joins; j++) {
    const before = joined
    const piece = ws[j]
    joined += piece.key
    if (joined.length > rule.longestJoined) break
    if (isJoined(joined, false) || (j === i + 1 && isSpaced(rule, before, piece.key))) found(j - i + 1, false)
    else if (piece.withSymbols && isJoined(before + piece.withSymbols.key, false)) found(j - i + 1, true)
  }
  return best
}

/** Whether a word in two pieces is a joined form whose `e` between them the reader took for a space: `r plica` for `r€plica`. */
function isSpaced(rule: CompiledRule, before: string, after: string): boolean {
  return before.length + after.length + 1 >= MIN_DROPPED_LENGTH && rule.joined.has(`${before}e${after}`)
}

interface FoldedLine {
  text: string
  words: Word[]
  box: LineBox
}

function around(boxes: LineBox[]): LineBox {
  const x = Math.min(...boxes.map((b) => b.x))
  const y = Math.min(...boxes.map((b) => b.y))
  const width = Math.max(...boxes.map((b) => b.x + b.width)) - x
  const height = Math.max(...boxes.map((b) => b.y + b.height)) - y
  return {x, y, width, height}
}

/** Where the hyphen ending a line after its last word ends, or undefined when the line ends otherwise. */
function endHyphen(l: FoldedLine): number | undefined {
  const last = l.words.at(-1)
  if (!last) return undefined
  const m = /^\s*[-\u2010\u2011]\s*$/u.exec(l.text.slice(last.end))
  return m ? last.end + m[0].trimEnd().length : undefined
}

/** The words of a block's lines in order, the first of a line joining the word before after a line-end hyphen. */
function blockWords(block: readonly FoldedLine[]): BlockWord[] {
  const ws: BlockWord[] = []
  block.forEach((l, line) => {
    const hyphen = ws.length > 0 && endHyphen(block[ws.at(-1)!.line]) !== undefined
    l.words.forEach((w, k) => ws.push({...w, line, joins: k === 0 ? hyphen : w.joins}))
  })
  return ws
}

/**
 * The listed words and phrases in a block, left to right and line by line, as text and box: the parts of a
 * phrase over several lines are joined by a space, or by nothing after a line-end hyphen.
 */
function wordHits(rule: CompiledRule, block: readonly FoldedLine[]): {text: string; box: LineBox}[] {
  const ws = blockWords(block)
  const hits: {text: string; box: LineBox}[] = []
  for (let i = 0; i < ws.length; i++) {
    const {covered, withSymbols} = entryAt(rule, ws, i)
    if (covered === 0) continue
    const last = ws[i + covered - 1]
    const lastEnd = withSymbols && last.withSymbols ? last.withSymbols.end : last.end
    let text = ''
    for (let line = ws[i].line; line <= last.line; line++) {
      if (block[line].words.length === 0) continue
      const start = line === ws[i].line ? ws[i].start : block[line].words[0].start
      const end = line === last.line ? lastEnd : (endHyphen(block[line]) ?? block[line].words.at(-1)!.end)
      text += `${text === '' || /[-\u2010\u2011]$/u.test(text) ? '' : ' '}${block[line].text.slice(start, end)}`
    }
    hits.push({text, box: ws[i].line === last.line ? block[last.line].box : around(block.slice(ws[i].line, last.line + 1).map((l) => l.box))})
    i += covered - 1
  }
  return hits
}

/** Every hit of every rule in the lines of a frame: rule by rule, blocks in reading order, left to right. */
export function applyRules(rules: readonly CompiledRule[], lines: readonly RuleLine[]): TextHit[] {
  const hits: TextHit[] = []
  // Every rule looks at the same folded lines: fold each once.
  const blocks = textBlocks(lines).map((block) =>
    block.map((line) => {
      const text = nfkc(line.text)
      return {text, words: words(text), box: line.box}
    }),
  )
  for (const rule of rules) {
    for (const block of blocks) {
      const hit = (text: string, box: LineBox) => ({rule: rule.name, category: rule.category, text, box})
      for (const h of wordHits(rule, block)) hits.push(hit(h.text, h.box))
      for (const {text, box} of block) {
        for (const p of rule.patterns) for (const m of patternMatches(p, text)) hits.push(hit(text.slice(m.start, m.end), box))
        for (const c of findContacts(text, rule.detect)) hits.push({...hit(text.slice(c.start, c.end), box), detector: c.detector})
      }
    }
  }
  return hits
}
