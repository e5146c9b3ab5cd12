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

const HEX_VALUE = (() => {
  const t = new Int8Array(256).fill(-1)
  for (let i = 0; i < 10; i++) t[48 + i] = i
  for (let i = 0; i < 6; i++) t[65 + i] = t[97 + i] = 10 + i
  return t
})()

const NEWLINE = 10
const COMMA = 44
const HASH_MARK = 35

function isSpace(b: number): boolean {
  return b === 32 || b === 9 || b === 13
}

/**
 * Parses a hash list: one `hash[,label[,note]]` per line, the hash as 64 hex digits (either case), the label
 * without commas, the note the rest of the line. Blank lines and lines starting with `#` are skipped; spaces
 * around fields are ignored. Reads bytes, not strings, so that ten million lines parse in seconds.
 * Every bad line is reported with its number.
 */
export function parseHashList(text: Buffer): {list: HashList; errors: ListLineError[]} {
  let capacity = Math.max(16, Math.ceil(text.length / 65))
  let hashes = new Uint8Array(capacity * HASH_BYTES)
  let records = new Uint32Array(capacity)
  const recordTexts: string[] = []
  const recordIndex = new Map<string, number>()
  const errors: ListLineError[] = []
  let count = 0
  let line = 0
  let start = 0
  while (start < text.length) {
    let end = text.indexOf(NEWLINE, start)
    if (end === -1) end = text.length
    line++
    let a = start
    let b = end
    start = end + 1
    while (a < b && isSpace(text[a])) a++
    while (b > a && isSpace(text[b - 1])) b--
    if (a === b || text[a] === HASH_MARK) continue
    let hexEnd = a
    while (hexEnd < b && text[hexEnd] !== COMMA && !isSpace(text[hexEnd])) hexEnd++
    if (hexEnd - a !== 2 * HASH_BYTES) {
      errors.push({line, message: `${JSON.stringify(text.toString('utf8', a, Math.min(hexEnd, a + 80)))} is not a PDQ hash (64 hexadecimal digits)`})
      continue
    }
    if (count === capacity) {
      capacity *= 2
      const h = new Uint8Array(capacity * HASH_BYTES)
      h.set(hashes)
      hashes = h
      const r = new Uint32Array(capacity)
      r.set(records)
      records = r
    }
    const base = count * HASH_BYTES
    let bad = false
    for (let k = 0; k < HASH_BYTES; k++) {
      const hi = HEX_VALUE[text[a + 2 * k]]
      const lo = HEX_VALUE[text[a + 2 * k + 1]]
      if (hi < 0 || lo < 0) bad = true
      hashes[base + k] = (hi << 4) | lo
    }
    if (bad) {
      errors.push({line, message: `${JSON.stringify(text.toString('utf8', a, hexEnd))} is not a PDQ hash (64 hexadecimal digits)`})
      continue
    }
    let rest = hexEnd
    while (rest < b && isSpace(text[rest])) rest++
    let record = ''
    if (rest < b) {
      if (text[rest] !== COMMA) {
        errors.push({line, message: 'expected a comma after the hash'})
        continue
      }
      const fields = text.toString('utf8', rest + 1, b)
      const comma = fields.indexOf(',')
      const label = (comma === -1 ? fields : fields.slice(0, comma)).trim()
      const note = comma === -1 ? '' : fields.slice(comma + 1).trim()
      record = note === '' ? label : `${label}\0${note}`
    }
    let index = recordIndex.get(record)
    if (index === undefined) {
      index = recordTexts.push(record) - 1
      recordIndex.set(record, index)
    }
    records[count] = index
    count++
  }
  return {list: {count, hashes: hashes.slice(0, count * HASH_BYTES), records: records.slice(0, count), recordTexts}, errors}
}

/** `invalid_config` naming the file and the first bad lines, or nothing when there are none. */
export function listErrors(file: string, errors: ListLineError[]): ModError | undefined {
  if (errors.length === 0) return undefined
  const shown = errors.slice(0, ERRORS_SHOWN).map((e) => `line ${e.line}: ${e.message}`)
  const more = errors.length > ERRORS_SHOWN ? `; and ${errors.length - ERRORS_SHOWN} more bad lines` : ''
  return new ModError('invalid_config', `hash list ${file}: ${shown.join('; ')}${more}`, {lines: errors.map((e) => e.line)})
}

/** The label and note of entry `i`. */
export function entryOf(list: HashList, i: number): {label: string; note: string} {
  const text = list.recordTexts[list.records[i]]
  const cut = text.indexOf('\0')
  return cut === -1 ? {label: text, note: ''} : {label: text.slice(0, cut), note: text.slice(cut + 1)}
}
