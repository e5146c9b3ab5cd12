import {hasUtf16Mark, looksUtf16} from '../../config-file.js'
import {ModError} from '../../errors.js'
import {HASH_BYTES} from './hash256.js'

/**
 * A hash list in memory, compact for millions of entries: the hashes back to back, and for each one the
 * index of its (label, note) record; identical records are stored once.
 */
export interface HashList {
  count: number
  /** count x 32 bytes, in the order of the file. */
  hashes: Uint8Array
  /** Record index of each hash. */
  records: Uint32Array
  /** Distinct "label\0note" strings ('' when the line has neither). */
  recordTexts: string[]
}

export interface ListLineError {
  line: number
  message: string
}

/** Errors listed in a message; the count says how many more there are. */
const ERRORS_SHOWN = 5

/** The byte of two hex digits, indexed by (first char << 8) | second char; -1 if either is not a hex digit. */
const HEX_PAIR = (() => {
  const digit = new Int8Array(256).fill(-1)
  for (let i = 0; i < 10; i++) digit[48 + i] = i
  for (let i = 0; i < 6; i++) digit[65 + i] = digit[97 + i] = 10 + i
  const t = new Int16Array(65536).fill(-1)
  for (let hi = 0; hi < 256; hi++) {
    for (let lo = 0; lo < 256; lo++) if (digit[hi] >= 0 && digit[lo] >= 0) t[(hi << 8) | lo] = (digit[hi] << 4) | digit[lo]
  }
  return t
})()

const NEWLINE = 10
const COMMA = 44
const HASH_MARK = 35

function isSpace(b: number): boolean {
  return b === 32 || b === 9 || b === 13
}

/** The record of the fields after the hash (bytes `from` to `to`): the label before the first comma, the note after. */
function recordOf(text: Buffer, from: number, to: number): string {
  const fields = text.toString('utf8', from, to)
  const comma = fields.indexOf(',')
  const label = (comma === -1 ? fields : fields.slice(0, comma)).trim()
  const note = comma === -1 ? '' : fields.slice(comma + 1).trim()
  return note === '' ? label : `${label}\0${note}`
}

/**
 * The distinct records of a list, found by the bytes of their fields: lines repeat a few labels millions of
 * times, and hashing the bytes in place spares making a string of each line's fields. Index 0 is the empty
 * record (a line with the hash alone).
 */
function recordTable(text: Buffer): {texts: string[]; indexOf: (text: Buffer, from: number, to: number) => number} {
  const texts = ['']
  const byText = new Map<string, number>([['', 0]])
  /** Per hash of the bytes: the first fields seen with it (where they are in the text, and their record). */
  const byBytes = new Map<number, {from: number; to: number; index: number}>()
  const indexOf = (bytes: Buffer, from: number, to: number): number => {
    let h = 0x811c9dc5
    for (let k = from; k < to; k++) h = Math.imul(h ^ bytes[k], 0x01000193)
    const seen = byBytes.get(h)
    if (seen && seen.to - seen.from === to - from) {
      let same = true
      for (let k = 0; k < to - from && same; k++) same = bytes[seen.from + k] === bytes[from + k]
      if (same) return seen.index
    }
    const record = recordOf(bytes, from, to)
    let index = byText.get(record)
    if (index === undefined) {
      index = texts.push(record) - 1
      byText.set(record, index)
    }
    if (!seen) byBytes.set(h, {from, to, index})
    return index
  }
  return {texts, indexOf}
}

const UTF16 = 'the file is UTF-16 text (it starts with a UTF-16 byte order mark): save the list as UTF-8'
const UTF16_NO_MARK = 'the file is UTF-16 text without a byte order mark (a NUL byte beside every letter): save the list as UTF-8'

/**
 * Parses a hash list: one `hash[,label[,note]]` per line, the hash as 64 hex digits (either case), the label
 * without commas, the note the rest of the line. Blank lines and lines starting with `#` are skipped; spaces
 * around fields are ignored. Reads bytes, not strings (a record's text is made once per distinct record),
 * so that ten million lines parse in seconds. Every bad line is reported with its number and the reason,
 * never its content.
 */
export function parseHashList(text: Buffer): {list: HashList; errors: ListLineError[]} {
  // Windows tools write a byte order mark: UTF-8's is skipped, and UTF-16 text (PowerShell 5's `>`) is named as
  // such rather than as a file of lines that are all too long.
  // Without its mark (`Out-File -Encoding unicode` of some tools), every line would be reported as no hash.
  const utf16 = hasUtf16Mark(text) ? UTF16 : looksUtf16(text) ? UTF16_NO_MARK : undefined
  if (utf16 !== undefined) {
    return {list: {count: 0, hashes: new Uint8Array(0), records: new Uint32Array(0), recordTexts: ['']}, errors: [{line: 1, message: utf16}]}
  }
  let capacity = Math.max(16, Math.ceil(text.length / 65))
  let hashes = new Uint8Array(capacity * HASH_BYTES)
  let records = new Uint32Array(capacity)
  const distinct = recordTable(text)
  const errors: ListLineError[] = []
  let count = 0
  let line = 0
  let start = text[0] === 0xef && text[1] === 0xbb && text[2] === 0xbf ? 3 : 0
  const {length} = text
  // The reason a field is not a hash, never the field itself: a list may point at a file that holds secrets.
  const notHash = (a: number, b: number): string => {
    let end = a
    while (end < b && text[end] !== COMMA && !isSpace(text[end])) end++
    const chars = text.toString('utf8', a, end).length
    if (chars !== 2 * HASH_BYTES) return `not a PDQ hash: ${chars} characters where 64 hexadecimal digits are expected`
    let at = a
    while (HEX_PAIR[(text[at] << 8) | 48] >= 0) at++
    return `not a PDQ hash: character ${at - a + 1} is not a hexadecimal digit`
  }
  while (start < length) {
    let end = text.indexOf(NEWLINE, start)
    if (end === -1) end = length
    line++
    let a = start
    let b = end
    start = end + 1
    while (a < b && isSpace(text[a])) a++
    while (b > a && isSpace(text[b - 1])) b--
    if (a === b || text[a] === HASH_MARK) continue
    if (count === capacity) {
      capacity *= 2
      const h = new Uint8Array(capacity * HASH_BYTES)
      h.set(hashes)
      hashes = h
      const r = new Uint32Array(capacity)
      r.set(records)
      records = r
    }
    // The hash is decoded in place, then checked: 64 hex digits (bad turns negative on any other), followed
    // by the end, a comma or a space.
    const hexEnd = a + 2 * HASH_BYTES
    const base = count * HASH_BYTES
    let bad = hexEnd > b ? -1 : 0
    if (bad === 0) {
      for (let k = 0, at = a; k < HASH_BYTES; k++, at += 2) {
        const byte = HEX_PAIR[(text[at] << 8) | text[at + 1]]
        bad |= byte
        hashes[base + k] = byte
      }
    }
    if (bad < 0 || (hexEnd < b && text[hexEnd] !== COMMA && !isSpace(text[hexEnd]))) {
      errors.push({line, message: notHash(a, b)})
      continue
    }
    let rest = hexEnd
    while (rest < b && isSpace(text[rest])) rest++
    let index = 0
    if (rest < b) {
      if (text[rest] !== COMMA) {
        errors.push({line, message: 'expected a comma after the hash'})
        continue
      }
      index = distinct.indexOf(text, rest + 1, b)
    }
    records[count] = index
    count++
  }
  return {list: {count, hashes: hashes.slice(0, count * HASH_BYTES), records: records.slice(0, count), recordTexts: distinct.texts}, errors}
}

/** `invalid_config` naming the file and the first bad lines, or nothing when there are none. */
export function listErrors(file: string, errors: ListLineError[]): ModError | undefined {
  if (errors.length === 0) return undefined
  const shown = errors.slice(0, ERRORS_SHOWN).map((e) => `line ${e.line}: ${e.message}`)
  const more = errors.length > ERRORS_SHOWN ? `; and ${errors.length - ERRORS_SHOWN} more bad lines` : ''
  return new ModError('invalid_config', `hash list ${file}: ${shown.join('; ')}${more}`, {lines: errors.map((e) => e.line)})
}

/** The label and note of a record text ("label\0note", or the label alone). */
export function recordFields(text: string): {label: string; note: string} {
  const cut = text.indexOf('\0')
  return cut === -1 ? {label: text, note: ''} : {label: text.slice(0, cut), note: text.slice(cut + 1)}
}

/** The label and note of entry `i`. */
export function entryOf(list: HashList, i: number): {label: string; note: string} {
  return recordFields(list.recordTexts[list.records[i]])
}
