// An image chunk worker process for the exactly-once test: the toy engine and the real chunk runner on BullMQ with
// short lock timings (so that a killed worker's chunk comes back soon). After scoring a chunk it prints
// "scored <job>.<chunk>" and waits `delayMs` before the chunk is recorded: a kill then lands between the two.
import {createRedisImageQueue} from '../../../src/server/jobs/images/redis.js'
import {chunkRunnerFor} from '../../../src/server/jobs/images/service.js'
import {buildPolicy} from '../../../src/lib/config/policy.js'
import {readSettings} from '../../../src/lib/config/settings.js'
import {createEngine} from '../../../src/lib/engine.js'
import {TOY_MODEL} from '../../helpers/cli.js'
import {withoutSpecialist} from '../../helpers/signals.js'

const [url, storage, cacheDir, delayMs] = process.argv.slice(2)
// The toy model with the redness category of the server tests, without the server's modules (a faster start).
const {server} = readSettings({cacheDir}, {})
const settings = {...server, jobs: {...server.jobs, storage, redisUrl: url}}
const engine = createEngine({
  preset: 'fast',
  modelDir: TOY_MODEL,
  cacheDir,
  policy: buildPolicy({categories: [{name: 'redness', prompts: ['red']}]}),
  limits: settings.limits,
  signals: withoutSpecialist(),
})
await engine.load()
const log = (line: string) => process.stderr.write(`${line}\n`)
const queue = createRedisImageQueue({
  url,
  storage,
  ttlSeconds: 600,
  maxPerClient: 10,
  log,
  describeError: (e) => ({code: 'internal', message: String(e)}),
  lockDurationMs: 1000,
  stalledIntervalMs: 300,
})
const runner = chunkRunnerFor(engine, settings, log)
queue.work(async (chunk, signal) => {
  const lines = await runner(chunk, signal)
  process.stdout.write(`scored ${chunk.job}.${chunk.index}\n`)
  await new Promise((resolve) => setTimeout(resolve, Number(delayMs)))
  return lines
})
process.stdout.write('ready\n')
