import {Document, visit, type ToStringOptions} from 'yaml'

import {HIDDEN_CHARACTERS} from './visible.js'

/** What a terminal acts on or does not show (visible.ts escapes the same). */
const HIDDEN = new RegExp(HIDDEN_CHARACTERS, 'u')
/** The same, in the text written, the line breaks between its lines apart. */
const HIDDEN_IN_TEXT = new RegExp(`(?!\\n)${HIDDEN_CHARACTERS}`, 'gu')

/** A character as a YAML double-quoted escape (`\x1B`, `\u202E`, `\U000E0001`), which YAML reads back as it. */
function yamlEscape(c: string): string {
  const code = c.codePointAt(0) as number
  const hex = code.toString(16).toUpperCase()
  return code < 0x100 ? `\\x${hex.padStart(2, '0')}` : code < 0x10000 ? `\\u${hex.padStart(4, '0')}` : `\\U${hex.padStart(8, '0')}`
}

/**
 * `value` as YAML to print on a terminal. The yaml package writes a string's format characters raw (a prompt's
 * U+202E turns the rest of its line around on screen; a zero-width space does not show): such a string is
 * double-quoted, and each such character written as its escape, which reads back as the same string.
 */
export function printableYaml(value: unknown, options: ToStringOptions = {}): string {
  const doc = new Document(value)
  visit(doc, {
    Scalar(_key, node) {
      if (typeof node.value === 'string' && HIDDEN.test(node.value)) node.type = 'QUOTE_DOUBLE'
    },
  })
  return doc.toString(options).replace(HIDDEN_IN_TEXT, yamlEscape)
}
