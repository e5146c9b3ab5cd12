/**
 * http: what dynamic batching gives one serving worker. `mod serve --workers 1` (the built CLI, the `fast`
 * stand-in) answers POST /v1/moderate (multipart field `file`, the 1280x720 JPEG) from 4 concurrent clients,
 * against what one-at-a-time inference allows: 1000 / the median of a bare onnxruntime `session.run` of the same
 * image encoder on one ready image, measured in the same run. Also one request at a time against that bare run.
 *
 * The bare runs (in this process), the single requests and the rounds of 4 clients take turns (alternating which
 * goes first), so load changes on the machine hit all of them; each verdict is on the median of the per-turn
 * ratios. The first call of each turn is not kept (it pays for switching thread pools: lib.ts interleave).
 *
 * The server's answer includes the NSFW specialist's work by default: the targets are measured with a policy
 * that switches it off (CLIP against CLIP), and the same figures with the specialist on are printed beside them.
 * Last, 16 clients for a few seconds on the default server (autocannon) check that a full queue gives no errors.
 * Targets: 4 clients >= 1.25 x the one-at-a-time images/s; a single request <= 1.15 x the bare run; no errors.
 *
 * A fourth side, a bare run on a batch of 4 copies of the image, gives the ceiling of batching on this machine:
 * single run / (batch run / 4) is what 4 clients would reach if receiving, decoding and scoring cost nothing.
 */
import './no-telemetry.js'

import {readFile} from 'node:fs/promises'

import autocannon from 'autocannon'

import {
  bareEncoder,
  BATCH_OF,
  type BareEncoder,
  ensureImages,
  HD_JPEG,
  header,
  load,
  median,
  moderateOnce,
  multipartBody,
  percentile,
  policyFile,
  requireStandin,
  saveResults,
  startServer,
  table,
  time,
  verdict,
  type Verdict,
} from './lib.js'

const CLIENTS = 4
const TURNS = 8
/** Bare runs and single requests per turn, the first of each not kept. */
const BLOCK = 5
/** Timed requests per client in each turn's round of 4 clients, after one untimed request each. */
const PER_CLIENT = 5
const WARMUP = 5
const OVERLOAD_CONNECTIONS = 16
const OVERLOAD_SECONDS = 5
const THROUGHPUT_TARGET = 1.25
const SINGLE_TARGET = 1.15

header('http', `POST /v1/moderate with a 1280x720 JPEG, 1 worker: ${CLIENTS} clients and single requests vs bare session.run`)
requireStandin()
await ensureImages()
const upload = multipartBody(await readFile(HD_JPEG), 'hd.jpg')
const clipOnly = await policyFile('policy-clip-only.yaml', 'specialists: {nsfw: false}\n')

let sent = 0
let failures = 0

/** One POST; a non-200 answer is counted as a failure. Returns its latency in ms. */
async function request(url: string): Promise<number> {
  const start = performance.now()
  sent++
  const status = await moderateOnce(url, upload)
  if (status !== 200) failures++
  return performance.now() - start
}

/** `clients` clients, each sending `each` requests one after the other: wall time and every latency, in ms. */
async function round(url: string, clients: number, each: number): Promise<{wall: number; latencies: number[]}> {
  const latencies: number[] = []
  const wall = await time(() =>
    Promise.all(
      Array.from({length: clients}, async () => {
        for (let i = 0; i < each; i++) latencies.push(await request(url))
      }),
    ),
  )
  return {wall, latencies}
}

interface Turn {
  bare: number
  batch: number
  single: number
  rate: number
}

interface Phase {
  name: string
  turns: Turn[]
  bare: number[]
  batch: number[]
  single: number[]
  concurrent: number[]
  rate: number
  throughputRatio: number
  singleRatio: number
  /** Per-turn median of single bare run / (bare batch run / BATCH_OF). */
  batchCeiling: number
  load: string
}

/** The server as started with `args`; the answer of /health must show the specialist as `nsfw`. */
async function measure(name: string, args: string[], nsfw: 'loaded' | 'off', bare: BareEncoder): Promise<Phase> {
  const server = await startServer(['--workers', '1', ...args])
  try {
    const health = (await (await fetch(`${server.url}/health`)).json()) as {signals: Record<string, string>}
    if (health.signals.clip !== 'loaded' || health.signals.nsfw !== nsfw) {
      throw new Error(`${name}: the server's signals are ${JSON.stringify(health.signals)}, expected clip loaded and nsfw ${nsfw}`)
    }
    for (let i = 0; i < WARMUP; i++) {
      await request(server.url)
      await bare.run()
    }
    await round(server.url, CLIENTS, 2)

    const sides: Record<string, () => Promise<number[]>> = {
      async bare() {
        await bare.run()
        const times: number[] = []
        for (let i = 1; i < BLOCK; i++) times.push(await time(() => bare.run()))
        return times
      },
      async batch() {
        await bare.runBatch()
        const times: number[] = []
        for (let i = 1; i < BLOCK; i++) times.push(await time(() => bare.runBatch()))
        return times
      },
      async single() {
        await request(server.url)
        const times: number[] = []
        for (let i = 1; i < BLOCK; i++) times.push(await request(server.url))
        return times
      },
      async concurrent() {
        await round(server.url, CLIENTS, 1)
        const r = await round(server.url, CLIENTS, PER_CLIENT)
        return [(CLIENTS * PER_CLIENT * 1000) / r.wall, ...r.latencies]
      },
    }
    const names = Object.keys(sides)
    const all: Record<string, number[]> = {bare: [], batch: [], single: [], concurrent: []}
    const turns: Turn[] = []
    let rateSum = 0
    for (let t = 0; t < TURNS; t++) {
      const got: Record<string, number[]> = {}
      for (const side of t % 2 === 0 ? names : [...names].reverse()) got[side] = await sides[side]()
      const [rate, ...latencies] = got.concurrent
      all.bare.push(...got.bare)
      all.batch.push(...got.batch)
      all.single.push(...got.single)
      all.concurrent.push(...latencies)
      rateSum += rate
      turns.push({bare: median(got.bare), batch: median(got.batch), single: median(got.single), rate})
    }
    return {
      name,
      turns,
      bare: all.bare,
      batch: all.batch,
      single: all.single,
      concurrent: all.concurrent,
      rate: rateSum / TURNS,
      // Images/s with 4 clients over the images/s of one bare run after another, turn by turn.
      throughputRatio: median(turns.map((t) => (t.rate * t.bare) / 1000)),
      singleRatio: median(turns.map((t) => t.single / t.bare)),
      batchCeiling: median(turns.map((t) => (t.bare * BATCH_OF) / t.batch)),
      load: load(),
    }
  } finally {
    await server.stop()
  }
}

const bare = await bareEncoder()
const off = await measure('specialist off', ['--config', clipOnly], 'off', bare)
const on = await measure('specialist on (default)', [], 'loaded', bare)
await bare.release()

// A full queue: more clients than the worker can serve at once, on the default server.
const server = await startServer(['--workers', '1'])
let overload: Awaited<ReturnType<typeof autocannon>>
try {
  await request(server.url)
  overload = await autocannon({
    url: `${server.url}/v1/moderate`,
    method: 'POST',
    headers: {'content-type': upload.contentType},
    body: upload.body,
    connections: OVERLOAD_CONNECTIONS,
    duration: OVERLOAD_SECONDS,
    timeout: 60,
  })
} finally {
  await server.stop()
}
const status503 = overload.statusCodeStats['503']?.count ?? 0
failures += overload.errors + overload.timeouts + (overload.non2xx - status503)
const overloadLoad = load()

const oneAtATime = (p: Phase) => 1000 / median(p.bare)
table([
  ['1 worker', 'bare run', 'single request', 'single / bare', `${CLIENTS} clients: images/s`, 'median', 'p99', 'vs one at a time', 'load'],
  ...[off, on].map((p) => [
    p.name,
    `${median(p.bare).toFixed(1)} ms`,
    `${median(p.single).toFixed(1)} ms`,
    p.singleRatio.toFixed(2),
    p.rate.toFixed(2),
    `${median(p.concurrent).toFixed(0)} ms`,
    `${percentile(p.concurrent, 99).toFixed(0)} ms`,
    p.throughputRatio.toFixed(2),
    p.load,
  ]),
])
process.stdout.write(
  `\nbatching ceiling: a bare batch of ${BATCH_OF} takes ${median(off.batch).toFixed(1)} ms, ${(median(off.batch) / BATCH_OF).toFixed(1)} ms per image ` +
    `against ${median(off.bare).toFixed(1)} ms for one: ${CLIENTS} clients can reach at most ${off.batchCeiling.toFixed(2)} x one at a time ` +
    `(paired; ${on.batchCeiling.toFixed(2)} in the second phase), with nothing but inference on the cores\n`,
)
process.stdout.write(
  `${OVERLOAD_CONNECTIONS} clients, ${OVERLOAD_SECONDS} s, specialist on: ${(overload.requests.total / overload.duration).toFixed(2)} req/s, ` +
    `median ${overload.latency.p50.toFixed(0)} ms, p99 ${overload.latency.p99.toFixed(0)} ms, ${overload.requests.total} requests, ${status503} 503s, load ${overloadLoad}\n`,
)
process.stdout.write(
  `specialist on (informational): ${on.rate.toFixed(2)} images/s with ${CLIENTS} clients (p99 ${percentile(on.concurrent, 99).toFixed(0)} ms), ` +
    `${on.throughputRatio.toFixed(2)} x bare CLIP one at a time; single request ${on.singleRatio.toFixed(2)} x bare CLIP\n\n`,
)

const verdicts: Verdict[] = [
  verdict(
    'http',
    `1 worker, specialist off, ${CLIENTS} clients ${off.rate.toFixed(2)} images/s (p99 ${percentile(off.concurrent, 99).toFixed(0)} ms), bare one at a time ${oneAtATime(off).toFixed(2)} images/s (${median(off.bare).toFixed(1)} ms)`,
    'paired ratio',
    off.throughputRatio,
    'min',
    THROUGHPUT_TARGET,
  ),
  verdict(
    'http',
    `1 worker, specialist off, single request median ${median(off.single).toFixed(1)} ms, bare ${median(off.bare).toFixed(1)} ms`,
    'paired ratio',
    off.singleRatio,
    'max',
    SINGLE_TARGET,
  ),
  verdict('http', `${sent + overload.requests.total} requests, ${status503} answered 503 (queue full)`, 'errors', failures, 'max', 0, '', 0),
]
const figures = (p: Phase) => ({
  bare: {median: median(p.bare), batchOf: BATCH_OF, batchMedian: median(p.batch), batchCeiling: p.batchCeiling},
  single: {median: median(p.single), p99: percentile(p.single, 99)},
  concurrent: {clients: CLIENTS, rate: p.rate, median: median(p.concurrent), p99: percentile(p.concurrent, 99)},
  throughputRatio: p.throughputRatio,
  singleRatio: p.singleRatio,
  turns: p.turns,
  load: p.load,
})
await saveResults('http', verdicts, {
  specialistOff: figures(off),
  specialistOn: figures(on),
  overload: {connections: OVERLOAD_CONNECTIONS, rps: overload.requests.total / overload.duration, p50: overload.latency.p50, p99: overload.latency.p99, requests: overload.requests.total, status503},
})
