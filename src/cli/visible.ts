/**
 * The zero-width joiner and non-joiner are kept between two characters whose drawing they change, so each shows:
 * emoji (a family, a flag, a skin tone joined into one picture) and the scripts whose letters they join or part
 * (Arabic and Persian, the Indic scripts, Syriac, Thaana, N'Ko, Mongolian, Sinhala). Between Latin letters, or at
 * either end, they change nothing on screen and are escaped like the rest.
 */
const JOINABLE =
  '[\\p{Extended_Pictographic}\\p{Emoji_Modifier}\\uFE0F\\p{Script=Arabic}\\p{Script=Syriac}\\p{Script=Thaana}\\p{Script=Nko}' +
  '\\p{Script=Devanagari}\\p{Script=Bengali}\\p{Script=Gurmukhi}\\p{Script=Gujarati}\\p{Script=Oriya}\\p{Script=Tamil}' +
  '\\p{Script=Telugu}\\p{Script=Kannada}\\p{Script=Malayalam}\\p{Script=Sinhala}\\p{Script=Mongolian}]'
/**
 * Text that came from elsewhere (a server's messages and names, a file's name, a policy's keys, a code's payload)
 * made safe to print as part of one line: every control character, every invisible formatting character (zero
 * widths, the byte order mark, soft hyphens, the characters that reorder text) and the characters that break
 * lines is written as a visible escape (`\x0a`, `\x1b`, `\u200b`). So no such text can start a line of its own
 * on a terminal or in a CI log (GitHub Actions reads any line of a step's output that starts with `::` as a
 * workflow command: `::add-mask::`, `::stop-commands::`), a terminal obeys none of its escape sequences (a colour
 * that outlives the program, a window title), and two names that differ only by what does not show are told apart
 * (but for the joiners that JOINABLE keeps).
 */
export const HIDDEN_CHARACTERS = `(?:(?![\\u200C\\u200D])[\\p{Cc}\\p{Cf}\\p{Zl}\\p{Zp}\\p{Cs}]|(?<!${JOINABLE})[\\u200C\\u200D]|[\\u200C\\u200D](?!${JOINABLE}))`
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
