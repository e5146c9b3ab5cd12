/**
 * CTC greedy decoding of the recogniser's output: the most likely symbol per time step, repeats collapsed,
 * blanks dropped. The recogniser's classes are the blank (index 0), the dictionary's symbols in file order,
 * then the space (PaddleOCR's `use_space_char`), so class i ≥ 1 is `symbols[i - 1]`.
 *
 * The recogniser often lets the blank win over the space between words, in capitals most of all
 * (`WHENTHEZORBLAX`), while the space still gets a clear share of the probability in that gap; inside a
 * word it gets next to none. So a space is put between two symbols when the space's probability reached
 * `spaceHint` at a step between them, which restores the words that whole-word rules need. Only between
 * letters and digits: around `@`, `.`, `/` or `_` a gap is the glyph's own spacing, not a word boundary.
 */

const WORDLIKE = /^[\p{L}\p{N}]$/u

/** The space's probability in a gap that marks a word boundary (see above). */
export const SPACE_HINT = 0.05

export interface DecodedLine {
  text: string
  /** Mean probability of the kept symbols; 0 for an empty line. */
  confidence: number
}

/** The recogniser's symbols from the dictionary file's text: one symbol a line, then the space. */
export function symbolsFromKeys(keys: string): string[] {
  const lines = keys.split('\n').map((l) => l.replace(/\r$/, ''))
  if (lines.at(-1) === '') lines.pop()
  return [...lines, ' ']
}

/** Decodes `n` sequences of `steps` × `classes` probabilities laid out one after another. */
export function ctcDecode(probs: Float32Array, n: number, steps: number, classes: number, symbols: readonly string[], spaceHint = SPACE_HINT): DecodedLine[] {
  const out: DecodedLine[] = []
  const space = symbols.lastIndexOf(' ') + 1
  for (let s = 0; s < n; s++) {
    let text = ''
    let sum = 0
    let kept = 0
    let previous = -1
    let gapSpace = 0
    for (let t = 0; t < steps; t++) {
      const base = (s * steps + t) * classes
      let best = 0
      let bestP = probs[base]
      for (let c = 1; c < classes; c++) {
        const p = probs[base + c]
        if (p > bestP) {
          bestP = p
          best = c
        }
      }
      if (space > 0 && best === 0) gapSpace = Math.max(gapSpace, probs[base + space])
      if (best !== 0 && best !== previous) {
        const symbol = symbols[best - 1] ?? ''
        if (gapSpace >= spaceHint && WORDLIKE.test(symbol) && WORDLIKE.test(text.at(-1) ?? '')) text += ' '
        gapSpace = 0
        text += symbol
        sum += bestP
        kept++
      }
      previous = best
    }
    out.push({text: text.trim(), confidence: kept === 0 ? 0 : sum / kept})
  }
  return out
}
