// MOD_SERVER_TIMING: moderation answers carry a Server-Timing header with the engine's steps, the receiving and
// the whole; without it, none.
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {readSettings} from '../../src/lib/config/settings.js'
import {addStep} from '../../src/lib/pipeline/steps.js'
import {serverTiming} from '../../src/server/server-timing.js'
import {call, fakeEngine, form, postJson, red, start, tempDir, testSettings, type Running} from './harness.js'

const dir = tempDir('mod-server-timing-')
// An engine that reports fixed step times, recorded out of order, so the header's engine part is exact.
const engine = fakeEngine({
  moderateImage: async (_data, source, o = {}) => {
    const steps: [string, number][] = [['clip_infer', 20], ['decode', 1.5], ['nsfw_preprocess', 0.75], ['nsfw_infer', 3.25], ['clip_preprocess', 4]]
    for (const [step, ms] of steps) addStep(o.steps, step, ms)
    return {source, is_safe: true, violations: [], labels: [], not_evaluated: []}
  },
})
let timed: Running
let plain: Running

test.before(async () => {
  await engine.load()
  timed = await start(engine, testSettings(join(dir.path, 'cache'), {serverTiming: true}))
  plain = await start(engine, testSettings(join(dir.path, 'cache')))
})

test.after(async () => {
  await Promise.all([timed.stop(), plain.stop()])
  dir.remove()
})

/** The header's entries as [name, ms]. */
function entries(header: string | null): [string, number][] {
  return (header ?? '').split(', ').map((e) => {
    const m = /^(\w+);dur=(\d+\.\d\d)$/.exec(e)
    if (!m) throw new Error(`not a Server-Timing entry: ${e}`)
    return [m[1], Number(m[2])]
  })
}

test('serverTiming writes receive, the steps in the order a request takes them, and total, in ms with two decimals', () => {
  const steps = {score: 0.123, nsfw_infer: 3, clip_infer: 30, wait: 0, nsfw_preprocess: 2, clip_preprocess: 6, trim: 0.5, decode: 8}
  assert.is(
    serverTiming(0.5, steps, 40),
    'receive;dur=0.50, decode;dur=8.00, trim;dur=0.50, nsfw_preprocess;dur=2.00, clip_preprocess;dur=6.00, wait;dur=0.00, ' +
      'nsfw_infer;dur=3.00, clip_infer;dur=30.00, score;dur=0.12, total;dur=40.00',
  )
})

test('with MOD_SERVER_TIMING, an upload and a JSON request answer with the engine steps between receive and total', async () => {
  const image = await red()
  const upload = await call(`${timed.base}/v1/moderate`, {method: 'POST', body: form('file', [{name: 'r.png', data: image}])})
  const json = await postJson(`${timed.base}/v1/moderate/json`, {image_base64: image.toString('base64')})
  for (const r of [upload, json]) {
    assert.is(r.status, 200)
    const got = entries(r.headers.get('server-timing'))
    assert.equal(got.map(([name]) => name), ['receive', 'decode', 'nsfw_preprocess', 'clip_preprocess', 'clip_infer', 'nsfw_infer', 'total'])
    assert.equal(got.slice(1, 6), [['decode', 1.5], ['nsfw_preprocess', 0.75], ['clip_preprocess', 4], ['clip_infer', 20], ['nsfw_infer', 3.25]])
    assert.ok(got[6][1] >= got[0][1])
  }
  const batch = await call(`${timed.base}/v1/moderate/batch`, {method: 'POST', body: form('files', [{name: 'a.png', data: image}, {name: 'b.png', data: image}])})
  assert.equal(entries(batch.headers.get('server-timing')).slice(1, 6), [['decode', 3], ['nsfw_preprocess', 1.5], ['clip_preprocess', 8], ['clip_infer', 40], ['nsfw_infer', 6.5]])
})

test('without it, no Server-Timing header, and the setting is read from MOD_SERVER_TIMING', async () => {
  const r = await call(`${plain.base}/v1/moderate`, {method: 'POST', body: form('file', [{name: 'r.png', data: await red()}])})
  assert.is(r.status, 200)
  assert.is(r.headers.get('server-timing'), null)
  assert.is(readSettings({}, {MOD_SERVER_TIMING: 'true'}).server.serverTiming, true)
  assert.is(readSettings({}, {}).server.serverTiming, false)
})

test.run()
