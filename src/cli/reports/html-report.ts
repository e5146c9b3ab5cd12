/**
 * `mod scan --report scan.html`: one offline page to review the flagged and failed items, and a sample of the
 * safe ones (`--report-sample`). Each item is a thumbnail with the boxes its result gives (what each signal's
 * evidence kind marks: NudeNet regions, text lines and hits) drawn where the JSON says, its path relative to the
 * working folder, its verdict, every category's score, coverage and the signals' notes (hash-list matches, text
 * hits); the page's script (html-report-page.ts) sorts, searches, takes marks and downloads them as labels. The
 * page is written as the scan goes (items are not held in memory) to a temporary file renamed at the end, so a
 * reader never sees half a report. Thumbnails are JPEG data URIs of a few KB each.
 */
import {randomBytes} from 'node:crypto'
import {once} from 'node:events'
import type {WriteStream} from 'node:fs'
import {open, rename, rm} from 'node:fs/promises'
import {basename, isAbsolute, relative, resolve, sep} from 'node:path'

import type {ItemResult} from '../../lib/engine.js'
import {ModError} from '../../lib/errors.js'
import {SIGNALS} from '../../lib/signals/registry.js'
import type {ReportMark} from '../../lib/signals/signal.js'
import {escapeHtml, OFFLINE_CSP, scriptJson} from '../../lib/html.js'
import type {Thumbnail} from '../../lib/image/thumbnail.js'
import {ANIMATION_TRUNCATED_NOTE} from '../format.js'
import type {ScanEntry} from '../inputs.js'
import {besideTemp, cannotWrite, refuseFolder, refuseNonHtml, removeAbandonedTemps, writeFailed} from '../writable.js'
import {REPORT_SCRIPT, REPORT_STYLE} from './html-report-page.js'
import {animationTruncated} from './report.js'

export interface ReportSummary {
  scanned: number
  safe: number
  unsafe: number
  errors: number
  missing: number
  /** Categories of the policy that no signal could check. */
  not_evaluated: string[]
  /** The coverage statement of the run ('' when every category was checked). */
  coverage: string
  /** Safe items shown as a sample to review. */
  sampled: number
}

export interface ReportItemOptions {
  /** A flagged item that a baseline accepts. */
  accepted?: boolean
  /** A safe item shown as a sample to review. */
  sample?: boolean
}

export interface HtmlReport {
  /** Adds a flagged or failed item, or a safe one to review, with its image's thumbnail when it could be made. */
  add(item: ItemResult | ScanEntry, thumb?: Thumbnail, options?: ReportItemOptions): Promise<void>
  /** Writes the summary and puts the page in place. */
  close(summary: ReportSummary): Promise<void>
  /** Drops the unfinished page. */
  abort(): Promise<void>
}

/** The boxes and notes the signals' evidence kinds give for one result, in registry order. */
function evidenceMarks(result: Record<string, unknown>): {marks: ReportMark[]; notes: string[]} {
  const kinds = SIGNALS.flatMap((s) => (s.evidence ? [s.evidence] : []))
  return {marks: kinds.flatMap((k) => k.marks?.(result) ?? []), notes: kinds.flatMap((k) => k.notes?.(result) ?? [])}
}

/**
 * Where an item's file is, for the page: `path` as shown (relative to the working folder when inside it, else as
 * given) and `file`, absolute, which the labels file names so that it reads from wherever it is saved.
 */
function located(source: string, cwd: string): {path: string; file?: string} {
  if (source === '-') return {path: '-'}
  const file = resolve(cwd, source)
  const rel = relative(cwd, file)
  const inside = rel !== '' && rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel)
  return {path: inside ? rel.split(sep).join('/') : source, file}
}

/**
 * Opens the report for writing (`bad_request` when its folder cannot be written, or `file` is a folder); `file`
 * appears only when `close` is called. `cwd` is the folder paths are shown relative to and resolved from.
 */
export async function openHtmlReport(file: string, cwd: string): Promise<HtmlReport> {
  await refuseFolder('--report', file)
  await refuseNonHtml('--report', file)
  const temp = besideTemp(file)
  let handle
  try {
    handle = await open(temp, 'wx')
  } catch (e) {
    throw cannotWrite('--report', file, e)
  }
  await removeAbandonedTemps(file)
  const out: WriteStream = handle.createWriteStream()
  // A write that fails (a full disk, a file size limit) fails the run with the reason, not as an error event nobody
  // heard (which ended mod with Node's stack trace and exit 1, a violation's code, the temporary file left).
  let failure: ModError | undefined
  const failed = (e: unknown): ModError => (failure ??= e instanceof ModError ? e : writeFailed('--report', file, e))
  out.on('error', failed)
  const settled = async (step: Promise<unknown>): Promise<void> => {
    await step.catch((e: unknown) => {
      throw failed(e)
    })
    if (failure) throw failure
  }
  let count = 0
  const written = new Date().toISOString()
  const info = {id: randomBytes(8).toString('hex'), name: basename(file), written, cwd}
  const write = async (text: string): Promise<void> => {
    if (failure) throw failure
    if (!out.write(text)) await settled(once(out, 'drain'))
  }
  const started = write(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${OFFLINE_CSP}">
<title>mod scan report</title><style>${REPORT_STYLE}</style></head>
<body>
<h1>mod scan report</h1>
<p id="summary"></p>
<p class="muted">Flagged and failed items, written ${escapeHtml(written)}; paths relative to ${escapeHtml(cwd)}. Boxes: red, body parts found by NudeNet; blue, lines of text read; orange, text that matched a rule; purple, anything else a signal marks (codes read).</p>
<div id="controls">
<label>Search <input id="search" type="search" placeholder="name or category"></label>
<label>Sort <select id="sort"><option value="input">scan order</option><option value="score">highest score</option><option value="name">name</option><option value="verdict">verdict</option></select></label>
<label>Show <select id="show"><option value="all">all</option><option value="unmarked">not marked yet</option><option value="marked">marked</option><option value="flagged">flagged</option><option value="sample">safe sample</option><option value="error">errors</option></select></label>
<span id="count" class="muted"></span>
<button id="download" type="button">Download labels</button>
<span id="tally"></span>
</div>
<p id="keys" class="muted">Review with the keys <kbd>j</kbd> / <kbd>k</kbd> next / previous item, <kbd>r</kbd> right (a flag that is correct, or a sampled safe item that is safe), <kbd>f</kbd> false alarm (a flag that is wrong), <kbd>m</kbd> missed (a sampled safe item that should have been flagged, for the category in its menu; <kbd>c</kbd> changes the category), <kbd>x</kbd> clear the mark, <kbd>u</kbd> undo, <kbd>/</kbd> search. A mark moves to the next item; a click picks an item. Marks are kept in this browser for this report. Download labels writes the marked items as a labels file for <code>mod eval</code> and <code>mod calibrate</code>: a right flag is labelled with the categories flagged, a false alarm or a safe item as safe, a missed item with its category; unmarked items are left out.</p>
<p id="status" role="status"></p>
<div id="items"></div>
<script id="report-items" type="application/json">[`)
  return {
    async add(item, thumb, options = {}) {
      await started
      const found = 'error' in item ? undefined : evidenceMarks(item)
      const notes = [...(found?.notes ?? []), ...(animationTruncated(item) ? [ANIMATION_TRUNCATED_NOTE] : [])]
      const entry = {
        result: item,
        ...located(item.source, cwd),
        ...(notes.length > 0 ? {notes} : {}),
        ...(found && thumb && found.marks.length > 0 ? {marks: found.marks} : {}),
        ...(thumb ? {thumb: `data:image/jpeg;base64,${thumb.jpeg.toString('base64')}`, width: thumb.width, height: thumb.height} : {}),
        ...(options.accepted ? {accepted: true} : {}),
        ...(options.sample ? {sample: true} : {}),
      }
      await write(`${count++ > 0 ? ',' : ''}\n${scriptJson(entry)}`)
    },
    async close(summary) {
      await started
      await write(`]</script>
<script id="report-summary" type="application/json">${scriptJson(summary)}</script>
<script id="report-info" type="application/json">${scriptJson(info)}</script>
<script>${REPORT_SCRIPT}</script>
</body></html>
`)
      out.end()
      await settled(once(out, 'finish'))
      await settled(rename(temp, file))
    },
    async abort() {
      out.destroy()
      await rm(temp, {force: true})
    },
  }
}
