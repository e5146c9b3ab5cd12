/**
 * Text that came from elsewhere (a server's messages and names, a file's name, a policy's keys, a code's payload)
 * made safe to print as part of one line: every control character, every invisible formatting character (zero
 * widths, the byte order mark, soft hyphens, the characters that reorder text) and the characters that break
 * lines is written as a visible escape (`\x0a`, `\x1b`, `\u200b`). So no such text can start a line of its own
 * on a terminal or in a CI log (GitHub Actions reads any line of a step's output that starts with `::` as a
 * workflow command: `::add-mask::`, `::stop-commands::`), a terminal obeys none of its escape sequences (a colour
 * that outlives the program, a window title), and two names that differ only by what does not show are told apart.
 */
export const HIDDEN_CHARACTERS = '[\\p{Cc}\\p{Cf}\\p{Zl}\\p{Zp}\\p{Cs}]'
const CONTROLS = new RegExp(HIDDEN_CHARACTERS, 'gu')
/**
 * The same, but the colour sequences (SGR, `ESC [ … m`) that the table output adds itself are kept: they only
 * colour. So every text from elsewhere in such a line must have been through `visible` first.
 */
const CONTROLS_BUT_COLOUR = new RegExp(`\\x1b\\[[0-9;]*m|${CONTROLS.source}`, 'gu')

function escapeChar(c: string): string {
  if (c.startsWith('\x1b[')) return c
  const code = c.codePointAt(0) as number
  if (code < 0x100) return `\\x${code.toString(16).padStart(2, '0')}`
  return code < 0x10000 ? `\\u${code.toString(16).padStart(4, '0')}` : `\\u{${code.toString(16)}}`
}

/** Text from elsewhere as part of one line: every control character escaped, colour sequences included. */
export function visible(text: string): string {
  return text.replace(CONTROLS, escapeChar)
}

/** A line about to be printed whose colours `mod` added itself, made safe whatever else went into it. */
function printableLine(line: string): string {
  return line.replace(CONTROLS_BUT_COLOUR, escapeChar)
}

/** Each line of `text` made printable, the line breaks between them kept. */
export function printableLines(text: string): string {
  return text.split('\n').map(printableLine).join('\n')
}
