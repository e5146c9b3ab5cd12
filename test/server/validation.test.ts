// Requests are validated from the routes' schemas: the video query is coerced to typed values with its
// defaults, and the JSON body's problems are reported by field.
import {connect} from 'node:net'
import {join} from 'node:path'
import {gzipSync} from 'node:zlib'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import type {VideoOptions} from '../../src/lib/engine.js'
import {call, errorOf, fakeEngine, form, postJson, solidPng, start, tempDir, testSettings, type Running} from './harness.js'

const dir = tempDir('mod-server-validation-')
let seen: Omit<VideoOptions, 'signal' | 'source'> | undefined
const engine = fakeEngine({
  moderateVideo: async (_path, o) => {
    seen = {fps: o.fps, minFrames: o.minFrames, stopOnViolation: o.stopOnViolation}
    return {source: o.source, is_safe: true, duration: 1, fps: o.fps, frames_analyzed: 1, stopped_early: false, violations: [], not_evaluated: []}
  },
})
let server: Running

test.before(async () => {
  server = await start(engine, testSettings(join(dir.path, 'cache')), {tmpDir: dir.path})
})

test.after(async () => {
  await server.stop()
  dir.remove()
})

/** What image_base64 must be, as the refusals say. */
const BASE64 = 'base64 text (the standard alphabet, = only at the end; line breaks allowed) or a data: URI with ;base64,'

const video = (query: string) =>
  call(`${server.base}/v1/moderate/video${query}`, {method: 'POST', body: form('file', [{name: 'clip.mp4', data: 'frames'}])})

test('the video query reaches the engine as typed values, absent ones as their defaults', async () => {
  assert.is((await video('')).status, 200)
  assert.equal(seen, {fps: 1, minFrames: 1, stopOnViolation: false})
  assert.is((await video('?fps=0.5&min_frames=3&stop_on_violation=1')).status, 200)
  assert.equal(seen, {fps: 0.5, minFrames: 3, stopOnViolation: true})
  assert.is((await video('?fps=10&min_frames=1000&stop_on_violation=true')).status, 200)
  assert.equal(seen, {fps: 10, minFrames: 1000, stopOnViolation: true})
  assert.is((await video('?fps=0.01&stop_on_violation=0')).status, 200)
  assert.equal(seen, {fps: 0.01, minFrames: 1, stopOnViolation: false})
  // A parameter the route does not declare is refused: it would be answered as if applied.
  assert.is((await video('?fps=2&utm=a')).status, 400)
})

test('a bad query value is 400 bad_request naming the parameter and what it accepts', async () => {
  const cases: [string, string][] = [
    ['fps=0.0001', 'fps="0.0001" is not valid: expected a number from 0.01 to 10'],
    ['fps=0', 'fps="0" is not valid: expected a number from 0.01 to 10'],
    ['fps=11', 'fps="11" is not valid: expected a number from 0.01 to 10'],
    ['fps=abc', 'fps="abc" is not valid: expected a number from 0.01 to 10'],
    ['fps=', 'fps="" is not valid: expected a number from 0.01 to 10'],
    ['fps=Infinity', 'fps="Infinity" is not valid: expected a number from 0.01 to 10'],
    // Only plain decimal: not the other forms JavaScript's Number() reads.
    // A number Number() reads but spelt otherwise says how to write it.
    ...['0x1', '1e0', '+1', ' 1', '1 ', '.5', '1.', '-1'].map((text): [string, string] => [
      `fps=${encodeURIComponent(text)}`,
      `fps=${JSON.stringify(text)} is not valid: expected a number from 0.01 to 10, written in digits, with a point between digits (0.5)`,
    ]),
    ['fps=1_0', 'fps="1_0" is not valid: expected a number from 0.01 to 10'],
    ...['0x2', '2e0', '+2', ' 2', '2.0'].map((text): [string, string] => [
      `min_frames=${encodeURIComponent(text)}`,
      `min_frames=${JSON.stringify(text)} is not valid: expected a whole number from 1 to 1000, written in digits only`,
    ]),
    ['min_frames=9007199254740993', 'min_frames="9007199254740993" is not valid: expected a whole number from 1 to 1000'],
    ['min_frames=0', 'min_frames="0" is not valid: expected a whole number from 1 to 1000'],
    ['min_frames=1.5', 'min_frames="1.5" is not valid: expected a whole number from 1 to 1000'],
    ['stop_on_violation=maybe', 'stop_on_violation="maybe" is not valid: expected true, false, 1 or 0'],
    ['stop_on_violation=TRUE', 'stop_on_violation="TRUE" is not valid: expected true, false, 1 or 0'],
    ['fps=1&fps=2', 'the query gives fps more than once; give it once'],
    ['fps=1&min_frames=2&fps=1', 'the query gives fps more than once; give it once'],
  ]
  for (const [query, message] of cases) {
    seen = undefined
    const r = await video(`?${query}`)
    assert.equal(r.body, {error: {code: 'bad_request', message}}, query)
    assert.is(seen, undefined, query)
  }
})

test('the JSON body: a problem is reported by field, the "exactly one" rule as such', async () => {
  const cases: [unknown, string][] = [
    [{image_base64: 42}, 'image_base64 must be a string or null'],
    [{image_base64: ''}, 'image_base64 is an empty string'],
    [{image_base64: 'ab$d'}, `image_base64 is not valid: expected ${BASE64}`],
    [{image_base64: 'ab=c'}, `image_base64 is not valid: expected ${BASE64}`],
    [{url: ''}, 'url is an empty string'],
    [{url: 'not a uri'}, 'url is not valid: expected an absolute http(s) URL'],
    [{url: ['https://example.com/a.png']}, 'url must be a string or null'],
    [[1, 2], 'the body must be a JSON object'],
    [null, 'the body must be a JSON object'],
    [{}, 'send exactly one of image_base64 and url'],
    [{image_base64: null, url: null}, 'send exactly one of image_base64 and url'],
    [{image_base64: 'AAAA', url: 'https://example.com/a.png'}, 'send exactly one of image_base64 and url'],
  ]
  for (const [body, message] of cases) {
    const r = await postJson(`${server.base}/v1/moderate/json`, body)
    assert.equal(r.body, {error: {code: 'bad_request', message}}, JSON.stringify(body))
  }
})

test('a job manifest: the first problem is named by its path, in the words of the rule it breaks', async () => {
  const url = 'https://example.com/a.jpg'
  const cases: [unknown, string][] = [
    [{}, 'items is missing'],
    [{items: []}, 'items is an empty list: send from 1 to MOD_MAX_JOB_ITEMS items'],
    [{items: 'a'}, 'items must be a list'],
    [{items: [{id: 'a'}]}, 'items[0].url is missing'],
    [{items: [{url}, {url, x: 1}]}, 'items[1] has an unknown field "x"; its fields are url, id'],
    [{items: [{url, id: 'a'.repeat(5000)}]}, 'items[0].id is too long: at most 256 characters'],
    [{items: [{url: 5}]}, 'items[0].url must be a string'],
    [{items: [{url: ''}]}, 'items[0].url is an empty string'],
    [{items: [{url}], callback: 'x'}, 'the body has an unknown field "callback"; its fields are items'],
    [{items: [{url}], ['k'.repeat(100)]: 1}, `the body has an unknown field "${'k'.repeat(64)}…"; its fields are items`],
  ]
  for (const [body, message] of cases) {
    const r = await postJson(`${server.base}/v1/jobs/images`, body)
    assert.equal([r.status, r.body], [400, {error: {code: 'bad_request', message}}], JSON.stringify(body).slice(0, 80))
  }
})

test('image_base64 is checked strictly: an impossible length, padding that does not fit and base64url are 400 naming the field', async () => {
  const png = (await solidPng(255, 0, 0)).toString('base64')
  const length = (n: number) => `image_base64 is not valid: ${n} base64 characters cannot be whole bytes (base64 comes in groups of 4; a last group of 1 has a character too many or too few)`
  const padding = 'image_base64 is not valid: its = padding does not complete the last group of 4 characters'
  const cases: [string, string][] = [
    ['A', length(1)],
    [`${png}A`, length(png.length + 1)],
    ['AAAAA', length(5)],
    ['AAAA A\n', length(5)],
    ['AA=', padding],
    ['AAAA==', padding],
    ['AAA==', padding],
    ['==', padding],
    ['AA-_', `image_base64 is not valid: expected ${BASE64}`],
  ]
  for (const [image_base64, message] of cases) {
    const r = await postJson(`${server.base}/v1/moderate/json`, {image_base64})
    assert.equal([r.status, r.body], [400, {error: {code: 'bad_request', message}}], image_base64.slice(-8))
  }
  // What base64 can be: padded or not, wrapped in lines, in a data URI.
  const wrapped = png.replace(/.{76}/g, '$&\r\n')
  for (const image_base64 of [png, png.replace(/=+$/, ''), wrapped, `data:image/png;base64,${png}`, 'AA', 'AA==', 'AAA', 'AAA=']) {
    assert.is((await postJson(`${server.base}/v1/moderate/json`, {image_base64})).status, 200, image_base64.slice(0, 8))
  }
})

test('a JSON body is refused before it is read unless its content type is JSON (415)', async () => {
  const r = await call(`${server.base}/v1/moderate/json`, {method: 'POST', headers: {'content-type': 'text/plain'}, body: '{}'})
  assert.equal([r.status, r.body], [415, {error: {code: 'unsupported_media', message: 'send the request body as application/json'}}])
  assert.equal(errorOf(await postJson(`${server.base}/v1/moderate/json`, '{"url": ')), {status: 400, code: 'bad_request'})
})

test('a request body with a Content-Encoding other than identity is refused (415) before it is read: bodies are not decoded', async () => {
  const refusal = {
    error: {
      code: 'unsupported_media',
      message: 'the request body has a Content-Encoding other than identity, and request bodies are not decoded: send it uncompressed, without Content-Encoding',
    },
  }
  const json = JSON.stringify({image_base64: 'AAAA'})
  const gzipped = new Uint8Array(gzipSync(json))
  const bodies: [string, string | Uint8Array<ArrayBuffer>][] = [
    ['gzip', gzipped],
    ['gzip', json],
    ['br', json],
    ['identity, gzip', gzipped],
  ]
  for (const [encoding, body] of bodies) {
    const r = await call(`${server.base}/v1/moderate/json`, {method: 'POST', headers: {'content-type': 'application/json', 'content-encoding': encoding}, body})
    assert.equal([r.status, r.body], [415, refusal], encoding)
  }
  const upload = await call(`${server.base}/v1/moderate`, {method: 'POST', headers: {'content-encoding': 'deflate'}, body: form('file', [{name: 'a.png', data: 'x'}])})
  assert.equal([upload.status, upload.body], [415, refusal])
  // identity is no coding: the body is read as sent.
  const identity = await call(`${server.base}/v1/moderate/json`, {method: 'POST', headers: {'content-type': 'application/json', 'content-encoding': 'Identity'}, body: json})
  assert.is(identity.status, 200)
})

test('a transfer coding before chunked (gzip, chunked), which Node reads as chunked alone, is refused (415) too', async () => {
  const {port} = new URL(server.base)
  const json = JSON.stringify({image_base64: 'AAAA'})
  const request = (coding: string) =>
    `POST /v1/moderate/json HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: ${coding}\r\nConnection: close\r\n\r\n` +
    `${json.length.toString(16)}\r\n${json}\r\n0\r\n\r\n`
  const answer = (coding: string) =>
    new Promise<string>((resolve, reject) => {
      let got = ''
      const socket = connect(Number(port), '127.0.0.1', () => socket.write(request(coding)))
      socket.on('data', (d) => (got += d.toString()))
      socket.on('end', () => resolve(got))
      socket.on('error', reject)
    })
  const refused = await answer('gzip, chunked')
  assert.match(refused, /^HTTP\/1\.1 415 /)
  assert.match(refused, 'the request body has a Transfer-Encoding other than chunked, and request bodies are not decoded: send it uncompressed, with chunked alone')
  assert.match(await answer('chunked'), /^HTTP\/1\.1 200 /)
})

test.run()
