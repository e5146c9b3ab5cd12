// The rows of the error table (docs/rest.md, Errors) that need no special setup, against the real server and the toy model.
// Elsewhere: 401 in auth.test.ts; 403, 422 url_blocked, 502 and 504 in url.test.ts; 503 overloaded in
// queue.test.ts; 503 model_unavailable in lifecycle.test.ts.
import {readFile} from 'node:fs/promises'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import type {ErrorCode} from '../../src/lib/errors.js'
import {ModError} from '../../src/lib/errors.js'
import {toHttpError} from '../../src/server/errors.js'
import {solidPng} from '../helpers/cli.js'
import {hiddenFrameApng} from '../helpers/hostile-images.js'
import {colourClip} from '../lib/video/helpers.js'
import {
  call,
  errorOf,
  fakeEngine,
  form,
  postJson,
  red,
  start,
  tempDir,
  testSettings,
  toyEngine,
  type Running,
} from './harness.js'

const dir = tempDir('mod-server-errors-')
const cacheDir = join(dir.path, 'cache')
const settings = testSettings(cacheDir)
const small = testSettings(cacheDir, {limits: {maxBytes: 1024, maxPixels: 100, maxBatch: 2, maxVideoBytes: 4096, maxVideoSeconds: 1}})
const engine = toyEngine(settings)
const smallEngine = toyEngine(small)
let server: Running
let limited: Running
let clip: Buffer

test.before(async () => {
  await Promise.all([engine.load(), smallEngine.load()])
  server = await start(engine, settings, {tmpDir: dir.path})
  limited = await start(smallEngine, small, {tmpDir: dir.path})
  clip = await readFile(await colourClip(join(dir.path, 'three-seconds.mp4'), ['red'], 3))
})

test.after(async () => {
  await Promise.all([server.stop(), limited.stop()])
  await Promise.all([engine.close(), smallEngine.close()])
  dir.remove()
})

const upload = (base: string, path: string, field: string, files: {name: string; data: Buffer | string}[]) =>
  call(`${base}${path}`, {method: 'POST', body: form(field, files)})

test('400 bad_request: no file in the field `file`', async () => {
  const body = new FormData()
  body.append('note', 'hello')
  assert.equal(errorOf(await call(`${server.base}/v1/moderate`, {method: 'POST', body})), {status: 400, code: 'bad_request'})
  const wrongField = await upload(server.base, '/v1/moderate', 'image', [{name: 'red.png', data: await red()}])
  assert.equal(errorOf(wrongField), {status: 400, code: 'bad_request'})
  assert.match(wrongField.body.error.message, 'unexpected file field "image"')
})

test('400 bad_request: the field `file` sent as text instead of a file', async () => {
  const body = new FormData()
  body.append('file', 'iVBORw0KGgo=')
  const r = await call(`${server.base}/v1/moderate`, {method: 'POST', body})
  assert.equal(errorOf(r), {status: 400, code: 'bad_request'})
  assert.match(r.body.error.message, 'as a file')
})

test('415 unsupported_media: an empty file, with the message every path gives', async () => {
  const r = await upload(server.base, '/v1/moderate', 'file', [{name: 'empty.png', data: Buffer.alloc(0)}])
  assert.equal(errorOf(r), {status: 415, code: 'unsupported_media'})
  assert.is(r.body.error.message, 'the file is empty')
  const video = await upload(server.base, '/v1/moderate/video', 'file', [{name: 'empty.mp4', data: Buffer.alloc(0)}])
  assert.equal(errorOf(video), {status: 415, code: 'unsupported_media'})
  assert.is(video.body.error.message, 'the file is empty')
  const job = await upload(server.base, '/v1/jobs/video', 'file', [{name: 'empty.mp4', data: Buffer.alloc(0)}])
  assert.equal(job.body, {error: {code: 'unsupported_media', message: 'the file is empty'}})
  const inline = await postJson(`${server.base}/v1/moderate/json`, {image_base64: 'data:image/png;base64,'})
  assert.equal(inline.body, {error: {code: 'unsupported_media', message: 'the file is empty'}})
  assert.is(inline.status, 415)
})

test('415 unsupported_media: an animated PNG, uploaded or sent as base64', async () => {
  const message = 'animated PNG (APNG) is not supported: only its default image could be scored, not the frames it shows; send the animation as GIF or WebP'
  const r = await upload(server.base, '/v1/moderate', 'file', [{name: 'anim.png', data: hiddenFrameApng()}])
  assert.equal([r.status, r.body], [415, {error: {code: 'unsupported_media', message}}])
  const inline = await postJson(`${server.base}/v1/moderate/json`, {image_base64: hiddenFrameApng().toString('base64')})
  assert.equal([inline.status, inline.body], [415, {error: {code: 'unsupported_media', message}}])
})

test('400 bad_request: no files at all in a batch', async () => {
  const body = new FormData()
  body.append('note', 'hello')
  assert.equal(errorOf(await call(`${server.base}/v1/moderate/batch`, {method: 'POST', body})), {status: 400, code: 'bad_request'})
})

test('400 bad_request: two files sent to a single-file endpoint', async () => {
  const files = [
    {name: 'a.png', data: await red()},
    {name: 'b.png', data: await red()},
  ]
  const r = await upload(server.base, '/v1/moderate', 'file', files)
  assert.equal(errorOf(r), {status: 400, code: 'bad_request'})
  assert.is(r.body.error.message, 'this endpoint takes one file: send exactly one in the field "file"')
})

test('415 unsupported_media: a body that is not multipart, or not JSON', async () => {
  for (const path of ['/v1/moderate', '/v1/moderate/batch', '/v1/moderate/video']) {
    const notMultipart = await postJson(`${server.base}${path}`, {image_base64: 'AAAA'})
    assert.equal(errorOf(notMultipart), {status: 415, code: 'unsupported_media'}, path)
  }
  const notJson = await call(`${server.base}/v1/moderate/json`, {method: 'POST', body: form('file', [{name: 'a', data: 'x'}])})
  assert.equal(errorOf(notJson), {status: 415, code: 'unsupported_media'})
})

test('400 bad_request: bad JSON, and JSON that is not an object', async () => {
  for (const text of ['{"image_base64": ', 'null', '[1, 2]', '"AAAA"']) {
    assert.equal(errorOf(await postJson(`${server.base}/v1/moderate/json`, text)), {status: 400, code: 'bad_request'}, text)
  }
  const bom = await postJson(`${server.base}/v1/moderate/json`, '\uFEFF{"image_base64": "AAAA"}')
  assert.is(bom.body.error.message, 'the body is not valid JSON: it starts with a byte order mark (BOM); send it without one')
})

test('400 bad_request: a name given twice in one object of a JSON body, which JSON.parse would settle silently by the last', async () => {
  const png = (await red()).toString('base64')
  for (const [path, text, name] of [
    ['/v1/moderate/json', `{"image_base64":"${png}","image_base64":"AAAA"}`, 'image_base64'],
    ['/v1/jobs/images', '{"items":[{"url":"https://example.com/a.jpg","url":"http://127.0.0.1/"}]}', 'url'],
  ]) {
    const r = await postJson(`${server.base}${path}`, text)
    assert.equal(errorOf(r), {status: 400, code: 'bad_request'}, path)
    assert.is(r.body.error.message, `the body gives "${name}" more than once in one object; give it once`)
  }
})

test('400 bad_request: bad base64', async () => {
  // Characters outside the alphabet or = inside it; a missing padding is read (test/server/contract.test.ts).
  for (const image_base64 of ['ab$d', 'AAAA=AAA', 'data:image/png,AAAA', '', 42]) {
    const r = await postJson(`${server.base}/v1/moderate/json`, {image_base64})
    assert.equal(errorOf(r), {status: 400, code: 'bad_request'}, JSON.stringify(image_base64))
  }
})

test('400 bad_request: both or neither of image_base64 and url', async () => {
  const both = await postJson(`${server.base}/v1/moderate/json`, {image_base64: 'AAAA', url: 'https://example.com/a.png'})
  assert.equal(errorOf(both), {status: 400, code: 'bad_request'})
  assert.is(both.body.error.message, 'send exactly one of image_base64 and url')
  for (const body of [{}, {image_base64: null, url: null}, {image: 'AAAA'}]) {
    assert.equal(errorOf(await postJson(`${server.base}/v1/moderate/json`, body)), {status: 400, code: 'bad_request'})
  }
})

test('400 bad_request: a bad query value on the video endpoint, before the upload is read', async () => {
  for (const query of ['fps=0', 'fps=11', 'fps=abc', 'min_frames=0', 'min_frames=1.5', 'stop_on_violation=maybe']) {
    const r = await upload(server.base, `/v1/moderate/video?${query}`, 'file', [{name: 'clip.mp4', data: clip}])
    assert.equal(errorOf(r), {status: 400, code: 'bad_request'}, query)
  }
})

test('400 bad_request: a query parameter a POST route does not take (a threshold, a misspelt fps), which it would answer as if applied; GET ignores them', async () => {
  const threshold = await upload(server.base, '/v1/moderate?threshold=0.0001', 'file', [{name: 'red.png', data: await red()}])
  assert.equal(errorOf(threshold), {status: 400, code: 'bad_request'})
  assert.is(threshold.body.error.message, '"threshold" is not a query parameter of POST /v1/moderate: it takes none')
  const misspelt = await upload(server.base, '/v1/moderate/video?fsp=2', 'file', [{name: 'clip.mp4', data: clip}])
  assert.is(misspelt.body.error.message, '"fsp" is not a query parameter of POST /v1/moderate/video: it takes fps, min_frames, stop_on_violation')
  assert.is((await call(`${server.base}/health?nocache=1`)).status, 200)
})

test('413 payload_too_large: an uploaded image over MOD_MAX_BYTES; in a batch an error entry in its place, the other files scored', async () => {
  const r = await upload(limited.base, '/v1/moderate', 'file', [{name: 'big.png', data: Buffer.alloc(2048, 1)}])
  assert.equal(errorOf(r), {status: 413, code: 'payload_too_large'})
  assert.is(r.body.error.message, 'big.png is larger than 1 KiB (MOD_MAX_BYTES)')
  const files = [{name: 'big.png', data: Buffer.alloc(1500, 1)}, {name: 'small.png', data: await solidPng(255, 0, 0, 8, 8)}]
  const batch = await upload(limited.base, '/v1/moderate/batch', 'files', files)
  assert.is(batch.status, 200)
  assert.equal(batch.body.results[0], {source: 'big.png', error: {code: 'payload_too_large', message: 'big.png is larger than 1 KiB (MOD_MAX_BYTES)'}})
  assert.equal([batch.body.results[1].source, typeof batch.body.results[1].is_safe], ['small.png', 'boolean'])
  // Its bytes still count against the batch's total: past it, the request is refused.
  const over = await upload(limited.base, '/v1/moderate/batch', 'files', [{name: 'big.png', data: Buffer.alloc(2100, 1)}, files[1]])
  assert.equal(errorOf(over), {status: 413, code: 'payload_too_large'})
})

test('413 payload_too_large: a base64 image over MOD_MAX_BYTES once decoded', async () => {
  const r = await postJson(`${limited.base}/v1/moderate/json`, {image_base64: Buffer.alloc(2048, 1).toString('base64')})
  assert.equal(errorOf(r), {status: 413, code: 'payload_too_large'})
})

test('413 payload_too_large: a JSON body far over the limit is refused from its Content-Length', async () => {
  const r = await postJson(`${limited.base}/v1/moderate/json`, {image_base64: 'A'.repeat(200_000)})
  assert.equal(errorOf(r), {status: 413, code: 'payload_too_large'})
})

test('413 payload_too_large: an image over MOD_MAX_PIXELS (an error entry in a batch)', async () => {
  const image = await red()
  assert.equal(errorOf(await upload(limited.base, '/v1/moderate', 'file', [{name: 'red.png', data: image}])), {
    status: 413,
    code: 'payload_too_large',
  })
  const batch = await upload(limited.base, '/v1/moderate/batch', 'files', [{name: 'red.png', data: image}])
  assert.is(batch.status, 200)
  assert.is(batch.body.results[0].error.code, 'payload_too_large')
})

test('413 payload_too_large: a video over MOD_MAX_VIDEO_BYTES', async () => {
  const r = await upload(limited.base, '/v1/moderate/video', 'file', [{name: 'big.mp4', data: Buffer.alloc(8192, 1)}])
  assert.equal(errorOf(r), {status: 413, code: 'payload_too_large'})
})

test('413 too_many_files: more files than MOD_MAX_BATCH', async () => {
  const files = ['a', 'b', 'c'].map((name) => ({name: `${name}.png`, data: 'x'}))
  const r = await upload(limited.base, '/v1/moderate/batch', 'files', files)
  assert.equal(errorOf(r), {status: 413, code: 'too_many_files'})
  assert.is(r.body.error.message, 'a batch holds at most 2 files (MOD_MAX_BATCH)')
  const atLimit = await upload(limited.base, '/v1/moderate/batch', 'files', files.slice(0, 2))
  assert.is(atLimit.status, 200)
  assert.is(atLimit.body.results.length, 2)
})

test('422 video_too_long: a video longer than MOD_MAX_VIDEO_SECONDS', async () => {
  const longer = testSettings(cacheDir, {limits: {maxVideoSeconds: 1}})
  const longerEngine = toyEngine(longer)
  const s = await start(longerEngine, longer, {tmpDir: dir.path})
  try {
    const r = await upload(s.base, '/v1/moderate/video', 'file', [{name: 'three-seconds.mp4', data: clip}])
    assert.equal(errorOf(r), {status: 422, code: 'video_too_long'})
  } finally {
    await s.stop()
    await longerEngine.close()
  }
})

test('415 unsupported_media: not an image, uploaded or in base64', async () => {
  const text = Buffer.from('just some text, not an image')
  assert.equal(errorOf(await upload(server.base, '/v1/moderate', 'file', [{name: 'notes.txt', data: text}])), {
    status: 415,
    code: 'unsupported_media',
  })
  const r = await postJson(`${server.base}/v1/moderate/json`, {image_base64: text.toString('base64')})
  assert.equal(errorOf(r), {status: 415, code: 'unsupported_media'})
  // A video sent as an image is pointed at the video route.
  const video = await upload(server.base, '/v1/moderate', 'file', [{name: 'clip.mp4', data: clip}])
  assert.equal(errorOf(video), {status: 415, code: 'unsupported_media'})
  assert.is(video.body.error.message, 'the file is a video, not an image: score it as a video (mod scan-video, POST /v1/moderate/video)')
})

test('415 unsupported_media: not a video the decoder can read; an image says where images go', async () => {
  const r = await upload(server.base, '/v1/moderate/video', 'file', [{name: 'notes.mp4', data: 'just some text, not a video'}])
  assert.equal(errorOf(r), {status: 415, code: 'unsupported_media'})
  assert.match(r.body.error.message, /^not a video in a supported format \(MP4/)
  const photo = await upload(server.base, '/v1/moderate/video', 'file', [{name: 'photo.mp4', data: await red()}])
  assert.equal(errorOf(photo), {status: 415, code: 'unsupported_media'})
  assert.is(photo.body.error.message, 'the file is a PNG image, not a video: score images as images (mod scan, POST /v1/moderate)')
  // An animated PNG is refused by the image route too: not sent there.
  const apng = await upload(server.base, '/v1/moderate/video', 'file', [{name: 'a.png', data: hiddenFrameApng()}])
  assert.equal(errorOf(apng), {status: 415, code: 'unsupported_media'})
  assert.is(apng.body.error.message, 'the file is an animated PNG (APNG), which is read neither as a video nor as an image: convert it to a video, or to an animated GIF or WebP')
})

test('500 internal: an unexpected error answers a generic message, the stack goes to the log only', async () => {
  const broken = fakeEngine({
    moderateImage: async () => {
      throw new Error('secret detail at /srv/model')
    },
  })
  const s = await start(broken, settings)
  try {
    const r = await upload(s.base, '/v1/moderate', 'file', [{name: 'a.png', data: 'x'}])
    assert.equal(r.body, {error: {code: 'internal', message: 'internal error'}})
    assert.is(r.status, 500)
    assert.is(s.logs.length, 1)
    const id = r.headers.get('x-request-id') as string
    assert.ok(s.logs[0].startsWith(`internal error request_id=${id}\nError: secret detail at /srv/model\n    at `), s.logs[0])
  } finally {
    await s.stop()
  }
})

test('a long path is repeated in a 404 or 405 message only as far as its first 200 characters, then an ellipsis', async () => {
  const tail = 'x'.repeat(12_000)
  const missing = await call(`${server.base}/v2/${tail}`)
  assert.equal([missing.status, missing.body], [404, {error: {code: 'not_found', message: `no such endpoint: ${`/v2/${tail}`.slice(0, 200)}…`}}])
  // /docs/ files are not in the document, so this one is read raw.
  const wrong = await fetch(`${server.base}/docs/${tail}`, {method: 'POST'})
  assert.equal([wrong.status, (await wrong.json()).error.message], [405, `POST is not allowed on ${`/docs/${tail}`.slice(0, 200)}…; use GET or HEAD`])
  // A path of exactly 200 characters is repeated whole.
  const exact = `/v2/${'y'.repeat(196)}`
  assert.is((await call(`${server.base}${exact}`)).body.error.message, `no such endpoint: ${exact}`)
})

test('404 not_found for an unknown path and 405 method_not_allowed with Allow for a known one', async () => {
  const missing = await fetch(`${server.base}/v2/moderate`)
  assert.is(missing.status, 404)
  const missingId = missing.headers.get('x-request-id')
  assert.equal(await missing.json(), {error: {code: 'not_found', message: 'no such endpoint: /v2/moderate', request_id: missingId}})
  const wrong = await fetch(`${server.base}/v1/moderate`)
  assert.is(wrong.status, 405)
  assert.is(wrong.headers.get('allow'), 'POST')
  assert.equal(await wrong.json(), {
    error: {code: 'method_not_allowed', message: 'GET is not allowed on /v1/moderate; use POST', request_id: wrong.headers.get('x-request-id')},
  })
  // Paths are exact: with a trailing slash, 404 naming the endpoint meant, whatever the method (the router matched
  // /health/ and POST /v1/moderate/, while GET /v1/moderate/ was a bare 404).
  for (const [method, path, meant] of [['GET', '/v1/moderate/', '/v1/moderate'], ['POST', '/v1/moderate/', '/v1/moderate'], ['GET', '/health/', '/health'], ['GET', '/v1/jobs/abc/', '/v1/jobs/abc']]) {
    const slash = await fetch(`${server.base}${path}`, {method})
    assert.equal([slash.status, (await slash.json()).error.message], [404, `no such endpoint: ${path}; did you mean ${meant}?`], `${method} ${path}`)
  }
  assert.equal((await call(`${server.base}/v2/nothing/`)).body.error.message, 'no such endpoint: /v2/nothing/')
  const docsAsset = await fetch(`${server.base}/docs/nothing-here.js`)
  assert.is(docsAsset.status, 404)
  assert.is((await docsAsset.json()).error.code, 'not_found')
})

test('every engine error code has its status; server-side problems are hidden from the client', () => {
  const log: string[] = []
  const expected: Record<ErrorCode, [number, string, string?]> = {
    bad_request: [400, 'bad_request'],
    unauthorized: [401, 'unauthorized'],
    url_fetch_disabled: [403, 'url_fetch_disabled'],
    url_blocked: [422, 'url_blocked'],
    url_fetch_failed: [502, 'url_fetch_failed'],
    url_fetch_timeout: [504, 'url_fetch_timeout'],
    payload_too_large: [413, 'payload_too_large'],
    request_timeout: [408, 'request_timeout'],
    too_many_files: [413, 'too_many_files'],
    video_too_long: [422, 'video_too_long'],
    unsupported_media: [415, 'unsupported_media'],
    unreadable_image: [415, 'unsupported_media'],
    too_many_uploads: [429, 'too_many_uploads', '1'],
    overloaded: [503, 'overloaded', '1'],
    model_unavailable: [503, 'model_unavailable', '10'],
    model_missing: [503, 'model_unavailable', '10'],
    invalid_config: [500, 'internal'],
    ffmpeg_missing: [500, 'internal'],
    download_failed: [500, 'internal'],
    not_found: [404, 'not_found'],
    jobs_unavailable: [503, 'jobs_unavailable'],
    too_many_jobs: [429, 'too_many_jobs', '30'],
    server_unreachable: [500, 'internal'],
    bad_server_answer: [500, 'internal'],
    internal: [500, 'internal'],
  }
  for (const [code, [status, publicCode, retryAfter]] of Object.entries(expected)) {
    const e = toHttpError(new ModError(code as ErrorCode, `detail of ${code}`), (line) => log.push(line))
    assert.is(e.status, status, code)
    assert.is(e.code, publicCode, code)
    assert.is(e.headers?.['Retry-After'], retryAfter, code)
    assert.is(e.headers?.['WWW-Authenticate'], code === 'unauthorized' ? 'ApiKey header="X-API-Key"' : undefined, code)
    const hidden = ['model_missing', 'invalid_config', 'ffmpeg_missing', 'download_failed', 'server_unreachable', 'bad_server_answer', 'internal'].includes(code)
    assert.is(e.message === `detail of ${code}`, !hidden, code)
  }
  assert.equal(log, [
    'model_missing: detail of model_missing',
    'invalid_config: detail of invalid_config',
    'ffmpeg_missing: detail of ffmpeg_missing',
    'download_failed: detail of download_failed',
    'server_unreachable: detail of server_unreachable',
    'bad_server_answer: detail of bad_server_answer',
    'internal: detail of internal',
  ])
})

test.run()
