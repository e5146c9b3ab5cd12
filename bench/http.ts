/**
 * http: one serving worker over HTTP. `mod serve --workers 1` (the built CLI, the `fast` stand-in) answers
 * POST /v1/moderate (multipart field `file`, the 1280x720 JPEG) one request at a time and from 4 concurrent
 * clients, against what one-at-a-time inference allows, measured in the same run in this process: bare
 * onnxruntime runs of the same models on ready tensors.
 *
 * The headline is the default configuration, where CLIP and the NSFW specialist both run: against a bare pair
 * (CLIP's image encoder, then the specialist on the image's first view). Its server runs with
 * MOD_SERVER_TIMING, and the Server-Timing headers of the single requests give the time of each step (receive
 * and parse, decode, each signal's preprocessing and inference, waiting, scoring); the client's time beyond the
 * server's total is the answer's way back (JSON, the socket, fetch). The second phase switches the specialist
 * off with a policy file (CLIP against bare CLIP), as the benches did before.
 *
 * The bare runs, the single requests and the rounds of 4 clients take turns (alternating which goes first), so
 * load changes on the machine hit all of them; each verdict is on the median of the per-turn ratios. The first
 * call of each turn is not kept (it pays for switching thread pools: lib.ts interleave). A fourth side, a bare
 * run on a batch of 4 copies of the image, gives the ceiling of batching on this machine: single run / (batch
 * run / 4) is what 4 clients would reach if receiving, decoding and scoring cost nothing.
 *
 * Last, 16 clients for a few seconds on the default server (autocannon): no errors, and no request slower than
 * 4 x the single-request median. Targets, default: a single request <= 1.20 x the bare pair; 4 clients >= 1.10 x
 * one-at-a-time bare pairs. Specialist off: <= 1.15 x bare CLIP; 4 clients >= 1.25 x. A missed target's line
 * carries the floor this run measured for it: the single request cannot beat the bare pair plus receiving,
 * decoding and CLIP's exact resize; 4 clients cannot beat a batch's share of inference plus each image's
 * preparing spread over the cores; 16 clients queued on one worker wait 16 / rate on average (Little's law).
 *
 * `--overlap` runs only the short measure of a worker that overlaps its stages (bench/http-overlap.ts).
 */
import './no-telemetry.js'

import {readFile} from 'node:fs/promises'
import {availableParallelism} from 'node:os'

import autocannon from 'autocannon'

import {
  afterFirst,
  clientsRound,
  bareEncoder,
  barePair,
  BATCH_OF,
  type BareEncoder,
  ensureImages,
  HD_JPEG,
  header,
  load,
  median,
  moderate,
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
import {overlapFigures} from './http-overlap.js'

const CLIENTS = 4
const TURNS = 8
/** Bare runs and single requests per turn, the first of each not kept. */
const BLOCK = 5
/** Timed requests per client in each turn's round of 4 clients, after one untimed request each. */
const PER_CLIENT = 5
const WARMUP = 5
const OVERLOAD_CONNECTIONS = 16
const OVERLOAD_SECONDS = 5
const TARGETS = {
  default: {throughput: 1.1, single: 1.2},
  off: {throughput: 1.25, single: 1.15},
}
/** No request of the 16 clients slower than this many single-request medians. */
const OVERLOAD_FACTOR = 4

if (process.argv.includes('--overlap')) {
  header('http-overlap', 'POST /v1/moderate with a 1280x720 JPEG, 1 worker, fp32: 4 and 16 clients against one-at-a-time bare pairs')
  requireStandin()
  await ensureImages()
  await overlapFigures(multipartBody(await readFile(HD_JPEG), 'hd.jpg'))
  process.exit(0)
}

header('http', `POST /v1/moderate with a 1280x720 JPEG, 1 worker: ${CLIENTS} clients and single requests vs bare runs; default (CLIP + specialist) first`)
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

/** Server-Timing steps (ms) of each timed single request, with `client`: the latency the client saw. */
const timings: Record<string, number>[] = []

/** One POST whose Server-Timing header (MOD_SERVER_TIMING) is kept in `timings`; returns its latency in ms. */
async function timedRequest(url: string): Promise<number> {
  const start = performance.now()
  sent++
  const res = await moderate(url, upload)
  const latency = performance.now() - start
  if (res.status !== 200) failures++
  const entries = String(res.headers['server-timing'] ?? '').split(', ').map((e) => /^(\w+);dur=([\d.]+)$/.exec(e)).filter((m) => m !== null)
  if (entries.length > 0) timings.push({...Object.fromEntries(entries.map((m) => [m[1], Number(m[2])])), client: latency})
  return latency
}

/** `clients` clients, each sending `each` requests one after the other: wall time and every latency, in ms. */
const round = (url: string, clients: number, each: number) => clientsRound(() => request(url), clients, each)

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

/**
 * The server as started with `args`; the answer of /health must show the specialist as `nsfw`. With
 * `timed`, the server sends Server-Timing headers and the single requests keep them.
 */
async function measure(name: string, args: string[], nsfw: 'loaded' | 'off', bare: BareEncoder, timed = false): Promise<Phase> {
  const server = await startServer(['--workers', '1', ...args], timed ? {MOD_SERVER_TIMING: 'true'} : {})
  const single = timed ? timedRequest : request
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
      bare: () => afterFirst(BLOCK, () => time(() => bare.run())),
      batch: () => afterFirst(BLOCK, () => time(() => bare.runBatch())),
      single: () => afterFirst(BLOCK, () => single(server.url), () => request(server.url)),
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

const pair = await barePair()
const on = await measure('default (CLIP + specialist) vs bare pair', [], 'loaded', pair, true)
await pair.release()
const bare = await bareEncoder()
const off = await measure('specialist off vs bare CLIP', ['--config', clipOnly], 'off', bare)
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
  ...[on, off].map((p) => [
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
for (const p of [on, off]) {
  process.stdout.write(
    `\nbatching ceiling, ${p.name}: a bare batch of ${BATCH_OF} takes ${median(p.batch).toFixed(1)} ms, ${(median(p.batch) / BATCH_OF).toFixed(1)} ms per image ` +
      `against ${median(p.bare).toFixed(1)} ms for one: ${CLIENTS} clients can reach at most ${p.batchCeiling.toFixed(2)} x one at a time (paired), with nothing but inference on the cores`,
  )
}
process.stdout.write('\n\n')

// Where a default request's time goes, from the server's own Server-Timing headers (steps in the header's order).
const stepNames = [...new Set(timings.flatMap((t) => Object.keys(t)))].filter((k) => k !== 'total' && k !== 'client')
const stepMedian = (k: string) => median(timings.map((t) => t[k] ?? 0))
const back = median(timings.map((t) => t.client - t.total))
// Per request (a sum of medians is not the median of sums): the server's total less its steps.
const rest = median(timings.map((t) => stepNames.reduce((a, k) => a - (t[k] ?? 0), t.total)))
table([
  [`default single request, by step (median of ${timings.length})`, 'ms', 'share of client latency'],
  ...stepNames.map((k) => [k, stepMedian(k).toFixed(1), `${((100 * stepMedian(k)) / median(on.single)).toFixed(0)}%`]),
  ["(rest of the server; below 0 by the overlap of CLIP's resize and the other signals' preprocessing)", rest.toFixed(1), ''],
  ['server total (handler to answer)', stepMedian('total').toFixed(1), ''],
  ['the way back and out (client - server total)', back.toFixed(1), ''],
  ['client latency', median(timings.map((t) => t.client)).toFixed(1), ''],
  ['bare pair (CLIP + specialist) in this process', median(on.bare).toFixed(1), ''],
])
const overloadMax = overload.latency.max
const overloadRate = overload.requests.total / overload.duration
process.stdout.write(
  `\n${OVERLOAD_CONNECTIONS} clients, ${OVERLOAD_SECONDS} s, default: ${overloadRate.toFixed(2)} req/s, ` +
    `median ${overload.latency.p50.toFixed(0)} ms, p99 ${overload.latency.p99.toFixed(0)} ms, max ${overloadMax.toFixed(0)} ms, ${overload.requests.total} requests, ${status503} 503s, load ${overloadLoad}\n\n`,
)

// The floors the targets meet, from this run's own figures (the steps from the default server's headers: decoding
// and CLIP's resize are the same work with the specialist off). The 1280x720 JPEG is below reduced decoding's
// threshold: it is decoded whole and resized by CLIP's bicubic; no request can cost less than those plus the bare runs.
const needed = stepMedian('receive') + stepMedian('decode') + stepMedian('clip_preprocess')
const singleFloor = (p: Phase) => (median(p.bare) + needed) / median(p.bare)
const singleCeiling = (p: Phase, bareName: string) =>
  `floor: receive ${stepMedian('receive').toFixed(1)} + decode ${stepMedian('decode').toFixed(1)} (every pixel: a 1280x720 JPEG is below reduced decoding's 1 344) + ` +
  `CLIP's bicubic resize ${stepMedian('clip_preprocess').toFixed(1)} ms over the ${bareName}'s ${median(p.bare).toFixed(1)} ms: at best ${singleFloor(p).toFixed(2)} x`
// With 4 clients the cores are shared: each image costs its share of a batch run plus its preparing, spread over the cores.
const cores = availableParallelism()
const preparing = stepMedian('decode') + stepMedian('clip_preprocess')
const throughputFloor = (p: Phase) => median(p.bare) / (median(p.batch) / BATCH_OF + preparing / cores)
const throughputCeiling = (p: Phase) =>
  `ceiling: a bare batch of ${BATCH_OF} allows ${p.batchCeiling.toFixed(2)} x; with decode and preprocessing (${preparing.toFixed(1)} ms an image) ` +
  `on the same ${cores} cores, ${(median(p.batch) / BATCH_OF).toFixed(1)} + ${preparing.toFixed(1)} / ${cores} ms an image: at most ${throughputFloor(p).toFixed(2)} x; ` +
  `measured ${(1000 / p.rate).toFixed(1)} ms an image: the batch share and ${(1000 / p.rate - median(p.batch) / BATCH_OF).toFixed(1)} ms more, ` +
  `${((1000 / p.rate - median(p.batch) / BATCH_OF) / preparing).toFixed(1)} x the preparing (the rest of the server's work, and inference slowed while a decode holds a core)`
// Little's law: with 16 clients always waiting on one worker, a request takes 16 / rate on average.
const queued = (OVERLOAD_CONNECTIONS * 1000) / overloadRate
const overloadCeiling =
  `floor: ${OVERLOAD_CONNECTIONS} clients queued on one worker at ${overloadRate.toFixed(2)} req/s take ${queued.toFixed(0)} ms a request on average ` +
  `(${OVERLOAD_CONNECTIONS} / rate) = ${(queued / median(on.single)).toFixed(2)} x the single median; the slowest is ${(overloadMax / overload.latency.p50).toFixed(2)} x the run's median`

const phaseVerdicts = (p: Phase, t: {throughput: number; single: number}, bareName: string) => [
  verdict(
    'http',
    `${p.name}, single request median ${median(p.single).toFixed(1)} ms, ${bareName} ${median(p.bare).toFixed(1)} ms, load ${p.load}`,
    'paired ratio',
    p.singleRatio,
    'max',
    t.single,
    '',
    3,
    singleCeiling(p, bareName),
  ),
  verdict(
    'http',
    `${p.name}, ${CLIENTS} clients ${p.rate.toFixed(2)} images/s (p99 ${percentile(p.concurrent, 99).toFixed(0)} ms), ${bareName} one at a time ${oneAtATime(p).toFixed(2)} images/s; batching ceiling ${p.batchCeiling.toFixed(2)}`,
    'paired ratio',
    p.throughputRatio,
    'min',
    t.throughput,
    '',
    3,
    throughputCeiling(p),
  ),
]
const verdicts: Verdict[] = [
  ...phaseVerdicts(on, TARGETS.default, 'bare pair'),
  verdict(
    'http',
    `${OVERLOAD_CONNECTIONS} clients, default, slowest request ${overloadMax.toFixed(0)} ms, single-request median ${median(on.single).toFixed(1)} ms, load ${overloadLoad}`,
    'slowest / single median',
    overloadMax / median(on.single),
    'max',
    OVERLOAD_FACTOR,
    '',
    2,
    overloadCeiling,
  ),
  verdict('http', `${sent + overload.requests.total} requests, ${status503} answered 503 (queue full), ${failures} failed otherwise`, 'errors', failures + status503, 'max', 0, '', 0),
  ...phaseVerdicts(off, TARGETS.off, 'bare CLIP'),
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
  specialistOn: figures(on),
  specialistOff: figures(off),
  steps: {...Object.fromEntries([...stepNames, 'total'].map((k) => [k, stepMedian(k)])), rest, back},
  floors: {single: singleFloor(on), throughput: throughputFloor(on), singleOff: singleFloor(off), throughputOff: throughputFloor(off), overload: queued / median(on.single)},
  overload: {connections: OVERLOAD_CONNECTIONS, rps: overloadRate, p50: overload.latency.p50, p99: overload.latency.p99, max: overloadMax, requests: overload.requests.total, status503},
})
