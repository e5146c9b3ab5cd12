/**
 * http: the 1280x720 JPEG over POST /v1/moderate (multipart field `file`) of the built `mod serve`, driven by
 * autocannon at 1, 4 and 16 connections, with --workers 1 and 2: median and p99 latency, requests/s and
 * errors. Target: no errors and no non-2xx answers other than deliberate 503s (queue full).
 */
import './no-telemetry.js'

import {readFile} from 'node:fs/promises'

import autocannon from 'autocannon'

import {ensureImages, HD_JPEG, header, load, moderateOnce, multipartBody, requireStandin, saveResults, startServer, table, verdict} from './lib.js'

const CONNECTIONS = [1, 4, 16]
const WORKERS = [1, 2]
/** Seconds per load level: enough for ~50-200 requests at these speeds. */
const SECONDS = 8

header('http', `POST /v1/moderate with a 1280x720 JPEG, autocannon ${SECONDS} s per level`)
requireStandin()
await ensureImages()
const upload = multipartBody(await readFile(HD_JPEG), 'hd.jpg')

interface Level {
  workers: number
  connections: number
  median: number
  p99: number
  rps: number
  total: number
  errors: number
  status503: number
  load: string
}
const levels: Level[] = []
for (const workers of WORKERS) {
  const server = await startServer(['--workers', String(workers)])
  try {
    // Warm-up: every worker serves a few requests before anything is measured.
    for (let i = 0; i < 3 * workers; i++) await Promise.all(Array.from({length: workers}, () => moderateOnce(server.url, upload)))
    for (const connections of CONNECTIONS) {
      const r = await autocannon({
        url: `${server.url}/v1/moderate`,
        method: 'POST',
        headers: {'content-type': upload.contentType},
        body: upload.body,
        connections,
        duration: SECONDS,
        timeout: 60,
      })
      const status503 = r.statusCodeStats['503']?.count ?? 0
      levels.push({
        workers,
        connections,
        median: r.latency.p50,
        p99: r.latency.p99,
        rps: r.requests.total / r.duration,
        total: r.requests.total,
        errors: r.errors + r.timeouts + (r.non2xx - status503),
        status503,
        load: load(),
      })
    }
  } finally {
    await server.stop()
  }
}

table([
  ['workers', 'connections', 'median', 'p99', 'req/s', 'requests', 'errors', '503s', 'load'],
  ...levels.map((l) => [l.workers, l.connections, `${l.median.toFixed(0)} ms`, `${l.p99.toFixed(0)} ms`, l.rps.toFixed(2), l.total, l.errors, l.status503, l.load]),
])
process.stdout.write('\n')
const errors = levels.reduce((n, l) => n + l.errors, 0)
const best = levels.reduce((a, b) => (b.rps > a.rps ? b : a))
const v = verdict('http', `${levels.reduce((n, l) => n + l.total, 0)} requests, best ${best.rps.toFixed(2)} req/s (${best.workers} worker(s), ${best.connections} connections)`, 'errors', errors, 'max', 0, '', 0)
await saveResults('http', [v], {levels})
