/**
 * How read text is compared with word lists. Both the line and every list entry go through the same steps, so
 * a list entry matches however it is written:
 * 1. Unicode NFKC (full-width and styled letters become plain ones, ligatures split), then the characters that
 *    draw nothing removed (Unicode's default-ignorable code points: zero-width spaces and joiners, soft hyphens,
 *    direction marks, variation selectors, tag characters). The text reader never reads them, but a code's
 *    payload may hold them, and `free<ZWSP>bies` shows as `freebies`. Patterns and detectors see this text too.
 * 2. Split into words at anything that is not a letter, digit, mark or one of the symbols that stand for letters
 *    (`! | @ $ € ¢ ¥ ×`); a word keeps its offsets in the NFKC text so that a hit can name what was read, and
 *    notes whether a single space, hyphen, underscore or dot separates it from the word before (match.ts may
 *    join such pieces into a listed word). Symbols ending a word of letters are punctuation (`fr33!`), but the
 *    word read with them as letters is kept beside it (`pill$` for `pills`, `viagr@` for `viagra`).
 * 3. Runs of single characters are joined: `f r e e`, `f.r.e.e` and `f-r-e-e` read as `free`. What holds no
 *    letter, digit or mark (`€€€`, a lone `!`) is no word, and no piece joins across it.
 * 4. Each word is folded: lower case; diacritics removed (NFKD, then the combining marks of U+0300-036F,
 *    1AB0-1AFF, 1DC0-1DFF, 20D0-20FF and FE20-FE2F dropped, then NFC: `fréébies` reads `freebies`, while the
 *    vowel signs of Indic scripts, which are marks too, stay); and, in words holding at least one letter,
 *    the look-alikes of LOOK_ALIKE replaced. Cyrillic and Greek look-alikes (`сheap` with a Cyrillic `с`) are
 *    replaced only in words that also hold a Latin letter, so that a word written wholly in Cyrillic or Greek
 *    keeps its own letters. Digits alone (a price, a year) stay digits.
 */

export interface Word {
  /** The folded form compared with list entries. */
  key: string
  /** Offsets in the NFKC text. */
  start: number
  end: number
  /** Separated from the word before by a single space, hyphen, underscore or dot: a piece that may join it. */
  joins: boolean
  /**
   * For a word whose trailing symbols were taken for punctuation (`pill$`, `viagr@`, `fr33!`): the word read with
   * them as letters (its folded form, and where it then ends), which match.ts also compares.
   */
  withSymbols?: {key: string; end: number}
}

/**
 * Leetspeak, symbols inside words, and Latin letters with no decomposition. `l` and `i` fold together because
 * `1` stands for either (so `ł` folds to `i` too).
 */
const LOOK_ALIKE: Record<string, string> = {
  '0': 'o', '1': 'i', '!': 'i', '|': 'i', l: 'i', '3': 'e', '4': 'a', '@': 'a', '5': 's', $: 's', '7': 't', '8': 'b', '9': 'g',
  '€': 'e', '¢': 'c', '¥': 'y', '×': 'x',
  ø: 'o', đ: 'd', ð: 'd', ł: 'i', ħ: 'h', ı: 'i', ɡ: 'g', ß: 'ss', æ: 'ae', œ: 'oe',
}

/** Cyrillic and Greek letters drawn like Latin ones (lower case). */
const OTHER_SCRIPT: Record<string, string> = {
  а: 'a', в: 'b', е: 'e', к: 'k', м: 'm', н: 'h', о: 'o', р: 'p', с: 'c', т: 't', у: 'y', х: 'x', ѕ: 's', і: 'i', ј: 'j', ԁ: 'd', ӏ: 'i',
  α: 'a', β: 'b', γ: 'y', ε: 'e', η: 'n', ι: 'i', κ: 'k', ν: 'v', ο: 'o', ρ: 'p', τ: 't', υ: 'u', χ: 'x', ω: 'w',
}

/** Symbols that stand for letters inside a word; elsewhere they separate words. */
const SYMBOLS = new Set(['!', '|', '@', '$', '€', '¢', '¥', '×'])

const DIACRITICS = /[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]/gu

/** The separators across which pieces of a word may be joined. */
const JOINING_GAP = /^[ \-_.\u00b7\u2010-\u2015]$/u

/** Characters a renderer draws nothing for (Unicode's Default_Ignorable_Code_Point). */
const INVISIBLE = /\p{Default_Ignorable_Code_Point}/gu

/** A line as the rules compare it: NFKC, without the characters that draw nothing. */
export function nfkc(text: string): string {
  return text.normalize('NFKC').replace(INVISIBLE, '')
}

function fold(word: string): string {
  const plain = word.toLowerCase().normalize('NFKD').replace(DIACRITICS, '').normalize('NFC')
  if (!/\p{L}/u.test(plain)) return plain
  const latin = /[a-z]/.test(plain)
  let out = ''
  for (const ch of plain) out += LOOK_ALIKE[ch] ?? (latin ? OTHER_SCRIPT[ch] : undefined) ?? ch
  return out
}

function isWordChar(ch: string): boolean {
  return /[\p{L}\p{N}\p{M}]/u.test(ch) || SYMBOLS.has(ch)
}

/** The words of an NFKC-normalised text (see the file's comment for the steps). */
export function words(text: string): Word[] {
  const input = text
  const raw: {text: string; start: number; end: number; gap: string; whole?: number}[] = []
  let i = 0
  let gapStart = 0
  while (i < text.length) {
    if (!isWordChar(text[i])) {
      i++
      continue
    }
    const start = i
    while (i < text.length && isWordChar(text[i])) i++
    // A symbol ending a word is punctuation (`fr33!`), `@` opening one marks a handle (`@name`), and symbols
    // around digits alone are a price or an amount (`$100`, `5€`).
    let s = start
    let e = i
    while (e - s > 1 && SYMBOLS.has(text[e - 1])) e--
    if (e - s > 1 && text[s] === '@') s++
    if (!/\p{L}/u.test(text.slice(s, e))) {
      while (e - s > 1 && SYMBOLS.has(text[s])) s++
    }
    raw.push({text: text.slice(s, e), start: s, end: e, gap: text.slice(gapStart, s), ...(e < i ? {whole: i} : {})})
    gapStart = i
  }
  const out: Word[] = []
  // Symbols alone (`€€€`, a lone `!`) are no word, and nothing joins across them.
  let dropped = false
  const push = (text: string, start: number, end: number, gap: string, first: boolean, whole?: number) => {
    if (!/[\p{L}\p{N}\p{M}]/u.test(text)) {
      dropped = true
      return
    }
    // An exclamation mark ending the word stays punctuation (`pill$!`).
    let symbolsEnd = whole ?? end
    while (symbolsEnd > end && input[symbolsEnd - 1] === '!') symbolsEnd--
    const withSymbols = symbolsEnd > end && /\p{L}/u.test(text) ? {withSymbols: {key: fold(text + input.slice(end, symbolsEnd)), end: symbolsEnd}} : {}
    out.push({key: fold(text), start, end, joins: !first && !dropped && JOINING_GAP.test(gap), ...withSymbols})
    dropped = false
  }
  for (let k = 0; k < raw.length; k++) {
    const w = raw[k]
    // Join a run of single characters separated by a single space or punctuation mark.
    let end = k
    if ([...w.text].length === 1) {
      while (end + 1 < raw.length && [...raw[end + 1].text].length === 1 && raw[end + 1].gap.length === 1) end++
    }
    push(raw.slice(k, end + 1).map((r) => r.text).join(''), w.start, raw[end].end, w.gap, k === 0, raw[end].whole)
    k = end
  }
  return out
}

/** The folded words of a list entry (a word or a phrase). */
export function entryKeys(entry: string): string[] {
  return words(nfkc(entry)).map((w) => w.key)
}
