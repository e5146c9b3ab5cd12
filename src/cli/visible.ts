/**
 * Text that came from elsewhere (a server's messages and names, a file's name, a code's payload) made safe to print
 * as part of one line: every control character, and the characters that reorder or break lines, is written as a
 * visible escape (`\x0a`, `\x1b`, `\u2028`). So no such text can start a line of its own on a terminal or in a CI
 * log: GitHub Actions reads any line of a step's output that starts with `::` as a workflow command
 * (`::add-mask::`, `::stop-commands::`), and a terminal obeys escape sequences.
 */
const CONTROLS = /[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g
/** The same, but the colour sequences (SGR, `ESC [ … m`) that the table output adds itself are kept: they only colour. */
const CONTROLS_BUT_COLOUR = new RegExp(`\\x1b\\[[0-9;]*m|${CONTROLS.source}`, 'g')

function escapeChar(c: string): string {
  if (c.length > 1) return c
  const code = c.charCodeAt(0)
  return code < 0x100 ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`
}

/** Text from elsewhere as part of one line: every control character escaped. */
export function visible(text: string): string {
  return text.replace(CONTROLS, escapeChar)
}

/** A line about to be printed, made safe whatever went into it; its colours kept. */
export function printableLine(line: string): string {
  return line.replace(CONTROLS_BUT_COLOUR, escapeChar)
}

/** Each line of `text` made printable, the line breaks between them kept. */
export function printableLines(text: string): string {
  return text.split('\n').map(printableLine).join('\n')
}
