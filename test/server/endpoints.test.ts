import {readFile} from 'node:fs/promises'
import {basename, join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {policyDigest} from '../../src/server/policy-digest.js'
import {colourClip, ffmpeg} from '../lib/video/helpers.js'
import {blue, call, form, postJson, red, start, tempDir, testSettings, toyEngine, type Running} from './harness.js'
import {signalStates} from '../helpers/signals.js'

const dir = tempDir('mod-server-endpoints-')
const settings = testSettings(join(dir.path, 'cache'))
const engine = toyEngine(settings)
let server: Running

test.before(async () => {
  await engine.load()
  server = await start(engine, settings, {tmpDir: dir.path})
})

test.after(async () => {
  await server.stop()
  await engine.close()
  dir.remove()
})

const violationNames = (r: {violations: {name: string}[]}) => r.violations.map((v) => v.name)

const {version} = JSON.parse(await readFile(new URL('../../package.json', import.meta.url), 'utf8')) as {version: string}

test('GET /health answers status ok, the version, whether the models are loaded, what each signal does and each category\'s state, on a kept-alive connection', async () => {
  const r = await call(`${server.base}/health`)
  assert.equal(r.status, 200)
  assert.equal({...r.body, categories: r.body.categories.slice(0, 1)}, {
    status: 'ok',
    version,
    model_loaded: true,
    signals: signalStates({clip: 'loaded'}),
    coverage: {evaluated: 12, total: 12, not_evaluated: []},
    categories: [{name: 'nudity', evaluated: true, evaluated_by: ['clip']}],
    policy: {sha256: policyDigest(engine.policy)},
    jobs: 'in_process',
    limits: {max_batch: 16, max_bytes: 26_214_400, max_batch_bytes: 104_857_600},
  })
  assert.is(r.body.categories.length, 12)
  assert.is(r.headers.get('connection'), 'keep-alive')
})

test('HEAD /health answers like GET, without a body', async () => {
  const res = await fetch(`${server.base}/health`, {method: 'HEAD'})
  assert.is(res.status, 200)
  assert.is(res.headers.get('content-type'), 'application/json; charset=utf-8')
  assert.is(await res.text(), '')
})

test('GET /v1/categories lists the preset, the model id and every label with its prompts', async () => {
  const r = await call(`${server.base}/v1/categories`)
  assert.equal(r.status, 200)
  assert.is(r.body.preset, 'fast')
  assert.is(r.body.model, 'toy-clip')
  assert.is(r.body.categories.length, 12)
  assert.equal(r.body.categories.at(-1), {
    name: 'redness',
    parent: null,
    threshold: 0.5,
    origin: 'custom',
    signals: ['clip'],
    evaluated: true,
    evaluated_by: ['clip'],
    prompts: ['red'],
    negatives: [],
  })
  assert.equal(r.body.coverage, {evaluated: 12, total: 12, not_evaluated: []})
  assert.equal(r.body.categories.find((c: {name: string}) => c.name === 'weapons').parent, 'violence')
})

test('POST /v1/moderate flags a red image for redness and names it after the uploaded file', async () => {
  const r = await call(`${server.base}/v1/moderate`, {method: 'POST', body: form('file', [{name: 'red.png', data: await red()}])})
  assert.equal(r.status, 200)
  assert.is(r.body.source, 'red.png')
  assert.is(r.body.is_safe, false)
  assert.equal(r.body.violations, [{name: 'redness', confidence: 1, parent: null, threshold: 0.5}])
  assert.is(r.body.labels.length, 12)
  assert.equal(r.body.labels[0], {name: 'redness', score: 1, threshold: 0.5, parent: null, violated: true, origin: 'custom'})
})

test('POST /v1/moderate finds a blue image safe', async () => {
  const r = await call(`${server.base}/v1/moderate`, {method: 'POST', body: form('file', [{name: 'blue.png', data: await blue()}])})
  assert.equal(r.status, 200)
  assert.is(r.body.is_safe, true)
  assert.equal(r.body.violations, [])
})

test('POST /v1/moderate/batch answers in upload order with an error entry for an unreadable file', async () => {
  const files = [
    {name: 'a-red.png', data: await red()},
    {name: 'notes.txt', data: 'not an image at all'},
    {name: 'b-blue.png', data: await blue()},
    {name: 'empty.png', data: Buffer.alloc(0)},
  ]
  const r = await call(`${server.base}/v1/moderate/batch`, {method: 'POST', body: form('files', files)})
  assert.equal(r.status, 200)
  assert.equal(
    r.body.results.map((x: {source: string}) => x.source),
    ['a-red.png', 'notes.txt', 'b-blue.png', 'empty.png'],
  )
  assert.equal(violationNames(r.body.results[0]), ['redness'])
  assert.is(r.body.results[1].error.code, 'unsupported_media')
  assert.is(r.body.results[2].is_safe, true)
  assert.equal(r.body.results[3].error, {code: 'unsupported_media', message: 'the file is empty'})
})

test('POST /v1/moderate/json scores plain base64 and names it image_base64', async () => {
  const r = await postJson(`${server.base}/v1/moderate/json`, {image_base64: (await red()).toString('base64')})
  assert.equal(r.status, 200)
  assert.is(r.body.source, 'image_base64')
  assert.equal(violationNames(r.body), ['redness'])
})

test('POST /v1/moderate/json accepts a data URI and base64 wrapped over several lines', async () => {
  const b64 = (await blue()).toString('base64')
  const wrapped = b64.replace(/.{76}/g, '$&\n')
  for (const image_base64 of [`data:image/png;base64,${b64}`, wrapped]) {
    const r = await postJson(`${server.base}/v1/moderate/json`, {image_base64})
    assert.equal(r.status, 200)
    assert.is(r.body.is_safe, true)
  }
})

test('POST /v1/moderate/video reports the red stretch of a clip as a timed segment', async () => {
  const clip = await colourClip(join(dir.path, 'clip.mp4'), ['blue', 'red', 'blue'], 2)
  const data = await readFile(clip)
  const r = await call(`${server.base}/v1/moderate/video?fps=1&min_frames=2`, {
    method: 'POST',
    body: form('file', [{name: 'clip.mp4', data, type: 'video/mp4'}]),
  })
  assert.equal(r.status, 200)
  assert.equal(r.body, {
    source: 'clip.mp4',
    is_safe: false,
    duration: 6,
    fps: 1,
    frames_analyzed: 6,
    stopped_early: false,
    violations: [
      {
        name: 'redness',
        parent: null,
        threshold: 0.5,
        max_confidence: 1,
        segments: [{start: 2, end: 4, frames: 2, max_confidence: 1}],
      },
    ],
    not_evaluated: [],
  })
})

test('POST /v1/moderate/video stops at the first segment with stop_on_violation', async () => {
  const clip = await colourClip(join(dir.path, 'stop.mp4'), ['red', 'blue'], 3)
  const data = await readFile(clip)
  const r = await call(`${server.base}/v1/moderate/video?stop_on_violation=true`, {
    method: 'POST',
    body: form('file', [{name: 'stop.mp4', data, type: 'video/mp4'}]),
  })
  assert.equal(r.status, 200)
  assert.is(r.body.stopped_early, true)
  assert.is(r.body.is_safe, false)
  assert.equal(r.body.violations[0].segments[0].start, 0)
})

test("POST /v1/moderate/video times a segment on the file's own timeline, scores an MP3's cover art, and refuses sound alone with 415", async () => {
  const post = async (path: string, type: string) =>
    call(`${server.base}/v1/moderate/video`, {method: 'POST', body: form('file', [{name: basename(path), data: await readFile(path), type}])})
  // Blue then red, on a timeline that starts at 5 s: a browser shows the red at 6 s.
  const late = await colourClip(join(dir.path, 'at-5s.mkv'), ['blue', 'red'], 1, {codec: ['-c:v', 'mpeg4', '-output_ts_offset', '5']})
  const r = await post(late, 'video/x-matroska')
  assert.equal([r.status, r.body.duration, r.body.frames_analyzed, r.body.violations[0].segments], [200, 7, 2, [{start: 6, end: 7, frames: 1, max_confidence: 1}]])
  const red = await colourClip(join(dir.path, 'red-cover.mp4'), ['red'], 0.1)
  await ffmpeg('-f', 'lavfi', '-i', 'sine=d=1', '-i', red, '-map', '0:a', '-map', '1:v', '-frames:v:0', '1', '-c:a', 'libmp3lame', '-c:v', 'mjpeg', '-disposition:v:0', 'attached_pic', join(dir.path, 'song.mp3'))
  await ffmpeg('-f', 'lavfi', '-i', 'sine=d=1', '-c:a', 'libmp3lame', join(dir.path, 'sound.mp3'))
  const song = await post(join(dir.path, 'song.mp3'), 'audio/mpeg')
  assert.equal([song.status, song.body.frames_analyzed, song.body.violations.map((v: {name: string}) => v.name)], [200, 1, ['redness']])
  const sound = await post(join(dir.path, 'sound.mp3'), 'audio/mpeg')
  assert.equal([sound.status, sound.body.error], [415, {code: 'unsupported_media', message: 'the file is sound only: it has no picture to score (no video stream, no cover art)'}])
})

test('an animated GIF sent to the video endpoint is decoded as a video', async () => {
  const clip = await colourClip(join(dir.path, 'anim.gif'), ['red', 'blue'], 1, {codec: ['-f', 'gif']})
  const data = await readFile(clip)
  const r = await call(`${server.base}/v1/moderate/video`, {
    method: 'POST',
    body: form('file', [{name: 'anim.gif', data, type: 'image/gif'}]),
  })
  assert.equal(r.status, 200)
  assert.is(r.body.source, 'anim.gif')
  assert.equal(r.body.violations.map((v: {name: string}) => v.name), ['redness'])
})

test.run()
