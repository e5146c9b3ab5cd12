/**
 * `mod eval --report out.html`: one self-contained page (no network: Chart.js is read from the installed
 * package and inlined, and a Content-Security-Policy forbids any fetch) with the headline figures, the
 * per-label table, the confusion table, and per label a precision-recall curve and a score histogram.
 */
import {readFile} from 'node:fs/promises'
import {createRequire} from 'node:module'
import {dirname, join} from 'node:path'

import {escapeHtml, OFFLINE_CSP, scriptJson} from '../html.js'
import {MAX_ANIMATION_FRAMES} from '../image/animation-frames.js'
import type {EvalReport} from './run.js'
import {plural} from '../plural.js'

/** Chart.js's UMD build (it defines window.Chart), from the chart.js package. */
export async function loadChartJs(): Promise<string> {
  const main = createRequire(import.meta.url).resolve('chart.js')
  return readFile(join(dirname(main), 'chart.umd.min.js'), 'utf8')
}

const pct = (x: number | null) => (x === null ? 'n/a' : `${(x * 100).toFixed(1)}%`)

const STYLE = `
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1200px}
h1{font-size:22px}h2{font-size:18px;margin-top:32px}
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}
th:first-child,td:first-child{text-align:left}
.figures{display:flex;gap:32px}.figure{font-size:28px;font-weight:600}
.charts{display:grid;grid-template-columns:repeat(2,minmax(0,1fr));gap:16px}
.chart{border:1px solid #ddd;padding:8px;height:300px;position:relative}
`

/** Draws the charts from the embedded data; animation is off so the canvases are drawn at once. */
const CHARTS_SCRIPT = `
const data = JSON.parse(document.getElementById('report-data').textContent);
Chart.defaults.animation = false;
Chart.defaults.maintainAspectRatio = false;
for (const label of data.labels) {
  const c = data.curves[label];
  if (c.pr.length > 0) {
    new Chart(document.getElementById('pr-' + label), {
      type: 'line',
      data: {datasets: [{label: label + ': precision vs recall', data: c.pr.map((p) => ({x: p.recall, y: p.precision})), borderColor: '#2563eb', pointRadius: 2, stepped: false}]},
      options: {parsing: false, scales: {x: {type: 'linear', min: 0, max: 1, title: {display: true, text: 'recall'}}, y: {min: 0, max: 1, title: {display: true, text: 'precision'}}}},
    });
  }
  const h = c.histogram;
  new Chart(document.getElementById('hist-' + label), {
    type: 'bar',
    data: {
      labels: h.edges.map((e) => e.toFixed(2)),
      datasets: [
        {label: 'images with ' + label, data: h.positives, backgroundColor: '#dc2626'},
        {label: 'safe images', data: h.safe, backgroundColor: '#16a34a'},
        {label: 'other labels', data: h.others, backgroundColor: '#9ca3af'},
      ],
    },
    options: {scales: {x: {stacked: true, title: {display: true, text: 'score (threshold ' + data.thresholds[label] + ')'}}, y: {stacked: true, title: {display: true, text: 'images'}}}},
  });
}
`

export function renderReport(r: EvalReport, chartJs: string): string {
  const m = r.metrics
  const rows = m.labels
    .map(
      (l) =>
        `<tr><td>${escapeHtml(l.name)}</td><td>${l.threshold}</td><td>${l.positives}</td><td>${pct(l.recall)}</td><td>${pct(l.precision)}</td><td>${pct(l.safe_fpr)}</td></tr>`,
    )
    .join('\n')
  const confusion = [
    `<tr><th>images of \\ flagged as</th>${m.confusion.columns.map((c) => `<th>${escapeHtml(c)}</th>`).join('')}</tr>`,
    ...m.confusion.rows.map((row, i) => `<tr><td>${escapeHtml(row)}</td>${m.confusion.counts[i].map((n) => `<td>${n}</td>`).join('')}</tr>`),
  ].join('\n')
  const charts = r.labels
    .map(
      (l) => `<h3>${escapeHtml(l.name)}</h3><div class="charts">
<div class="chart">${r.curves[l.name].pr.length > 0 ? `<canvas id="pr-${escapeHtml(l.name)}"></canvas>` : 'no images with this label: no precision-recall curve'}</div>
<div class="chart"><canvas id="hist-${escapeHtml(l.name)}"></canvas></div></div>`,
    )
    .join('\n')
  const data = {
    labels: r.labels.map((l) => l.name),
    thresholds: Object.fromEntries(r.labels.map((l) => [l.name, l.threshold])),
    curves: r.curves,
  }
  const errors = r.errors.length === 0 ? '' : `<h2>Files not scored (${r.errors.length})</h2><ul>${r.errors.map((e) => `<li>${escapeHtml(e.source)}: ${escapeHtml(e.error.code)}</li>`).join('')}</ul>`
  const truncated =
    r.animations_truncated.length === 0
      ? ''
      : `<h2>Animations scored in part (${r.animations_truncated.length})</h2><p>They show more pictures than the ${MAX_ANIMATION_FRAMES} frames scored; their scores do not cover the others.</p><ul>${r.animations_truncated.map((s) => `<li>${escapeHtml(s)}</li>`).join('')}</ul>`
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${OFFLINE_CSP}">
<title>mod eval: ${escapeHtml(r.dataset)}</title><style>${STYLE}</style></head>
<body>
<h1>mod eval: ${escapeHtml(r.dataset)}</h1>
<p>Model ${escapeHtml(r.model)}, ${plural(m.images, 'image')} scored (${m.safe_images} safe).</p>
<div class="figures"><div><div class="figure">${pct(m.average_recall)}</div>average recall</div>
<div><div class="figure">${pct(m.safe_flagged)}</div>safe images flagged</div></div>
<h2>Per label</h2>
<table><tr><th>label</th><th>threshold</th><th>images</th><th>recall</th><th>precision</th><th>safe flagged</th></tr>
${rows}</table>
<h2>Confusion</h2>
<table>${confusion}</table>
${errors}
${truncated}
<h2>Precision-recall and score histograms</h2>
${charts}
<script id="report-data" type="application/json">${scriptJson(data)}</script>
<script>${chartJs.replace(/<\/script/gi, '<\\/script')}</script>
<script>${CHARTS_SCRIPT}</script>
</body></html>
`
}
