// The REST API with a policy's codes rules: zxing reads in a worker thread, so GET /health answers at once while a
// batch of noise frames, which zxing looks at long (about 100-300 ms a full-HD frame, by the CPU), is scored. Read
// on the event loop, nearly every /health would wait for a read; the median wait tells the two apart also when other
// processes take the CPU now and then. No bound on the slowest answer: read on the event loop, the four frames hold
// it about 0.7 s in all, and on a loaded machine the first answer, asked while the server is still reading the 25 MB
// upload, took 1.3 s with the reads in their thread.
import {randomBytes} from 'node:crypto'
import {writeFileSync} from 'node:fs'
import {join} from 'node:path'

import sharp from 'sharp'
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {call, form, startWithPolicy, tempDir, testSettings, type Running} from './harness.js'
import {healthWaitsWhile} from '../helpers/health-waits.js'

const dir = tempDir('mod-server-codes-thread-')
const settings = testSettings(join(dir.path, 'cache'))
let server: Running

test.before(async () => {
  writeFileSync(join(dir.path, 'policy.yaml'), 'codes:\n  rules:\n    any_code:\n      category: contact_info\n      any: true\n')
  server = await startWithPolicy(join(dir.path, 'policy.yaml'), settings, {tmpDir: dir.path, threads: 1})
})

test.after(async () => {
  await server.stop()
  dir.remove()
})

test('GET /health answers at once (median under 30 ms) while full-HD noise frames are read for codes', async () => {
  const noise = await Promise.all(
    Array.from({length: 4}, () => sharp(randomBytes(1920 * 1080 * 3), {raw: {width: 1920, height: 1080, channels: 3}}).png({compressionLevel: 1}).toBuffer()),
  )
  const files = noise.map((data, i) => ({name: `noise-${i}.png`, data}))
  const {result: r, waits} = await healthWaitsWhile(server.base, call(`${server.base}/v1/moderate/batch`, {method: 'POST', body: form('files', files)}), 20)
  assert.is(r.status, 200)
  // Every frame read whole: the reader's time limit is its thread's CPU time, which a busy machine does not use up.
  assert.equal(
    r.body.results.map((x: {codes?: unknown[]; codes_truncated?: boolean}) => [x.codes, x.codes_truncated]),
    noise.map(() => [[], undefined]),
  )
  const median = [...waits].sort((a, b) => a - b)[Math.floor(waits.length / 2)]
  assert.ok(waits.length >= 4 && median < 30, JSON.stringify(waits.map(Math.round)))
})

test.run()
