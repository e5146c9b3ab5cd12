/**
 * What bulk image jobs give past one process, and what the queue costs per item: images/s of one job with 1 and 2
 * `mod worker` processes on this machine, Redis's work per item (commands, and Redis CPU from INFO commandstats),
 * bytes stored per item, the latency a job adds to one image against POST /v1/moderate, and from those the
 * throughput N machines would give (each machine's workers, capped by what one Redis core can serve).
 *
 *   npm run build && npx tsx bench/scale.ts [--model DIR] [--items N]
 *
 * The model defaults to the bench stand-in (bench/models/fast-standin, `npm run bench` makes it), else the toy model.
 */
import {existsSync, mkdtempSync, rmSync} from 'node:fs'
import {cpus, tmpdir} from 'node:os'
import {join} from 'node:path'
import {parseArgs} from 'node:util'

import {Redis} from 'ioredis'
import sharp from 'sharp'

import {header, load, ROOT, STANDIN_DIR, table, texturedPixels} from './lib.js'
import {acceptingServer, freePort, launch, modEnv, modWorkers, startRedis, stopAll, type Launched} from './processes.js'
import {BIN} from './lib.js'

const {values} = parseArgs({options: {model: {type: 'string'}, items: {type: 'string', default: '128'}}})
const model = values.model ?? (existsSync(STANDIN_DIR) ? STANDIN_DIR : join(ROOT, 'test', 'fixtures', 'models', 'toy'))
const ITEMS = Number(values.items)
const dir = mkdtempSync(join(tmpdir(), 'mod-bench-scale-'))
const redisPort = await freePort()
const redisUrl = `redis://127.0.0.1:${redisPort}`
const env = modEnv(dir, model, redisUrl)

header('scale', `one job of ${ITEMS} 640x480 JPEGs on 1 and 2 mod worker processes (model ${model})`)
await startRedis(dir, redisPort)
const {base} = await acceptingServer(env)
const redis = new Redis(redisUrl)

const photos = await Promise.all(
  Array.from({length: 8}, (_, i) => sharp(texturedPixels(640, 480, 500 + i), {raw: {width: 640, height: 480, channels: 3}}).jpeg({quality: 85}).toBuffer()),
)
const files = (n: number) => {
  const form = new FormData()
  for (let i = 0; i < n; i++) form.append('files', new Blob([new Uint8Array(photos[i % photos.length])]), `${i}.jpg`)
  return form
}

/** Redis's calls and CPU microseconds so far, summed over commands. */
async function redisWork(): Promise<{calls: number; usec: number}> {
  let calls = 0
  let usec = 0
  for (const m of (await redis.info('commandstats')).matchAll(/calls=(\d+),usec=(\d+)/g)) {
    calls += Number(m[1])
    usec += Number(m[2])
  }
  return {calls, usec}
}

/** Polls the job every `everyMs` until done; returns the polls made (each costs Redis 3 commands). */
async function done(id: string, everyMs: number): Promise<number> {
  for (let polls = 1; ; polls++) {
    const job = (await (await fetch(`${base}/v1/jobs/${id}`)).json()) as {status: string}
    if (job.status === 'done') return polls
    await new Promise((resolve) => setTimeout(resolve, everyMs))
  }
}

async function oneJob(n: number): Promise<{seconds: number; calls: number; usec: number; id: string}> {
  const body = files(n)
  const before = await redisWork()
  const started = performance.now()
  const {id} = (await (await fetch(`${base}/v1/jobs/images`, {method: 'POST', body})).json()) as {id: string}
  const polls = await done(id, 200)
  const seconds = (performance.now() - started) / 1000
  const after = await redisWork()
  // Two INFO calls of this script and the client's polls are not the queue's work.
  return {seconds, calls: after.calls - before.calls - 2 - 3 * polls, usec: after.usec - before.usec, id}
}

const rows: (string | number)[][] = [['', '1 worker', '2 workers']]
const rates: number[] = []
let perItem = {calls: 0, usec: 0}
let bytesPerItem = 0
let workers: Launched[] = []
for (const count of [1, 2]) {
  workers = await modWorkers(count, env)
  await oneJob(32)
  const run = await oneJob(ITEMS)
  rates.push(ITEMS / run.seconds)
  if (count === 1) {
    perItem = {calls: run.calls / ITEMS, usec: run.usec / ITEMS}
    bytesPerItem = Number(await redis.call('MEMORY', 'USAGE', `mod:imagejob:${run.id}:lines`, 'SAMPLES', '0')) / ITEMS
  }
  for (const w of workers) await w.kill('SIGTERM')
}
rows.push(['images/s, accepted to done', ...rates.map((r) => r.toFixed(1))])

// Latency one image gains by going through a job: a one-item job against the same image served directly.
workers = await modWorkers(1, env)
await oneJob(1)
const jobMs: number[] = []
for (let i = 0; i < 5; i++) {
  const started = performance.now()
  const {id} = (await (await fetch(`${base}/v1/jobs/images`, {method: 'POST', body: files(1)})).json()) as {id: string}
  await done(id, 5)
  jobMs.push(performance.now() - started)
}
for (const w of workers) await w.kill('SIGTERM')
const direct = launch(process.execPath, [BIN, 'serve', '--port', '0'], {...env, MOD_REDIS_URL: ''})
const directBase = (await direct.waitFor(/listening on (http:\/\/127\.0\.0\.1:\d+)/))[1]
const directMs: number[] = []
for (let i = 0; i < 6; i++) {
  const form = new FormData()
  form.append('file', new Blob([new Uint8Array(photos[0])]), '0.jpg')
  const started = performance.now()
  await (await fetch(`${directBase}/v1/moderate`, {method: 'POST', body: form})).text()
  if (i > 0) directMs.push(performance.now() - started)
}
const median = (v: number[]) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)]
const added = median(jobMs) - median(directMs)

// One Redis core serves about 1e6 / usec-per-item items a second; each machine gives what its better number of
// workers gives (on 2 cores one worker's onnxruntime already takes both).
const redisCap = 1e6 / perItem.usec
const bestWorkers = rates[1] > rates[0] ? 2 : 1
const perMachine = Math.max(rates[0], rates[1])
table(rows)
table([
  ['queue cost per item', ''],
  ['Redis commands (polling left out)', perItem.calls.toFixed(2)],
  ['Redis CPU', `${perItem.usec.toFixed(1)} us`],
  ['bytes stored per result line', bytesPerItem.toFixed(0)],
  ['latency added to one image (1-item job, polled every 5 ms, against POST /v1/moderate)', `${added.toFixed(0)} ms (${median(jobMs).toFixed(0)} against ${median(directMs).toFixed(0)} ms)`],
  ['one Redis core\'s ceiling', `${redisCap.toFixed(0)} images/s`],
])
table([
  [`machines like this one (${bestWorkers} ${bestWorkers === 1 ? 'worker' : 'workers'} each)`, 'images/s'],
  ...[1, 2, 4, 8, 16, 64].map((n) => [n, `${Math.min(n * perMachine, redisCap).toFixed(0)}${n * perMachine > redisCap ? ' (Redis-bound)' : ''}`]),
])
process.stdout.write(`cores ${cpus().length}, load ${load()}: figures on a busy machine are low; re-measure on a quiet one\n`)
redis.disconnect()
await stopAll()
rmSync(dir, {recursive: true, force: true})
process.exit(0)
