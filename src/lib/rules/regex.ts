/**
 * The regular expressions of text rules. The text they run on is read from images, so whoever uploads an image
 * chooses it: they run on RE2's engine (re2js, a JavaScript port of RE2), which matches in time linear in the
 * text, never backtracking. RE2's syntax has no lookaround and no backreferences, since neither can be matched in
 * linear time; such patterns are refused with a message that says so. A compiled pattern may hold at most
 * MAX_PROGRAM_SIZE instructions: the engine's work per character read grows with the number of instructions at
 * most, so this bounds the cost of a line by its length.
 */
import {RE2JS, RE2JSSyntaxException} from 're2js'

/** The largest compiled pattern accepted, in RE2 instructions (`a{1000}` compiles to 1 002). */
export const MAX_PROGRAM_SIZE = 1000

export type Pattern = RE2JS

/** Where a pattern matches: start and end offsets in the text (UTF-16 units, as String.slice takes them). */
export interface PatternMatch {
  start: number
  end: number
}

function syntaxProblem(e: RE2JSSyntaxException): string {
  const what = e.getDescription()
  const where = e.getPattern() ?? ''
  const linear = 'which RE2 syntax leaves out so that matching takes time linear in the text'
  const lookaround = /^\(\?<?[=!]/.exec(where)
  if (lookaround) return `uses lookahead or lookbehind (\`${lookaround[0]}\`), ${linear}`
  if (what === 'invalid escape sequence' && /^\\[1-9k]/.test(where)) return `uses a backreference (\`${where}\`), ${linear}`
  return `is not a valid regular expression (RE2 syntax): ${what}: \`${where}\``
}

/**
 * Why `source` cannot be a text rule's pattern (bad syntax, lookaround, backreference, size), as the end of a
 * sentence that starts with the pattern's place; undefined when it can.
 */
export function patternProblem(source: string): string | undefined {
  try {
    // Compiled without the case-insensitive flag so that a syntax message quotes the pattern as written.
    RE2JS.compile(source)
  } catch (e) {
    if (e instanceof RE2JSSyntaxException) return syntaxProblem(e)
    throw e
  }
  const size = compilePattern(source).programSize()
  if (size > MAX_PROGRAM_SIZE) {
    return `compiles to ${size} instructions, more than the ${MAX_PROGRAM_SIZE} allowed (each character read may cost a step per instruction); use smaller repetition counts`
  }
  return undefined
}

/** A pattern that patternProblem accepted, case-insensitive (Unicode simple case folding). */
export function compilePattern(source: string): Pattern {
  return RE2JS.compile(source, RE2JS.CASE_INSENSITIVE)
}

/** The non-empty, non-overlapping matches of `pattern` in `text`, left to right. */
export function patternMatches(pattern: Pattern, text: string): PatternMatch[] {
  const found: PatternMatch[] = []
  const m = pattern.matcher(text)
  while (m.find()) if (m.end() > m.start()) found.push({start: m.start(), end: m.end()})
  return found
}
