import chalk from 'chalk'

import type {ItemResult} from '../lib/engine.js'
import {plural} from '../lib/plural.js'
import {formatSize} from '../lib/sizes.js'
import {evidenceNotes} from '../lib/signals/evidence.js'
import {SIGNALS} from '../lib/signals/registry.js'
import type {Coverage, VideoResult} from '../lib/types.js'
import type {ScanEntry} from './inputs.js'
import {visible} from './visible.js'

/**
 * How much of the policy a verdict covers, when not all of it was looked for in the image: "3 of 11 categories
 * checked", "5 of 13 categories checked, 1 by text only: hate_symbols". A SAFE verdict over a partial check must
 * say so wherever a person reads it; empty when every category was checked in the image.
 */
export function coverage(c: Coverage): string {
  const textOnly = c.text_only ?? []
  if (c.evaluated === c.total && textOnly.length === 0) return ''
  const checked = `${c.evaluated} of ${plural(c.total, 'category', 'categories')} checked`
  return textOnly.length > 0 ? `${checked}, ${textOnly.length} by text only: ${textOnly.join(', ')}` : checked
}

/** Where the missing model goes: here, or on the server of a remote run (`mod scan --server`), which scores. */
function pullOn(server: string | undefined): string {
  return server === undefined ? '' : ' on the server'
}

/** The summary's coverage clause, with what adds the rest: "3 of 11 categories checked; run `mod models pull fast` for the rest". */
export function coverageHint(c: Coverage, preset: string, server?: string): string {
  const text = coverage(c)
  return c.evaluated < c.total ? `${text}; run \`mod models pull ${preset}\`${pullOn(server)} for the rest` : text
}

/** The one stderr line that says what a partial check leaves out, and how to get it. */
export function notEvaluatedLine(names: readonly string[], preset: string, server?: string): string {
  return `mod: not evaluated: ${names.join(', ')} (no CLIP model installed${pullOn(server)}; run \`mod models pull ${preset}\`${pullOn(server)} to score them; --strict makes this exit 2)`
}

/** What a result of an animation whose pictures were not all scored (`animation_truncated`) says to a person. */
export const ANIMATION_TRUNCATED_NOTE = 'some pictures of the animation not scored'

/** The evidence kinds of the registry's signals: what notes a violation or a segment in the table. */
const KINDS = SIGNALS.flatMap((s) => (s.evidence ? [s.evidence] : []))

/**
 * One readable line per item for the table output; `partial`: the run's coverage statement, shown on SAFE rows.
 * What came from elsewhere (the name, a message, a code's payload in a note) is made visible before it is coloured.
 */
export function formatRow(item: ItemResult | ScanEntry, partial = ''): string {
  const source = visible(item.source)
  if ('error' in item) return `${chalk.yellow('ERROR ')}  ${source}  ${visible(`${item.error.code}: ${item.error.message}`)}`
  if (item.is_safe) {
    const top = item.labels[0]
    const left = item.animation_truncated ? [ANIMATION_TRUNCATED_NOTE] : []
    const notes = [...(partial ? [partial] : []), ...left, ...(top ? [`highest: ${top.name} ${top.score.toFixed(2)}`] : [])]
    return `${chalk.green('SAFE  ')}  ${source}${notes.length > 0 ? chalk.dim(`  (${visible(notes.join('; '))})`) : ''}`
  }
  const found = item.violations.map((v) => `${v.name} ${v.confidence.toFixed(2)}>=${v.threshold}${evidenceNotes(KINDS, item, v.name, 'image')}`).join(', ')
  return `${chalk.red('UNSAFE')}  ${source}  ${visible(found)}`
}

/** What a scan found; `missing`: paths given that do not exist, counted apart from the inputs scanned. */
export interface Counts {
  safe: number
  unsafe: number
  /** Of the unsafe ones, those a baseline accepts. */
  accepted?: number
  errors: number
  missing?: number
}

/**
 * "3 scanned: 2 safe, 1 unsafe, 0 errors", "1 unsafe (1 accepted by the baseline)" when a baseline accepts some,
 * then "; 1 not found" when a path given does not exist.
 */
export function summaryLine(counts: Counts, coverage = ''): string {
  const accepted = counts.accepted ? ` (${counts.accepted} accepted by the baseline)` : ''
  const scanned = `${counts.safe + counts.unsafe + counts.errors} scanned: ${counts.safe} safe, ${counts.unsafe} unsafe${accepted}, ${plural(counts.errors, 'error')}`
  return `${scanned}${coverage ? ` (${coverage})` : ''}${counts.missing ? `; ${counts.missing} not found` : ''}`
}

function clock(seconds: number): string {
  const m = Math.floor(seconds / 60)
  return `${m}:${(seconds - m * 60).toFixed(1).padStart(4, '0')}`
}

/**
 * The table output of scan-video: a verdict line, then one line per segment (with what its signals note: its first
 * text hit, when the policy reads the text of videos, its nearest hash-list entry). `partial`: the run's coverage
 * statement.
 */
export function formatVideo(r: VideoResult, partial = ''): string {
  const head = `${r.is_safe ? chalk.green('SAFE  ') : chalk.red('UNSAFE')}  ${visible(r.source)}  (${r.duration.toFixed(1)} s, ${plural(r.frames_analyzed, 'frame')} at ${r.fps} fps${r.stopped_early ? ', stopped early' : ''}${partial ? `; ${partial}` : ''})`
  const lines = r.violations.flatMap((v) =>
    v.segments.map((s) => visible(`  ${v.name.padEnd(16)} ${clock(s.start)}-${clock(s.end)}  ${plural(s.frames, 'frame')}, max ${s.max_confidence.toFixed(2)} >= ${v.threshold}${evidenceNotes(KINDS, s, v.name, 'segment')}`)),
  )
  return [head, ...lines].join('\n')
}

/** A byte count for people, as every message writes sizes ("335.24 MiB"); "-" when unknown. */
export function formatBytes(bytes: number | undefined): string {
  return bytes === undefined ? '-' : formatSize(bytes)
}
