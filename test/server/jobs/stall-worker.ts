// A job worker process for the stalled-job test: BullMQ with short lock timings; it prints "started <id>"
// when it takes a job, then hangs (argv "hang") until killed, or finishes it at once ("finish"). The timings are
// short so that the test waits little; what it checks (the job runs again) does not depend on them.
import {createBullQueue} from '../../../src/server/jobs/bullmq.js'

const [url, mode, storage] = process.argv.slice(2)
const queue = createBullQueue({
  url,
  limit: 10,
  ttlSeconds: 60,
  storage,
  log: (line) => process.stderr.write(`${line}\n`),
  describeError: () => ({code: 'internal', message: 'failed'}),
  lockDurationMs: 1000,
  stalledIntervalMs: 300,
  maxStalledCount: 1,
})
queue.work(async (spec) => {
  process.stdout.write(`started ${spec.id}\n`)
  if (mode === 'hang') await new Promise(() => {})
  return {source: spec.source, is_safe: true, duration: 1, fps: 1, frames_analyzed: 1, stopped_early: false, violations: [], not_evaluated: []}
})
process.stdout.write('ready\n')
