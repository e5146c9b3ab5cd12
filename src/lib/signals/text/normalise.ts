/**
 * How read text is compared with word lists. Both the line and every list entry go through the same steps, so
 * a list entry matches however it is written:
 * 1. Unicode NFKC (full-width and styled letters become plain ones, ligatures split) and case folding.
 * 2. Split into words at anything that is not a letter, digit or leetspeak symbol; a word keeps its offsets in
 *    the NFKC text so that a hit can name what was read.
 * 3. Runs of single characters are joined: `f r e e`, `f.r.e.e` and `f-r-e-e` read as `free`.
 * 4. Leetspeak in words holding at least one letter: 0→o, 1 ! | l→i, 3→e, 4 @→a, 5 $→s, 7→t, 8→b, 9→g.
 *    `l` and `i` fold together because 1 stands for either; digits alone (a price, a year) stay digits.
 */

export interface Word {
  /** The folded form compared with list entries. */
  key: string
  /** Offsets in the NFKC text. */
  start: number
  end: number
}

const LEET: Record<string, string> = {'0': 'o', '1': 'i', '!': 'i', '|': 'i', l: 'i', '3': 'e', '4': 'a', '@': 'a', '5': 's', $: 's', '7': 't', '8': 'b', '9': 'g'}

/** Symbols that stand for letters inside a word; elsewhere they separate words. */
const LEET_SYMBOLS = new Set(['!', '|', '@', '$'])

export function nfkc(text: string): string {
  return text.normalize('NFKC')
}

function fold(word: string): string {
  const lower = word.toLowerCase()
  if (!/\p{L}/u.test(lower)) return lower
  let out = ''
  for (const ch of lower) out += LEET[ch] ?? ch
  return out
}

function isWordChar(ch: string): boolean {
  return /[\p{L}\p{N}\p{M}]/u.test(ch) || LEET_SYMBOLS.has(ch)
}

/** The words of an NFKC-normalised text (see the file's comment for the steps). */
export function words(text: string): Word[] {
  const raw: {text: string; start: number; end: number; gap: string}[] = []
  let i = 0
  let gapStart = 0
  while (i < text.length) {
    if (!isWordChar(text[i])) {
      i++
      continue
    }
    const start = i
    while (i < text.length && isWordChar(text[i])) i++
    // A symbol ending a word is punctuation (`fr33!`), and `@` opening one marks a handle (`@name`).
    let s = start
    let e = i
    while (e - s > 1 && LEET_SYMBOLS.has(text[e - 1])) e--
    if (e - s > 1 && text[s] === '@') s++
    raw.push({text: text.slice(s, e), start: s, end: e, gap: text.slice(gapStart, s)})
    gapStart = i
  }
  const out: Word[] = []
  for (let k = 0; k < raw.length; k++) {
    const w = raw[k]
    // Join a run of single characters separated by a single space or punctuation mark.
    if ([...w.text].length === 1) {
      let end = k
      while (end + 1 < raw.length && [...raw[end + 1].text].length === 1 && raw[end + 1].gap.length === 1) end++
      if (end > k) {
        out.push({key: fold(raw.slice(k, end + 1).map((r) => r.text).join('')), start: w.start, end: raw[end].end})
        k = end
        continue
      }
    }
    out.push({key: fold(w.text), start: w.start, end: w.end})
  }
  return out
}

/** The folded words of a list entry (a word or a phrase). */
export function entryKeys(entry: string): string[] {
  return words(nfkc(entry)).map((w) => w.key)
}
