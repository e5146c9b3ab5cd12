/**
 * `mod scan --report page.html`: one offline page of the flagged and failed items (a Content-Security-Policy
 * forbids any fetch; thumbnails are inline data URIs). Each item is a card: its thumbnail with the boxes the
 * result carries drawn over it (NudeNet regions, text lines read, text-rule hits), its verdict, violations,
 * highest scores, coverage, hash-list matches; chips filter by category, errors and accepted items. Cards are
 * built from the embedded data a page at a time as the reader scrolls, so a report of thousands of items opens at
 * once and decodes only the thumbnails shown.
 */
import type {ItemResult} from '../../lib/engine.js'
import type {ScanEntry} from '../inputs.js'
import type {Thumbnail} from './thumbnail.js'

export interface HtmlItem {
  item: ItemResult | ScanEntry
  accepted: boolean
  thumb?: Thumbnail
}

export interface HtmlRun {
  summary: string
  version: string
  categories: number
  generated: string
}

/** Cards built at once, and again each time the reader nears the end of those shown. */
export const CARDS_PER_PAGE = 60
/** Highest scores listed on a card. */
const TOP_LABELS = 5

type Box = [number, number, number, number]

/** One card's data, compact (thousands of them are embedded): `v` unsafe | accepted | error. */
interface CardData {
  s: string
  v: 'unsafe' | 'accepted' | 'error'
  t?: string
  w?: number
  h?: number
  err?: [string, string]
  viol?: [string, number, number][]
  top?: [string, number][]
  ne?: number
  cats?: string[]
  regions?: [string, number, Box][]
  lines?: [string, Box][]
  hits?: [string, string, string, Box][]
  matches?: [string, string, number, string][]
}

function cardData({item, accepted, thumb}: HtmlItem, categories: number): CardData {
  const base = {s: item.source, ...(thumb ? {t: thumb.uri, w: thumb.width, h: thumb.height} : {})}
  if ('error' in item) return {...base, v: 'error', err: [item.error.code, item.error.message]}
  return {
    ...base,
    v: accepted ? 'accepted' : 'unsafe',
    viol: item.violations.map((x) => [x.name, x.confidence, x.threshold]),
    top: item.labels.slice(0, TOP_LABELS).map((l) => [l.name, l.score]),
    ne: item.not_evaluated.length > 0 ? categories - item.not_evaluated.length : undefined,
    cats: item.violations.map((x) => x.name),
    regions: item.regions?.map((r) => [r.label, r.score, r.box as Box]),
    lines: item.text?.map((l) => [l.text, l.box as Box]),
    hits: item.text_hits?.map((h) => [h.rule, h.category, h.text, h.box as Box]),
    matches: item.matches?.map((m) => [m.list, m.label, m.distance, m.category]),
  }
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)
/** JSON inside <script>: "<" escaped so no "</script>" can end the block early. */
const scriptJson = (value: unknown) => JSON.stringify(value).replace(/</g, '\\u003c')

const STYLE = `
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222}
h1{font-size:22px;margin:0 0 4px}.meta{color:#666;margin-bottom:12px}
.chips{display:flex;flex-wrap:wrap;gap:6px;margin:12px 0}
.chip{border:1px solid #bbb;border-radius:14px;padding:2px 10px;background:#fff;cursor:pointer;font:inherit}
.chip[aria-pressed=true]{background:#222;color:#fff;border-color:#222}
#cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(300px,1fr));gap:12px}
.card{border:1px solid #ddd;border-radius:6px;padding:8px;display:flex;gap:10px;margin:0;content-visibility:auto;contain-intrinsic-size:300px 180px}
.thumb{position:relative;flex:none;align-self:flex-start;line-height:0}
.thumb img{max-width:160px;max-height:160px;display:block}
.thumb svg{position:absolute;inset:0;width:100%;height:100%;overflow:visible}
.thumb .none{width:160px;height:100px;background:#eee;display:flex;align-items:center;justify-content:center;color:#888;line-height:1.2}
figcaption{min-width:0;overflow-wrap:anywhere}
.src{font-family:ui-monospace,monospace;font-size:12px}
.v{font-weight:700}.v-unsafe{color:#b00}.v-error{color:#a60}.v-accepted{color:#666}
ul{margin:4px 0;padding-left:18px}.dim{color:#777}
.region{fill:none;stroke:#e0245e;stroke-width:2px}.line{fill:none;stroke:#1d6fd8;stroke-width:1px;stroke-dasharray:3 2}.hit{fill:none;stroke:#f08c00;stroke-width:2.5px}
.region,.line,.hit{vector-effect:non-scaling-stroke}
#more{height:1px}
`

/** Builds the cards from the data, a page at a time; the chips filter them. */
const SCRIPT = `
const data = JSON.parse(document.getElementById('scan-data').textContent);
const cards = document.getElementById('cards');
const shownCount = document.getElementById('shown');
const PAGE = ${CARDS_PER_PAGE};
let filter = 'all';
let list = data.items;
let built = 0;
const el = (tag, attrs, ...kids) => {
  const e = tag === 'svg' || tag === 'rect' || tag === 'title' ? document.createElementNS('http://www.w3.org/2000/svg', tag) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  for (const k of kids) e.append(k);
  return e;
};
const box = (cls, b, title) => el('rect', {class: cls, x: b[0], y: b[1], width: b[2], height: b[3]}, el('title', {}, title));
function card(it) {
  const thumb = el('div', {class: 'thumb'});
  if (it.t) {
    thumb.append(el('img', {src: it.t, alt: '', decoding: 'async'}));
    const svg = el('svg', {viewBox: '0 0 ' + it.w + ' ' + it.h, preserveAspectRatio: 'none'});
    for (const r of it.regions || []) svg.append(box('region', r[2], r[0] + ' ' + r[1].toFixed(2)));
    for (const l of it.lines || []) svg.append(box('line', l[1], l[0]));
    for (const h of it.hits || []) svg.append(box('hit', h[3], h[0] + ': ' + h[2]));
    thumb.append(svg);
  } else thumb.append(el('div', {class: 'none'}, 'no preview'));
  const cap = el('figcaption', {}, el('div', {class: 'v v-' + it.v}, it.v.toUpperCase()), el('div', {class: 'src'}, it.s));
  if (it.err) cap.append(el('div', {}, it.err[0] + ': ' + it.err[1]));
  if (it.viol) cap.append(el('ul', {}, ...it.viol.map((v) => el('li', {}, v[0] + ' ' + v[1].toFixed(2) + ' \\u2265 ' + v[2]))));
  if (it.top) cap.append(el('div', {class: 'dim'}, 'highest: ' + it.top.map((t) => t[0] + ' ' + t[1].toFixed(2)).join(', ')));
  if (it.ne !== undefined) cap.append(el('div', {class: 'dim'}, it.ne + ' of ' + data.categories + ' categories checked'));
  for (const m of it.matches || []) cap.append(el('div', {}, 'hash list ' + m[0] + ': ' + JSON.stringify(m[1]) + ', distance ' + m[2] + ' (' + m[3] + ')'));
  for (const h of it.hits || []) cap.append(el('div', {}, 'text rule ' + h[0] + ' (' + h[1] + '): ' + JSON.stringify(h[2])));
  return el('figure', {class: 'card', 'data-source': it.s}, thumb, cap);
}
function more() {
  const end = Math.min(built + PAGE, list.length);
  const frag = document.createDocumentFragment();
  for (; built < end; built++) frag.append(card(list[built]));
  cards.append(frag);
}
function show(f) {
  filter = f;
  list = f === 'all' ? data.items : data.items.filter((it) => it.v === f || (it.cats || []).includes(f));
  for (const c of document.querySelectorAll('.chip')) c.setAttribute('aria-pressed', String(c.dataset.filter === f));
  cards.replaceChildren();
  built = 0;
  more();
  shownCount.textContent = String(list.length);
}
document.getElementById('chips').addEventListener('click', (e) => {
  const f = e.target.closest('.chip')?.dataset.filter;
  if (f) show(f);
});
new IntersectionObserver((entries) => { if (entries.some((e) => e.isIntersecting) && built < list.length) more(); }, {rootMargin: '800px'}).observe(document.getElementById('more'));
show('all');
`

export function renderScanReport(items: readonly HtmlItem[], run: HtmlRun): string {
  const data = items.map((x) => cardData(x, run.categories))
  const counts = new Map<string, number>()
  for (const d of data) for (const key of [...(d.cats ?? []), ...(d.v === 'unsafe' ? [] : [d.v])]) counts.set(key, (counts.get(key) ?? 0) + 1)
  const chips = [['all', data.length] as const, ...[...counts.entries()].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))]
    .map(([name, n]) => `<button class="chip" data-filter="${escapeHtml(name)}" aria-pressed="false">${escapeHtml(name)} (${n})</button>`)
    .join('')
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'">
<meta name="viewport" content="width=device-width,initial-scale=1">
<title>mod scan report</title><style>${STYLE}</style></head>
<body>
<h1>mod scan report</h1>
<div class="meta" id="summary">${escapeHtml(run.summary)}</div>
<div class="meta">mod ${escapeHtml(run.version)}, ${escapeHtml(run.generated)}. Flagged and failed items only; boxes: <span style="color:#e0245e">NudeNet regions</span>, <span style="color:#1d6fd8">text lines read</span>, <span style="color:#f08c00">text-rule hits</span>. Showing <span id="shown">${data.length}</span>.</div>
<div class="chips" id="chips">${chips}</div>
<div id="cards"></div><div id="more"></div>
<script type="application/json" id="scan-data">${scriptJson({categories: run.categories, items: data})}</script>
<script>${SCRIPT}</script>
</body></html>
`
}
