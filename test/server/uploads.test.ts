import {mkdirSync, readdirSync, readFileSync} from 'node:fs'
import type {ClientRequest} from 'node:http'
import {connect} from 'node:net'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {ModError} from '../../src/lib/errors.js'
import type {VideoOptions} from '../../src/lib/engine.js'
import {
  call,
  errorOf,
  fakeEngine,
  form,
  multipartParts,
  rawError,
  rawRequest,
  start,
  tempDir,
  testSettings,
  until,
  type Running,
} from './harness.js'

const dir = tempDir('mod-server-uploads-')
const uploads = join(dir.path, 'uploads')
const settings = testSettings(join(dir.path, 'cache'), {limits: {maxBytes: 64 * 1024, maxBatch: 2, maxVideoBytes: 256 * 1024}})

/** What the fake engine saw of each video: the upload folder's content while it was being moderated. */
let seen: {files: string[]; bytes: number}[] = []
let videoBehaviour: (path: string, o: VideoOptions) => Promise<void> = async () => {}

const engine = fakeEngine({
  moderateVideo: async (path, o) => {
    const folders = readdirSync(uploads)
    seen.push({files: folders.flatMap((f) => readdirSync(join(uploads, f)).map((n) => `${f.replace(/-.*/, '')}/${n}`)), bytes: readFileSync(path).length})
    await videoBehaviour(path, o)
    return {source: o.source, is_safe: true, duration: 1, fps: o.fps, frames_analyzed: 1, stopped_early: false, violations: [], not_evaluated: []}
  },
})
let server: Running

test.before(async () => {
  mkdirSync(uploads)
  server = await start(engine, settings, {tmpDir: uploads})
})

test.before.each(() => {
  seen = []
  videoBehaviour = async () => {}
})

test.after(async () => {
  await server.stop()
  dir.remove()
})

const video = (bytes: number) => form('file', [{name: 'clip.mp4', data: Buffer.alloc(bytes, 7), type: 'video/mp4'}])

test('an image over MOD_MAX_BYTES is refused with 413 while the rest of its body has not been sent', async () => {
  const {head, type} = multipartParts('file', 'huge.png')
  // No Content-Length (chunked): the limit is found as the bytes arrive.
  const answer = await rawRequest(`${server.base}/v1/moderate`, {headers: {'content-type': type}}, (req) => {
    req.write(head)
    req.write(Buffer.alloc(128 * 1024, 1))
  })
  assert.is(answer.status, 413)
  assert.is(answer.headers.connection, 'close')
  assert.equal(JSON.parse(answer.body), {
    error: {code: 'payload_too_large', message: 'huge.png is larger than 64 KiB (MOD_MAX_BYTES)', request_id: answer.headers['x-request-id']},
  })
})

test('a multipart body whose Content-Length is over the limit is refused with 413 before any of it is read', async () => {
  const {type} = multipartParts('file', 'huge.png')
  // The limit is the file limit plus the form's room of 128 KiB; the message names the setting it comes from.
  const cases = [
    ['/v1/moderate', '192 KiB, the most an image of at most 64 KiB (MOD_MAX_BYTES) can take in a multipart form'],
    ['/v1/moderate/batch', '256 KiB, the most 2 files of at most 64 KiB each (MOD_MAX_BATCH, MOD_MAX_BYTES) can take in a multipart form'],
    ['/v1/moderate/video', '384 KiB, the most a video of at most 256 KiB (MOD_MAX_VIDEO_BYTES) can take in a multipart form'],
    ['/v1/jobs/video', '384 KiB, the most a video of at most 256 KiB (MOD_MAX_VIDEO_BYTES) can take in a multipart form'],
  ] as const
  for (const [path, limit] of cases) {
    const answer = await rawRequest(`${server.base}${path}`, {headers: {'content-type': type, 'content-length': 10 * 1024 * 1024}}, (req) => req.flushHeaders())
    assert.is(answer.status, 413, path)
    assert.is(answer.headers.connection, 'close', path)
    assert.equal(rawError(answer), {
      error: {code: 'payload_too_large', message: `the request body is larger than ${limit}`},
    })
  }
  assert.equal(readdirSync(uploads), [])
})

test('a video over MOD_MAX_VIDEO_BYTES is cut off with 413 and its partial file removed', async () => {
  const {head, type} = multipartParts('file', 'long.mp4')
  // No Content-Length (chunked): the limit is found as the bytes arrive.
  const answer = await rawRequest(`${server.base}/v1/moderate/video`, {headers: {'content-type': type}}, (req) => {
    req.write(head)
    for (let i = 0; i < 8; i++) req.write(Buffer.alloc(64 * 1024, 1))
  })
  assert.is(answer.status, 413)
  assert.equal(rawError(answer).error, {code: 'payload_too_large', message: 'the video is larger than 256 KiB (MOD_MAX_VIDEO_BYTES)'})
  assert.equal(readdirSync(uploads), [])
})

test('a JSON body over its limit is refused with 413 while it is still streaming', async () => {
  const answer = await rawRequest(
    `${server.base}/v1/moderate/json`,
    {headers: {'content-type': 'application/json', 'transfer-encoding': 'chunked'}},
    (req) => {
      req.write('{"image_base64": "')
      for (let i = 0; i < 4; i++) req.write('A'.repeat(64 * 1024))
    },
  )
  assert.is(answer.status, 413)
  assert.is(answer.headers.connection, 'close')
  assert.equal(rawError(answer).error, {
    code: 'payload_too_large',
    message: 'the request body is larger than 157.87 KiB, the most a JSON body needs for an image of at most 64 KiB (MOD_MAX_BYTES) in base64',
  })
})

test('file number MOD_MAX_BATCH + 1 is refused with too_many_files as soon as its part begins', async () => {
  const boundary = 'modtestboundary'
  const part = (name: string) =>
    `--${boundary}\r\nContent-Disposition: form-data; name="files"; filename="${name}"\r\nContent-Type: image/png\r\n\r\nxx\r\n`
  const answer = await rawRequest(
    `${server.base}/v1/moderate/batch`,
    {headers: {'content-type': `multipart/form-data; boundary=${boundary}`, 'transfer-encoding': 'chunked'}},
    (req) => req.write(part('a.png') + part('b.png') + part('c.png')),
  )
  assert.is(answer.status, 413)
  assert.equal(JSON.parse(answer.body).error.code, 'too_many_files')
})

test('a file name over 1024 characters is a 400 naming its length, on every upload route; 1024 is echoed whole as source', async () => {
  const long = `${'n'.repeat(1997)}.png`
  for (const [path, field] of [['/v1/moderate', 'file'], ['/v1/moderate/batch', 'files'], ['/v1/moderate/video', 'file']]) {
    const r = await call(`${server.base}${path}`, {method: 'POST', body: form(field, [{name: long, data: 'xx'}])})
    assert.equal([r.status, r.body.error], [400, {code: 'bad_request', message: 'a file name is 2001 characters long; at most 1024 are taken'}], path)
  }
  const name = `${'n'.repeat(1020)}.mp4`
  const ok = await call(`${server.base}/v1/moderate/video`, {method: 'POST', body: form('file', [{name, data: Buffer.alloc(1000, 7), type: 'video/mp4'}])})
  assert.equal([ok.status, ok.body.source], [200, name])
})

test('a video streams to a folder of its own, removed once the answer is ready', async () => {
  const r = await call(`${server.base}/v1/moderate/video?fps=2`, {method: 'POST', body: video(100_000)})
  assert.is(r.status, 200)
  assert.is(r.body.source, 'clip.mp4')
  assert.is(r.body.fps, 2)
  assert.equal(seen, [{files: ['mod/upload'], bytes: 100_000}])
  assert.equal(readdirSync(uploads), [])
})

test('the upload folder is removed when moderation fails', async () => {
  videoBehaviour = async () => {
    throw new ModError('unsupported_media', 'not a video')
  }
  const r = await call(`${server.base}/v1/moderate/video`, {method: 'POST', body: video(1000)})
  assert.equal(errorOf(r), {status: 415, code: 'unsupported_media'})
  assert.is(seen.length, 1)
  assert.equal(readdirSync(uploads), [])
})

test('the upload folder is removed when the client goes away in the middle of its upload', async () => {
  const {head, type} = multipartParts('file', 'clip.mp4')
  let sent: ClientRequest | undefined
  const answer = rawRequest(`${server.base}/v1/moderate/video`, {headers: {'content-type': type, 'content-length': 300_000}}, (req) => {
    sent = req
    req.write(head)
    req.write(Buffer.alloc(10_000, 1))
  })
  answer.catch(() => {})
  await until(() => readdirSync(uploads).length === 1 && readdirSync(join(uploads, readdirSync(uploads)[0])).length === 1)
  sent?.destroy()
  await until(() => readdirSync(uploads).length === 0)
  assert.equal(seen, [])
})

test('a client that goes away during video moderation aborts it, and its folder is removed', async () => {
  let aborted = false
  let started = false
  videoBehaviour = (_path, o) =>
    new Promise((_resolve, reject) => {
      started = true
      o.signal?.addEventListener('abort', () => {
        aborted = true
        reject(new ModError('bad_request', 'cancelled'))
      })
    })
  const controller = new AbortController()
  const pending = fetch(`${server.base}/v1/moderate/video`, {method: 'POST', body: video(1000), signal: controller.signal})
  pending.catch(() => {})
  await until(() => started)
  controller.abort()
  await until(() => aborted && readdirSync(uploads).length === 0)
})

test('a file in an unexpected field is refused, and images never touch the upload folder', async () => {
  const r = await call(`${server.base}/v1/moderate`, {
    method: 'POST',
    body: form('image', [{name: 'a.png', data: 'xx'}]),
  })
  assert.equal(errorOf(r), {status: 400, code: 'bad_request'})
  const ok = await call(`${server.base}/v1/moderate/batch`, {method: 'POST', body: form('files', [{name: 'a.png', data: 'xx'}])})
  assert.is(ok.status, 200)
  assert.equal(readdirSync(uploads), [])
})

test('a part is a file with a filename or a Content-Type of its own; with neither it is a text value, refused', async () => {
  const boundary = 'modpartsboundary'
  const body = (headers: string) =>
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"${headers}\r\n\r\nxx\r\n--${boundary}--\r\n`)
  const send = (headers: string) =>
    call(`${server.base}/v1/moderate`, {method: 'POST', headers: {'content-type': `multipart/form-data; boundary=${boundary}`}, body: body(headers)})
  for (const headers of ['; filename="a.png"', '\r\nContent-Type: image/png']) assert.is((await send(headers)).status, 200, headers)
  const text = await send('')
  assert.equal(errorOf(text), {status: 400, code: 'bad_request'})
  assert.match(text.body.error.message, 'as a file (with a filename), not as a text value')
  // Beside files too: in a batch, results would lose their upload order from it on.
  const parts = (name: string) => `--${boundary}\r\nContent-Disposition: form-data; name="files"${name}\r\n\r\nxx\r\n`
  const batch = await call(`${server.base}/v1/moderate/batch`, {
    method: 'POST',
    headers: {'content-type': `multipart/form-data; boundary=${boundary}`},
    body: Buffer.from(`${parts('; filename="a.png"')}${parts('')}${parts('; filename="c.png"')}--${boundary}--\r\n`),
  })
  assert.equal(errorOf(batch), {status: 400, code: 'bad_request'})
  assert.is(batch.body.error.message, 'the multipart field "files" holds a text value among its files: send each one as a file (with a filename)')
})

test('a form two parsers could read apart is refused with 400: two Content-Type headers, a boundary given twice, a part header or a Content-Disposition parameter given twice', async () => {
  const part = (boundary: string, headers: string, data = 'xx') => `--${boundary}\r\n${headers}\r\n\r\n${data}\r\n`
  const file = (boundary: string, name = 'a.png') => part(boundary, `Content-Disposition: form-data; name="file"; filename="${name}"`)
  const refused = async (types: string[], body: string): Promise<string> => {
    // Node's client would join or refuse two Content-Type headers: the request is written as it stands.
    const socket = connect(Number(new URL(server.base).port), '127.0.0.1')
    const head = ['POST /v1/moderate HTTP/1.1', 'Host: 127.0.0.1', ...types.map((t) => `Content-Type: ${t}`), `Content-Length: ${Buffer.byteLength(body)}`, 'Connection: close']
    socket.end(`${head.join('\r\n')}\r\n\r\n${body}`)
    let answer = ''
    for await (const chunk of socket) answer += chunk
    assert.match(answer, /^HTTP\/1\.1 400 /, answer)
    return (JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)) as {error: {code: string; message: string}}).error.message
  }
  const twice = (what: string) => `the multipart/form-data request gives ${what} twice: parsers differ on which one counts, so send it once`
  // The boundary parameter, twice: Node reads the first, Werkzeug the last.
  assert.is(await refused(['multipart/form-data; boundary=XB; boundary=YY'], `${file('YY', 'b.png')}--YY--\r\n${file('XB')}--XB--\r\n`), twice('the Content-Type parameter "boundary"'))
  assert.is(await refused(['multipart/form-data; boundary=XB; BOUNDARY="YY"'], `${file('XB')}--XB--\r\n`), twice('the Content-Type parameter "boundary"'))
  assert.is(await refused(['multipart/form-data; boundary=XB', 'multipart/form-data; boundary=YY'], `${file('XB')}--XB--\r\n`), twice('the Content-Type header'))
  // A part with two Content-Disposition headers: a file to one parser, a text field to the other.
  const hidden = part('XB', 'Content-Disposition: form-data; name="file"; filename="b.png"\r\nContent-Disposition: form-data; name="note"')
  assert.is(await refused(['multipart/form-data; boundary=XB'], `${hidden}${file('XB')}--XB--\r\n`), twice("a part's content-disposition header"))
  const named = part('XB', 'Content-Disposition: form-data; name="file"; name="x"; filename="a.png"')
  assert.is(await refused(['multipart/form-data; boundary=XB'], `${named}--XB--\r\n`), twice('the Content-Disposition parameter "name" of a part'))
  // A semicolon inside a quoted file name is no parameter: the form is taken.
  const quoted = await call(`${server.base}/v1/moderate`, {method: 'POST', headers: {'content-type': 'multipart/form-data; boundary=XB'}, body: Buffer.from(`${file('XB', 'a; name=b.png')}--XB--\r\n`)})
  assert.is(quoted.status, 200)
})

test('Expect: 100-continue gets its 100 only once the body is wanted: a request refused before is answered, its body never sent', async () => {
  const parts = multipartParts('file', 'a.png')
  const small = Buffer.concat([parts.head, Buffer.from('xx'), parts.tail])
  /** The answer, and whether the server asked for the body (100 Continue) before it. */
  const send = async (path: string, length: number) => {
    let continued = false
    const answer = await rawRequest(`${server.base}${path}`, {headers: {'content-type': parts.type, 'content-length': length, expect: '100-continue'}}, (req) => {
      req.on('continue', () => {
        continued = true
        req.end(small)
      })
      req.flushHeaders()
    })
    return {status: answer.status, continued}
  }
  assert.equal(await send('/v1/moderate', 1024 * 1024), {status: 413, continued: false})
  assert.equal(await send('/v1/nowhere', small.length), {status: 404, continued: false})
  assert.equal(await send('/v1/moderate', small.length), {status: 200, continued: true})
})

test.run()
