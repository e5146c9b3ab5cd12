// A job worker process for the stalled-job test: BullMQ with short lock timings; it prints "started <id>"
// when it takes a job, then hangs (argv "hang", a run of flagged frames open) until killed, or finishes it at once ("finish"). The timings are
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
queue.work(async (spec, hooks) => {
  process.stdout.write(`started ${spec.id}\n`)
  // A hanging run has a run of flagged frames open, as a video would when its worker dies.
  if (mode === 'hang') hooks.onProgress(1, 1, [{label: 'redness', segment: {start: 0, end: 1, frames: 1, max_confidence: 1}}])
  if (mode === 'hang') await new Promise(() => {})
  return {source: spec.source, is_safe: true, duration: 1, fps: 1, frames_analyzed: 1, stopped_early: false, violations: [], not_evaluated: []}
})
process.stdout.write('ready\n')
