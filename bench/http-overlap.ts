/**
 * `npx tsx bench/http.ts --overlap` (after `npm run bench -- http` has prepared the stand-in, the images and
 * dist/): the short run of the targets on a worker that overlaps its stages, each a ratio measured in this one
 * run. `mod serve --workers 1` (fp32, default: CLIP + specialist) takes POST /v1/moderate of the 1280x720 JPEG
 * from 4 clients, against one bare pair after another in this process (CLIP's encoder, then the specialist:
 * what one-at-a-time inference allows), with single requests between them; last, 16 clients for a few
 * seconds. The sides take turns, alternating which goes first, so load changes hit all of them. Targets: 4
 * clients >= 1.15 x one-at-a-time bare pairs, their p99 <= 3 x the single-request median; 16 clients: no
 * request over 4 x the single median, and no error (a 503 counts as one). A miss names its floor in this run: the
 * batching ceiling of the bare pair, alone and after preparing the clients' images one after another, and for
 * latencies Little's law (n clients on one worker wait n / rate).
 */
import autocannon from 'autocannon'

import {afterFirst, barePair, clientsRound, BATCH_OF, load, median, moderateOnce, percentile, saveResults, startServer, table, time, verdict, type Verdict} from './lib.js'

const TURNS = 6
/** Bare runs and single requests per turn, the first of each not kept. */
const BLOCK = 5
const CLIENTS = 4
/** Timed requests per client in each turn's round of 4 clients, after one untimed request each. */
const PER_CLIENT = 5
const CROWD = 16
const CROWD_SECONDS = 5
const TARGETS = {throughput: 1.15, p99: 3, crowdMax: 4}

type Upload = {body: Buffer; contentType: string}

export async function overlapFigures(upload: Upload): Promise<void> {
  let errors = 0
  const request = async (url: string) => {
    const started = performance.now()
    if ((await moderateOnce(url, upload)) !== 200) errors++
    return performance.now() - started
  }
  const round = async (url: string, each: number) => {
    const {wall, latencies} = await clientsRound(() => request(url), CLIENTS, each)
    return {rate: (CLIENTS * each * 1000) / wall, latencies}
  }
  const pair = await barePair()
  const server = await startServer(['--workers', '1'])
  const bare: number[] = []
  const batch: number[] = []
  const rates: number[] = []
  const single: number[] = []
  const concurrent: number[] = []
  const ratios: number[] = []
  let crowd: Awaited<ReturnType<typeof autocannon>>
  try {
    for (let i = 0; i < 5; i++) {
      await request(server.url)
      await pair.run()
    }
    const sides = {
      bare: () => afterFirst(BLOCK, () => time(() => pair.run())),
      batch: () => afterFirst(BLOCK, () => time(() => pair.runBatch())),
      single: () => afterFirst(BLOCK, () => request(server.url)),
      async concurrent() {
        await round(server.url, 1)
        const r = await round(server.url, PER_CLIENT)
        return [r.rate, ...r.latencies]
      },
    }
    for (let t = 0; t < TURNS; t++) {
      const got: Record<string, number[]> = {}
      const names = Object.keys(sides) as (keyof typeof sides)[]
      for (const side of t % 2 === 0 ? names : names.reverse()) got[side] = await sides[side]()
      const [rate, ...latencies] = got.concurrent
      bare.push(...got.bare)
      batch.push(...got.batch)
      rates.push(rate)
      single.push(...got.single)
      concurrent.push(...latencies)
      // Images/s of 4 clients over the images/s of one bare pair after another, in the same turn.
      ratios.push((rate * median(got.bare)) / 1000)
    }
    crowd = await autocannon({
      url: `${server.url}/v1/moderate`,
      method: 'POST',
      headers: {'content-type': upload.contentType},
      body: upload.body,
      connections: CROWD,
      duration: CROWD_SECONDS,
      timeout: 60,
    })
  } finally {
    await server.stop()
    await pair.release()
  }
  const crowdErrors = crowd.errors + crowd.timeouts + crowd.non2xx
  const singleMedian = median(single)
  const p99 = percentile(concurrent, 99)
  // The floors of a miss. Batching: a bare batch of BATCH_OF pairs against as many single ones, with nothing but
  // inference on the cores. Latency, by Little's law: n clients always waiting on one worker at `rate` wait n / rate
  // on average, and the p99 or the slowest is no less than that.
  const batchCeiling = (median(bare) * BATCH_OF) / median(batch)
  // Without overlap: each client's image prepared one after another (what a single request takes beyond the bare
  // pair: receiving, decoding, preprocessing, answering), then one bare batch of them.
  const preparing = singleMedian - median(bare)
  const serialCeiling = (median(bare) * CLIENTS) / (CLIENTS * preparing + median(batch))
  const rate = median(rates)
  const crowdRate = crowd.requests.total / crowd.duration
  const floors = {
    throughput:
      `ceiling: a bare batch of ${BATCH_OF} pairs takes ${median(batch).toFixed(1)} ms, ${batchCeiling.toFixed(2)} x one at a time, with no decoding; ` +
      `${serialCeiling.toFixed(2)} x with the ${CLIENTS} images prepared one after another first (${preparing.toFixed(1)} ms each: single request less bare pair). ` +
      'Tried: runs wait for the images being prepared, 4 prepared slots (0.75 x before); 8 slots; preparing 2 at once (decoding beside inference slows both)',
    p99: `floor: ${CLIENTS} clients at ${rate.toFixed(1)} images/s wait ${((CLIENTS * 1000) / rate).toFixed(0)} ms on average (${CLIENTS} / rate), ${((CLIENTS * 1000) / rate / singleMedian).toFixed(2)} x the single median`,
    crowd: `floor: ${CROWD} clients at ${crowdRate.toFixed(1)} images/s wait ${((CROWD * 1000) / crowdRate).toFixed(0)} ms on average (${CROWD} / rate), ${((CROWD * 1000) / crowdRate / singleMedian).toFixed(2)} x the single median`,
  }
  table([
    ['1 worker, fp32, default', 'ms / ratio'],
    ['bare pair, one at a time (median)', median(bare).toFixed(1)],
    ['single request (median)', singleMedian.toFixed(1)],
    [`${CLIENTS} clients: median latency`, median(concurrent).toFixed(1)],
    [`${CLIENTS} clients: p99 latency`, p99.toFixed(1)],
    [`bare batch of ${BATCH_OF} pairs (median)`, median(batch).toFixed(1)],
    [`${CLIENTS} clients: images/s (median of ${TURNS} turns)`, rate.toFixed(1)],
    [`${CLIENTS} clients vs one-at-a-time bare pairs (median of the turns' ratios)`, median(ratios).toFixed(2)],
    [`${CROWD} clients, ${CROWD_SECONDS} s: median / max latency`, `${crowd.latency.p50.toFixed(0)} / ${crowd.latency.max.toFixed(0)}`],
    [`${CROWD} clients: requests / errors (non-2xx, 503 included)`, `${crowd.requests.total} / ${crowdErrors}`],
  ])
  const at = `load ${load()}`
  const verdicts: Verdict[] = [
    verdict('http-overlap', `${CLIENTS} clients, ${at}`, 'images/s vs one-at-a-time bare pairs', median(ratios), 'min', TARGETS.throughput, '', 2, floors.throughput),
    verdict('http-overlap', `${CLIENTS} clients, p99 ${p99.toFixed(0)} ms, single median ${singleMedian.toFixed(1)} ms`, 'p99 / single median', p99 / singleMedian, 'max', TARGETS.p99, '', 2, floors.p99),
    verdict('http-overlap', `${CROWD} clients, slowest ${crowd.latency.max.toFixed(0)} ms`, 'slowest / single median', crowd.latency.max / singleMedian, 'max', TARGETS.crowdMax, '', 2, floors.crowd),
    verdict('http-overlap', `${CROWD} clients, ${crowd.requests.total} requests; the short rounds before them`, 'errors', crowdErrors + errors, 'max', 0, '', 0),
  ]
  await saveResults('http-overlap', verdicts, {
    bare: median(bare),
    batch: {of: BATCH_OF, median: median(batch), ceiling: batchCeiling},
    single: singleMedian,
    concurrent: {clients: CLIENTS, median: median(concurrent), p99, ratios},
    crowd: {connections: CROWD, seconds: CROWD_SECONDS, rate: crowdRate, p50: crowd.latency.p50, max: crowd.latency.max, requests: crowd.requests.total, errors: crowdErrors},
  })
}
