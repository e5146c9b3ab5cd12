/** "Did you mean": the closest of the known words to what was typed, for commands, flags and values alike. */

/** Edit distance between two words (insertions, deletions, substitutions). */
export function distance(a: string, b: string): number {
  let previous = Array.from({length: b.length + 1}, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const row = [i]
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(previous[j] + 1, row[j - 1] + 1, previous[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1))
    }
    previous = row
  }
  return previous[b.length]
}

/**
 * The known word nearest to `typed`, or undefined when even the nearest is further than half the typed word
 * away (at least 2 edits are always allowed): that is noise rather than a typo. Ties go to the first in order.
 */
export function closest(typed: string, known: Iterable<string>): string | undefined {
  return nearest(typed, known)?.word
}

/** `; did you mean "word"?` for the closest known word, or '' when none is close: the end of a message about `typed`. */
export function didYouMean(typed: string, known: Iterable<string>): string {
  const near = closest(typed, known)
  return near ? `; did you mean "${near}"?` : ''
}

/** closest(), with its distance. */
export function nearest(typed: string, known: Iterable<string>): {word: string; d: number} | undefined {
  let best: {word: string; d: number} | undefined
  for (const word of known) {
    const d = distance(typed.toLowerCase(), word.toLowerCase())
    if (best === undefined || d < best.d || (d === best.d && word.localeCompare(best.word) < 0)) best = {word, d}
  }
  // A word that differs only in case (NUDITY for nudity) is the nearest of all: suggested, unless it is what was typed.
  return best && best.word !== typed && best.d <= Math.max(2, Math.floor(typed.length / 2)) ? best : undefined
}
