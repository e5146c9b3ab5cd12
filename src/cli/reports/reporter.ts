import {printableLines, visible} from '../visible.js'

/**
 * How one output format writes a command's results: `start` before the first item, `item` for each one as it
 * comes (a scanned image, a hash, a video segment), `end` with what closes the run (a scan's summary line, the one
 * result of a command that has one). Each returns the text to write, possibly empty; `openOutput` (../output.ts)
 * writes it to stdout, so no command writes its results any other way.
 */
export interface Reporter<Item, End = string> {
  start(): string
  item(item: Item): string
  end(end: End): string
}

/** The formats every command that prints results takes. */
export const PLAIN_FORMATS = ['table', 'json', 'ndjson'] as const
export type PlainFormat = (typeof PLAIN_FORMATS)[number]

/** A command's reporters by format, each made when the command knows what it needs (a run's coverage, say). */
export type Reporters<F extends string, Item, End> = Record<F, () => Reporter<Item, End>>

const nothing = (): string => ''

/** Text ending a line, or nothing for no text. */
const line = (text: string): string => (text === '' ? '' : `${text}\n`)

/**
 * Lines of text for a terminal: a row per item and, when given, closing text (a table, a verdict); the newline
 * ending each is added, and empty text prints nothing. Every line is made printable (the colours `mod` added
 * kept): a row or table that colours text from elsewhere must have made it visible first.
 */
export function tableReporter<Item, End>(row?: (item: Item) => string, closing?: (end: End) => string): Reporter<Item, End> {
  return {
    start: nothing,
    item: row ? (item) => line(printableLines(row(item))) : nothing,
    end: closing ? (end) => line(printableLines(closing(end))) : nothing,
  }
}

/** Text as it is, at the end: a document (a policy's YAML) or lines that end with their newline. */
export function textReporter(): Reporter<never, string> {
  return {start: nothing, item: nothing, end: (text) => text}
}

/**
 * Characters a terminal may act on or reorder: DEL and the C1 controls (U+009B is an 8-bit CSI to terminals that read
 * C1 controls, as U+001B [ is to all), the line and paragraph separators, and the bidirectional controls (U+202E
 * shows a file name backwards). JSON.stringify escapes only C0 controls.
 */
export const TERMINAL_ACTIVE = /[\u007f-\u009f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]/g

/**
 * JSON.stringify's text with those characters written as `\uXXXX` escapes too: the same value to any parser (they
 * can only stand in strings), and nothing in it that a file name controls acts on a terminal it is shown on.
 */
export function jsonText(value: unknown, indent?: number): string {
  return JSON.stringify(value, null, indent).replace(TERMINAL_ACTIVE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
}

/** One JSON array of the items, streamed: `[` at once, each item as it comes, `]` at the end. */
export function jsonArrayReporter<Item>(value: (item: Item) => unknown = (item) => item): Reporter<Item, unknown> {
  let count = 0
  return {
    start: () => '[',
    item: (item) => `${count++ > 0 ? ',' : ''}\n${jsonText(value(item))}`,
    end: () => `${count > 0 ? '\n' : ''}]\n`,
  }
}

/** One JSON document at the end (the result of a command with one result), indented as `indent` says. */
export function jsonValueReporter<Item, End>(value: (end: End) => unknown = (end) => end, indent?: number): Reporter<Item, End> {
  return {start: nothing, item: nothing, end: (end) => `${jsonText(value(end), indent)}\n`}
}

/** One JSON value per line: for each item where `item` is given, and for the end where `end` is given. */
export function ndjsonReporter<Item, End>(item?: (item: Item) => unknown, end?: (end: End) => unknown): Reporter<Item, End> {
  return {
    start: nothing,
    item: item ? (i) => `${jsonText(item(i))}\n` : nothing,
    end: end ? (e) => `${jsonText(end(e))}\n` : nothing,
  }
}

/**
 * The reporters of a command with one result: its table's lines, the result as JSON indented by two spaces (as the
 * listing commands have always printed it), and as one JSON line for ndjson. `json` picks what the JSON shows.
 */
export function oneResultReporters<End>(table: (end: End) => readonly string[], json: (end: End) => unknown = (end) => end): Reporters<PlainFormat, never, End> {
  return {
    // A listing is not coloured: every control in it is from elsewhere (a policy's prompts, a path, a manifest's
    // names), and each of its lines stays one, whatever line break a name holds.
    table: () => tableReporter<never, End>(undefined, (end) => table(end).map(visible).join('\n')),
    json: () => jsonValueReporter<never, End>(json, 2),
    ndjson: () => ndjsonReporter<never, End>(undefined, json),
  }
}
