/**
 * The style and script of the `mod scan --report` page: a grid of the items to review, sorted and searched,
 * marked with the keyboard, and a button that downloads the marks as a labels file for `mod eval` and
 * `mod calibrate`. Every item is laid out and every thumbnail set at once (they are data URIs in the page), so
 * printing shows them all; `content-visibility` keeps the items out of view cheap on screen and is lifted for
 * print. Strings from results are set as text, never as markup.
 */

import {HIDDEN_CHARACTERS} from '../visible.js'

export const REPORT_STYLE = `
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222}
h1{font-size:22px;margin:0 0 8px}
#controls{position:sticky;top:0;z-index:2;background:#fff;padding:8px 0;border-bottom:1px solid #ddd;display:flex;flex-wrap:wrap;gap:8px 16px;align-items:center}
#controls input[type=search]{width:16em}
#keys{margin:8px 0}
kbd{border:1px solid #bbb;border-radius:3px;padding:0 4px;font:12px ui-monospace,monospace;background:#f7f7f7}
#status{min-height:1.4em}
#items{display:grid;grid-template-columns:repeat(auto-fill,minmax(270px,1fr));gap:16px;margin-top:12px}
.item{border:2px solid #ddd;border-radius:6px;padding:8px;content-visibility:auto;contain-intrinsic-size:auto 480px}
.item.current{outline:3px solid #2563eb;outline-offset:2px}
.item[data-mark=right]{border-color:#16a34a}.item[data-mark=false_alarm]{border-color:#ea580c}.item[data-mark=missed]{border-color:#7c3aed}
.thumb{position:relative;width:100%;max-width:240px;margin:0 auto 6px;background:#f3f3f3}
.thumb img{display:block;width:100%;height:100%}
.box{position:absolute;box-sizing:border-box;border:2px solid}
.box.region{border-color:#dc2626}.box.line{border-color:#2563eb}.box.hit{border-color:#f59e0b;border-width:3px}.box.mark{border-color:#7c3aed}
.verdict{margin:2px 0}.verdict.unsafe{color:#b91c1c;font-weight:600}.verdict.error{color:#a16207;font-weight:600}.verdict.safe{color:#15803d;font-weight:600}
.info h2{font-size:14px;margin:0 0 4px;word-break:break-all}
.scores{border-collapse:collapse;font-size:12px;width:100%}.scores td{padding:0 6px 0 0}.scores td.num{text-align:right}
.scores tr.over{color:#b91c1c;font-weight:600}
.muted{color:#666}
.info ul{margin:4px 0;padding-left:18px;font-size:12px}
.review{display:flex;flex-wrap:wrap;gap:6px;align-items:center;margin-top:6px}
.badge{font-weight:600}
.item[data-mark=right] .badge{color:#15803d}.item[data-mark=false_alarm] .badge{color:#c2410c}.item[data-mark=missed] .badge{color:#6d28d9}
@media print{
  body{margin:0}
  #controls,#keys,#status,.review button,.review select{display:none}
  #items{grid-template-columns:repeat(3,1fr);gap:8px}
  .item{content-visibility:visible;break-inside:avoid;print-color-adjust:exact;-webkit-print-color-adjust:exact}
  .item.current{outline:none}
}
`

export const REPORT_SCRIPT = `
const items = JSON.parse(document.getElementById('report-items').textContent);
const summary = JSON.parse(document.getElementById('report-summary').textContent);
const info = JSON.parse(document.getElementById('report-info').textContent);
const $ = (id) => document.getElementById(id);
const el = (tag, cls, text) => { const e = document.createElement(tag); if (cls) e.className = cls; if (text !== undefined) e.textContent = text; return e; };
const isError = (it) => 'error' in it.result;
const flaggedFor = (it) => isError(it) ? [] : it.result.violations.map((v) => v.name);
const topScore = (it) => isError(it) || it.result.labels.length === 0 ? -1 : it.result.labels[0].score;
const kind = (it) => isError(it) ? 'error' : it.sample ? 'sample' : 'flagged';
// What a mark may be on each kind: a flag is right or a false alarm; a safe sample is right or missed.
const ALLOWED = {flagged: ['right', 'false_alarm'], sample: ['right', 'missed'], error: []};
const NAMES = {right: 'right', false_alarm: 'false alarm', missed: 'missed'};
// A path as the terminal shows it: control, invisible and reordering characters escaped (\\u202e), so that a name
// cannot show as another one (a right-to-left override turns "gnp.exe" around) or hide what tells two apart.
const visible = (text) => text.replace(new RegExp(${JSON.stringify(HIDDEN_CHARACTERS)}, 'gu'), (c) => {
  const code = c.codePointAt(0);
  return code < 0x100 ? '\\\\x' + code.toString(16).padStart(2, '0') : code < 0x10000 ? '\\\\u' + code.toString(16).padStart(4, '0') : '\\\\u{' + code.toString(16) + '}';
});
items.forEach((it, i) => { it.index = i; it.shown = visible(it.path); });

const s = summary;
$('summary').textContent = s.scanned + ' scanned: ' + s.safe + ' safe, ' + s.unsafe + ' unsafe, ' + s.errors + ' errors'
  + (s.missing ? '; ' + s.missing + ' not found' : '') + (s.coverage ? ' (' + s.coverage + ')' : '')
  + (s.not_evaluated.length ? '. Not evaluated: ' + s.not_evaluated.join(', ') : '') + '.'
  + (s.sampled ? ' ' + s.sampled + ' of the safe items are shown as a sample to review.' : '');

// Marks live in the browser's storage under this report's id, so a reload keeps them and another report starts afresh.
const KEY = 'mod-report:' + info.id;
let marks = {};
let choices = {};
let stored = true;
try { const saved = JSON.parse(localStorage.getItem(KEY) || '{}'); marks = saved.marks || {}; choices = saved.choices || {}; } catch { stored = false; }
// Another tab of the same report keeps its own marks: a save writes the one item changed into what the storage
// holds, so that neither tab's marks erase the other's, and each tab shows the other's as they come.
function save(file) {
  try {
    const saved = JSON.parse(localStorage.getItem(KEY) || '{}');
    const m = saved.marks || {};
    const c = saved.choices || {};
    if (marks[file]) m[file] = marks[file]; else delete m[file];
    if (choices[file]) c[file] = choices[file]; else delete c[file];
    localStorage.setItem(KEY, JSON.stringify({marks: m, choices: c}));
  } catch { stored = false; }
}
window.addEventListener('storage', (e) => {
  if (e.key !== KEY && e.key !== null) return;
  try { const saved = JSON.parse(e.newValue || '{}'); marks = saved.marks || {}; choices = saved.choices || {}; } catch { return; }
  for (const it of items) {
    if (it.menu) it.menu.value = choices[it.file] || it.result.labels[0]?.name || '';
    showMark(it);
  }
  counts();
});
const undo = [];
const status = (text) => { $('status').textContent = text; };

const box = (fig, b, w, h, cls, title) => {
  const d = el('div', 'box ' + cls);
  d.style.left = (100 * b[0] / w) + '%'; d.style.top = (100 * b[1] / h) + '%';
  d.style.width = (100 * b[2] / w) + '%'; d.style.height = (100 * b[3] / h) + '%';
  d.title = title;
  fig.append(d);
};
for (const it of items) card(it);
function card(it) {
  const r = it.result;
  const art = el('article', 'item');
  art.dataset.source = it.path;
  art.dataset.kind = kind(it);
  const fig = el('figure', 'thumb');
  if (it.thumb) {
    fig.style.aspectRatio = it.width + ' / ' + it.height;
    const img = el('img');
    img.alt = it.shown; img.loading = 'eager'; img.src = it.thumb;
    fig.append(img);
    for (const m of it.marks || []) box(fig, m.box, it.width, it.height, m.kind, m.caption);
  } else fig.append(el('span', 'muted', 'no preview'));
  const body = el('div', 'info');
  const title = el('h2', '', it.shown);
  if (it.file) title.title = visible(it.file);
  body.append(title);
  if (isError(it)) body.append(el('p', 'verdict error', 'ERROR ' + r.error.code + ': ' + r.error.message));
  else {
    if (it.sample) body.append(el('p', 'verdict safe', 'SAFE (a sample to review)'));
    else body.append(el('p', 'verdict unsafe', 'UNSAFE: ' + r.violations.map((v) => v.name + ' ' + v.confidence.toFixed(2) + ' >= ' + v.threshold).join(', ') + (it.accepted ? ' (accepted by the baseline)' : '')));
    const table = el('table', 'scores');
    for (const l of r.labels) {
      const tr = el('tr', l.violated ? 'over' : '');
      tr.append(el('td', '', l.name), el('td', 'num', l.score.toFixed(2)), el('td', 'muted num', '>= ' + l.threshold));
      table.append(tr);
    }
    body.append(table);
    const total = r.labels.length + r.not_evaluated.length;
    body.append(el('p', 'muted', r.not_evaluated.length ? r.labels.length + ' of ' + total + ' categories checked; not evaluated: ' + r.not_evaluated.join(', ') : 'all ' + total + ' categories checked'));
    const notes = el('ul');
    for (const n of it.notes || []) notes.append(el('li', '', n));
    if (notes.childElementCount) body.append(notes);
  }
  const review = el('div', 'review');
  if (!it.file && !isError(it)) review.append(el('span', 'muted', 'read from stdin: no file to label'));
  else for (const m of ALLOWED[kind(it)]) {
    const b = el('button', '', NAMES[m] + ' (' + (m === 'false_alarm' ? 'f' : m[0]) + ')');
    b.type = 'button';
    b.addEventListener('click', () => { select(it); setMark(it, m); });
    review.append(b);
  }
  if (it.sample && it.file) {
    const menu = el('select');
    menu.title = 'the category a missed item should have had (c changes it)';
    for (const l of r.labels) { const o = el('option', '', l.name); o.value = l.name; menu.append(o); }
    menu.value = choices[it.file] || r.labels[0]?.name || '';
    menu.addEventListener('change', () => choose(it, menu.value));
    review.append(menu);
    it.menu = menu;
  }
  const badge = el('span', 'badge');
  review.append(badge);
  it.badge = badge;
  body.append(review);
  art.append(fig, body);
  art.addEventListener('click', () => select(it));
  it.card = art;
  return art;
}

function showMark(it) {
  const m = it.file && marks[it.file];
  if (m) it.card.dataset.mark = m.mark; else delete it.card.dataset.mark;
  it.badge.textContent = !m ? '' : m.mark === 'missed' ? 'missed: ' + m.category : m.mark === 'right' ? (it.sample ? 'right: safe' : 'right') : 'false alarm';
}
function counts() {
  const c = {right: 0, false_alarm: 0, missed: 0};
  let markable = 0;
  for (const it of items) {
    if (!it.file || isError(it)) continue;
    markable++;
    const m = marks[it.file];
    if (m) c[m.mark]++;
  }
  const done = c.right + c.false_alarm + c.missed;
  $('tally').textContent = done + ' of ' + markable + ' marked: ' + c.right + ' right, ' + c.false_alarm + ' false alarm' + (c.false_alarm === 1 ? '' : 's') + ', ' + c.missed + ' missed'
    + (stored ? '' : ' (this browser does not keep them on reload)');
  $('download').disabled = done === 0;
}
function setMark(it, mark) {
  if (!it.file) return status('read from stdin: no file to label');
  if (!ALLOWED[kind(it)].includes(mark)) {
    return status(kind(it) === 'error' ? 'an item that could not be scanned cannot be labelled' : NAMES[mark] + ' applies to ' + (mark === 'missed' ? 'the safe sample' : 'flagged items'));
  }
  undo.push({it, mark: marks[it.file], choice: choices[it.file]});
  marks[it.file] = mark === 'missed' ? {mark, category: it.menu.value} : {mark};
  save(it.file); showMark(it); counts();
  status(it.shown + ': ' + it.badge.textContent);
  move(1);
}
function clearMark(it) {
  if (!it.file || !marks[it.file]) return;
  undo.push({it, mark: marks[it.file], choice: choices[it.file]});
  delete marks[it.file];
  save(it.file); showMark(it); counts();
  status(it.shown + ': mark cleared');
}
function choose(it, category) {
  undo.push({it, mark: marks[it.file], choice: choices[it.file]});
  choices[it.file] = category;
  it.menu.value = category;
  if (marks[it.file]?.mark === 'missed') { marks[it.file] = {mark: 'missed', category}; showMark(it); }
  save(it.file);
}
function undoLast() {
  const u = undo.pop();
  if (!u) return status('nothing to undo');
  const it = u.it;
  if (u.mark) marks[it.file] = u.mark; else delete marks[it.file];
  if (u.choice) choices[it.file] = u.choice; else delete choices[it.file];
  if (it.menu) it.menu.value = choices[it.file] || it.result.labels[0]?.name || '';
  save(it.file); showMark(it); counts();
  select(it);
  status('undone: ' + it.shown);
}

// The order and filter in force: the items shown, in order.
let shown = [];
let current;
const list = $('items');
const sorters = {
  input: (a, b) => a.index - b.index,
  score: (a, b) => topScore(b) - topScore(a) || a.index - b.index,
  name: (a, b) => a.path.localeCompare(b.path, undefined, {numeric: true}) || a.index - b.index,
  verdict: (a, b) => ['error', 'flagged', 'sample'].indexOf(kind(a)) - ['error', 'flagged', 'sample'].indexOf(kind(b)) || topScore(b) - topScore(a) || a.index - b.index,
};
function matches(it, terms, show) {
  const m = it.file && marks[it.file];
  if (show === 'unmarked' && (m || !it.file || isError(it))) return false;
  if (show === 'marked' && !m) return false;
  if (['flagged', 'sample', 'error'].includes(show) && kind(it) !== show) return false;
  if (show.startsWith('category:') && !flaggedFor(it).includes(show.slice(9))) return false;
  const text = [it.path, ...flaggedFor(it), isError(it) ? it.result.error.code : '', m ? NAMES[m.mark] + ' ' + (m.category || '') : ''].join(' ').toLowerCase();
  return terms.every((t) => text.includes(t));
}
function arrange() {
  const terms = $('search').value.toLowerCase().split(/\\s+/).filter(Boolean);
  const show = $('show').value;
  shown = items.filter((it) => matches(it, terms, show)).sort(sorters[$('sort').value]);
  list.replaceChildren(...shown.map((it) => it.card));
  $('count').textContent = shown.length === items.length ? items.length + ' items' : shown.length + ' of ' + items.length + ' items';
  // A new order or filter starts the review from its first item.
  select(shown[0], false);
}
function select(it, scroll = true) {
  current?.card.classList.remove('current');
  current = it;
  if (!it) return;
  it.card.classList.add('current');
  if (scroll) it.card.scrollIntoView({block: 'nearest'});
}
function move(step) {
  if (shown.length === 0) return;
  const at = shown.indexOf(current);
  select(shown[Math.max(0, Math.min(shown.length - 1, at < 0 ? 0 : at + step))]);
}
function cycle(step) {
  if (!current?.menu) return status('c chooses the category of a missed item in the safe sample');
  const names = current.result.labels.map((l) => l.name);
  choose(current, names[(names.indexOf(current.menu.value) + step + names.length) % names.length]);
  status(current.shown + ': missed as ' + current.menu.value);
}

const byCategory = {};
for (const it of items) for (const c of flaggedFor(it)) byCategory[c] = (byCategory[c] || 0) + 1;
const showMenu = $('show');
for (const name of Object.keys(byCategory).sort()) {
  const o = el('option', '', 'flagged for ' + name + ' (' + byCategory[name] + ')');
  o.value = 'category:' + name;
  showMenu.append(o);
}
for (const id of ['search', 'sort', 'show']) $(id).addEventListener('input', arrange);

function csvField(text) {
  return /^[#\\s]|[",]|\\s$/.test(text) ? '"' + text.replace(/"/g, '""') + '"' : text;
}
// The marks as a labels file: right on a flag, the categories flagged; a false alarm, or a safe item confirmed,
// no label (safe); missed, the category chosen. Unmarked items are left out: nobody said what they are.
function labelsFile() {
  const lines = [
    // Escaped: a line break in a folder's name would end the comment and start a line of labels.
    '# Labels marked in the mod scan report ' + visible(info.name) + ' (written ' + info.written + ').',
    '# Paths are absolute: the scan ran in ' + visible(info.cwd) + '. Use: mod eval THIS-FILE, mod calibrate THIS-FILE.',
    'file,labels',
  ];
  let left = 0;
  const written = new Set();
  for (const it of items) {
    const m = it.file && marks[it.file];
    if (!m || written.has(it.file)) continue;
    // A path with a line break cannot be a line of the file.
    if (/[\\r\\n]/.test(it.file)) { left++; continue; }
    written.add(it.file);
    const labels = m.mark === 'right' ? flaggedFor(it) : m.mark === 'missed' ? [m.category] : [];
    lines.push(csvField(it.file) + ',' + (labels.length ? labels.join(';') : 'safe'));
  }
  return {text: lines.join('\\n') + '\\n', count: written.size, left};
}
$('download').addEventListener('click', () => {
  const file = labelsFile();
  const a = el('a');
  a.href = URL.createObjectURL(new Blob([file.text], {type: 'text/csv'}));
  a.download = info.name.replace(/\\.html?$/i, '') + '-labels.csv';
  document.body.append(a);
  a.click();
  a.remove();
  status('labels of ' + file.count + ' item' + (file.count === 1 ? '' : 's') + ' downloaded as ' + a.download + (file.left ? '; ' + file.left + ' left out (a line break in the path)' : ''));
});

document.addEventListener('keydown', (e) => {
  if (e.ctrlKey || e.metaKey || e.altKey) return;
  if (e.target.closest('input, select, textarea')) {
    if (e.key === 'Escape') e.target.blur();
    return;
  }
  const keys = {
    j: () => move(1), k: () => move(-1),
    r: () => current && setMark(current, 'right'), f: () => current && setMark(current, 'false_alarm'), m: () => current && setMark(current, 'missed'),
    c: () => cycle(1), C: () => cycle(-1), x: () => current && clearMark(current), u: undoLast,
    '/': () => $('search').focus(),
  };
  if (!keys[e.key]) return;
  e.preventDefault();
  keys[e.key]();
});

for (const it of items) showMark(it);
counts();
arrange();
`
