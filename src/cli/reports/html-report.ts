/**
 * `mod scan --report scan.html`: one offline page of the flagged and failed items. Each item is a thumbnail
 * with the boxes its result gives (what each signal's evidence kind marks: NudeNet regions, text lines and hits)
 * drawn where the JSON says, its verdict, scores, coverage and the signals' notes (hash-list matches, text hits);
 * a filter by category; the run's summary. The page is written
 * as the scan goes (items are not held in memory) to a temporary file renamed at the end, so a reader never
 * sees half a report. Thumbnails are JPEG data URIs (a few KB each) that the page decodes only once the item is
 * scrolled into view, and items are laid out a page at a time: thousands of items stay usable.
 */
import {randomBytes} from 'node:crypto'
import {once} from 'node:events'
import type {WriteStream} from 'node:fs'
import {open, rename, rm} from 'node:fs/promises'

import type {ItemResult} from '../../lib/engine.js'
import {SIGNALS} from '../../lib/signals/registry.js'
import type {ReportMark} from '../../lib/signals/signal.js'
import {ModError} from '../../lib/errors.js'
import {escapeHtml, OFFLINE_CSP, scriptJson} from '../../lib/html.js'
import type {Thumbnail} from '../../lib/image/thumbnail.js'
import type {ScanEntry} from '../inputs.js'

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
}

export interface HtmlReport {
  /** Adds a flagged or failed item, with its image's thumbnail when it could be made; `accepted` by a baseline. */
  add(item: ItemResult | ScanEntry, thumb?: Thumbnail, accepted?: boolean): Promise<void>
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

const STYLE = `
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222}
h1{font-size:22px}
#filters label{margin-right:12px;white-space:nowrap}
.item{display:flex;align-items:flex-start;gap:16px;border-top:1px solid #ddd;padding:12px 0}
.thumb{position:relative;width:240px;flex:none;margin:0;background:#f3f3f3}
.thumb img{display:block;width:100%;height:100%}
.box{position:absolute;box-sizing:border-box;border:2px solid}
.box.region{border-color:#dc2626}.box.line{border-color:#2563eb}.box.hit{border-color:#f59e0b;border-width:3px}.box.mark{border-color:#7c3aed}
.verdict.unsafe{color:#b91c1c;font-weight:600}.verdict.error{color:#a16207;font-weight:600}
.info h2{font-size:15px;margin:0 0 4px;word-break:break-all}
.info table{border-collapse:collapse}.info td{padding:0 8px 0 0}
.muted{color:#666}
`

/**
 * Renders the items (a page at a time, the next page when the end of the list comes into view), sets each
 * thumbnail's source when it comes into view, and filters by category. Strings from results are set as text,
 * never as markup.
 */
const PAGE_SCRIPT = `
const items = JSON.parse(document.getElementById('report-items').textContent);
const summary = JSON.parse(document.getElementById('report-summary').textContent);
const PAGE = 100;
const el = (tag, cls, text) => { const e = document.createElement(tag); if (cls) e.className = cls; if (text !== undefined) e.textContent = text; return e; };
const categoriesOf = (it) => 'error' in it.result ? ['error'] : it.result.violations.map((v) => v.name);
const counts = {};
for (const it of items) for (const c of categoriesOf(it)) counts[c] = (counts[c] || 0) + 1;
const s = summary;
document.getElementById('summary').textContent = s.scanned + ' scanned: ' + s.safe + ' safe, ' + s.unsafe + ' unsafe, ' + s.errors + ' errors'
  + (s.missing ? '; ' + s.missing + ' not found' : '') + (s.coverage ? ' (' + s.coverage + ')' : '')
  + (s.not_evaluated.length ? '. Not evaluated: ' + s.not_evaluated.join(', ') : '') + '.';
const filters = document.getElementById('filters');
let chosen = 'all';
for (const name of ['all', ...Object.keys(counts).sort()]) {
  const label = el('label');
  const input = el('input');
  input.type = 'radio'; input.name = 'category'; input.value = name; input.checked = name === 'all';
  input.addEventListener('change', () => { chosen = name; show(); });
  label.append(input, ' ' + name + ' (' + (name === 'all' ? items.length : counts[name]) + ')');
  filters.append(label);
}
const seen = new IntersectionObserver((entries) => {
  for (const e of entries) if (e.isIntersecting) { const img = e.target.querySelector('img'); img.src = img.dataset.src; seen.unobserve(e.target); }
}, {rootMargin: '400px'});
const box = (fig, b, w, h, cls, title) => {
  const d = el('div', 'box ' + cls);
  d.style.left = (100 * b[0] / w) + '%'; d.style.top = (100 * b[1] / h) + '%';
  d.style.width = (100 * b[2] / w) + '%'; d.style.height = (100 * b[3] / h) + '%';
  d.title = title;
  fig.append(d);
};
function card(it) {
  const r = it.result;
  const art = el('article', 'item');
  art.dataset.source = r.source;
  const fig = el('figure', 'thumb');
  if (it.thumb) {
    fig.style.aspectRatio = it.width + ' / ' + it.height;
    const img = el('img');
    img.alt = r.source; img.dataset.src = it.thumb;
    fig.append(img);
    for (const m of it.marks || []) box(fig, m.box, it.width, it.height, m.kind, m.caption);
    seen.observe(fig);
  } else fig.append(el('span', 'muted', 'no preview'));
  const info = el('div', 'info');
  info.append(el('h2', '', r.source));
  if ('error' in r) info.append(el('p', 'verdict error', 'ERROR ' + r.error.code + ': ' + r.error.message));
  else {
    info.append(el('p', 'verdict unsafe', 'UNSAFE: ' + r.violations.map((v) => v.name + ' ' + v.confidence.toFixed(2) + ' >= ' + v.threshold).join(', ') + (it.accepted ? ' (accepted by the baseline)' : '')));
    const table = el('table');
    for (const l of r.labels.slice(0, 6)) { const tr = el('tr'); tr.append(el('td', '', l.name), el('td', '', l.score.toFixed(2)), el('td', 'muted', 'threshold ' + l.threshold)); table.append(tr); }
    info.append(table);
    const total = r.labels.length + r.not_evaluated.length;
    info.append(el('p', 'muted', r.not_evaluated.length ? r.labels.length + ' of ' + total + ' categories checked; not evaluated: ' + r.not_evaluated.join(', ') : 'all ' + total + ' categories checked'));
    const notes = el('ul');
    for (const n of it.notes || []) notes.append(el('li', '', n));
    if (notes.childElementCount) info.append(notes);
  }
  art.append(fig, info);
  return art;
}
const list = document.getElementById('items');
let shown = [];
let next = 0;
const more = new IntersectionObserver((entries) => { if (entries.some((e) => e.isIntersecting)) page(); });
const end = document.getElementById('end');
function page() {
  const stop = Math.min(shown.length, next + PAGE);
  for (; next < stop; next++) list.append(card(shown[next]));
  end.textContent = next < shown.length ? next + ' of ' + shown.length + ' shown; more below' : shown.length + ' items';
}
function show() {
  shown = chosen === 'all' ? items : items.filter((it) => categoriesOf(it).includes(chosen));
  list.replaceChildren();
  next = 0;
  page();
}
show();
more.observe(end);
`

/** Opens the report for writing (`bad_request` when its folder cannot be written); `file` appears only when `close` is called. */
export async function openHtmlReport(file: string): Promise<HtmlReport> {
  const temp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`
  let handle
  try {
    handle = await open(temp, 'wx')
  } catch (e) {
    throw new ModError('bad_request', `--report ${file}: cannot write there (${(e as NodeJS.ErrnoException).code ?? 'error'})`)
  }
  const out: WriteStream = handle.createWriteStream()
  let count = 0
  const write = async (text: string): Promise<void> => {
    if (!out.write(text)) await once(out, 'drain')
  }
  const started = write(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${OFFLINE_CSP}">
<title>mod scan report</title><style>${STYLE}</style></head>
<body>
<h1>mod scan report</h1>
<p id="summary"></p>
<p class="muted">Flagged and failed items, written ${escapeHtml(new Date().toISOString())}. Boxes: red, body parts found by NudeNet; blue, lines of text read; orange, text that matched a rule; purple, anything else a signal marks (codes read).</p>
<div id="filters"></div>
<div id="items"></div>
<p id="end" class="muted"></p>
<script id="report-items" type="application/json">[`)
  return {
    async add(item, thumb, accepted) {
      await started
      const found = 'error' in item ? undefined : evidenceMarks(item)
      const entry = {
        result: item,
        ...(found && found.notes.length > 0 ? {notes: found.notes} : {}),
        ...(found && thumb && found.marks.length > 0 ? {marks: found.marks} : {}),
        ...(thumb ? {thumb: `data:image/jpeg;base64,${thumb.jpeg.toString('base64')}`, width: thumb.width, height: thumb.height} : {}),
        ...(accepted ? {accepted: true} : {}),
      }
      await write(`${count++ > 0 ? ',' : ''}\n${scriptJson(entry)}`)
    },
    async close(summary) {
      await started
      await write(`]</script>
<script id="report-summary" type="application/json">${scriptJson(summary)}</script>
<script>${PAGE_SCRIPT}</script>
</body></html>
`)
      out.end()
      await once(out, 'finish')
      await rename(temp, file)
    },
    async abort() {
      out.destroy()
      await rm(temp, {force: true})
    },
  }
}
