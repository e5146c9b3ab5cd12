import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import type {Engine} from '../../src/lib/engine.js'
import {call, conformance, errorOf, form, postJson, red, start, tempDir, testSettings, toyEngine, type Running} from './harness.js'

// What the schema fuzzer (scripts/fuzz/schemathesis.sh) found: a request the document admits gets a declared
// answer, and one it refuses is refused by the server too.

const dir = tempDir('mod-server-contract-')
const settings = testSettings(join(dir.path, 'cache'))
let engine: Engine
let server: Running

test.before(async () => {
  engine = toyEngine(settings)
  server = await start(engine, settings, {tmpDir: dir.path})
})
test.after(async () => {
  await server.stop()
  await engine.close()
  dir.remove()
})

const problems = (body: unknown) => conformance.requestProblems('POST', '/v1/moderate/json', 'application/json', body)

test('image_base64 "00" (unpadded, one byte) is admitted by the document and answered the declared 415: one byte is no image', async () => {
  assert.equal(problems({image_base64: '00'}), [])
  const r = await postJson(`${server.base}/v1/moderate/json`, {image_base64: '00'})
  assert.equal(errorOf(r), {status: 415, code: 'unsupported_media'})
})

test('unpadded base64 of an image is read as the padded one; the document refuses exactly what the server refuses', async () => {
  const png = (await red()).toString('base64')
  const unpadded = png.replace(/=+$/, '')
  assert.not.equal(unpadded, png)
  const admitted = [png, unpadded, `${png.slice(0, 8)}\n${png.slice(8)}`, `data:image/png;base64,${unpadded}`]
  assert.equal(admitted.map((b) => problems({image_base64: b})), admitted.map(() => []))
  for (const b of admitted) assert.is((await postJson(`${server.base}/v1/moderate/json`, {image_base64: b})).status, 200, b.slice(0, 30))
  for (const refused of ['ab$d', 'AA=A', 'A===', '-_AA']) {
    assert.ok(problems({image_base64: refused}).length > 0, refused)
    assert.equal(errorOf(await postJson(`${server.base}/v1/moderate/json`, {image_base64: refused})), {status: 400, code: 'bad_request'}, refused)
  }
})

test('a PNG sent to the video endpoint is the declared 415 unsupported_media', async () => {
  const r = await call(`${server.base}/v1/moderate/video`, {method: 'POST', body: form('file', [{name: 'file.png', data: await red()}])})
  assert.equal(errorOf(r), {status: 415, code: 'unsupported_media'})
})

test('a batch over maxItems (MOD_MAX_BATCH) is the declared 413 too_many_files', async () => {
  const png = await red()
  const files = Array.from({length: settings.limits.maxBatch + 1}, (_, i) => ({name: `${i}.png`, data: png}))
  const r = await call(`${server.base}/v1/moderate/batch`, {method: 'POST', body: form('files', files)})
  assert.equal(errorOf(r), {status: 413, code: 'too_many_files'})
})

test('GET /v1/jobs/video is 405 with Allow: POST, not a request for a job whose id is "video"', async () => {
  for (const method of ['GET', 'DELETE']) {
    const r = await call(`${server.base}/v1/jobs/video`, {method})
    assert.equal([errorOf(r), r.headers.get('allow')], [{status: 405, code: 'method_not_allowed'}, 'POST'])
  }
})

test.run()
