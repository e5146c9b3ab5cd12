// Every error body carries request_id, the answer's X-Request-Id, and matches the Error schema: also the answers
// written outside the routes (the HTTP parser's refusals, unknown paths, the key check, limits, a stalled upload).
// Each request is written by hand on a socket to 127.0.0.1, so that malformed ones reach the server as sent.
import {connect} from 'node:net'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {conformance, fakeEngine, start, tempDir, testSettings, type Running} from './harness.js'

const KEY = 'error-bodies-key'
const dir = tempDir('mod-server-error-bodies-')
const settings = testSettings(join(dir.path, 'cache'), {apiKey: KEY, limits: {maxBytes: 1024, bodyTimeoutMs: 300}})
let server: Running

test.before(async () => {
  server = await start(fakeEngine(), settings, {tmpDir: dir.path})
})

test.after(async () => {
  await server.stop()
  dir.remove()
})

interface Answer {
  status: number
  headers: Record<string, string>
  body: string
}

/** Writes `chunks` on a new connection, one after another, and reads until the server closes it. */
function exchange(...chunks: string[]): Promise<Answer> {
  const {port} = new URL(server.base)
  return new Promise((resolve, reject) => {
    let got = ''
    const socket = connect(Number(port), '127.0.0.1', () => {
      for (const chunk of chunks) socket.write(chunk)
    })
    socket.setEncoding('utf8').on('data', (d: string) => (got += d))
    socket.on('error', reject)
    socket.on('close', () => {
      const [head, ...rest] = got.split('\r\n\r\n')
      const [statusLine, ...lines] = head.split('\r\n')
      const headers = Object.fromEntries(lines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]))
      resolve({status: Number(statusLine.split(' ')[1]), headers, body: rest.join('\r\n\r\n')})
    })
  })
}

/** A request head ending the connection after the answer; `headers` are written as given. */
const head = (line: string, headers: string[] = []) => [line, 'Host: 127.0.0.1', 'Connection: close', ...headers, '', ''].join('\r\n')

const withKey = `X-API-Key: ${KEY}`
const json = 'Content-Type: application/json'

/** The answer's error code, once its body is checked against the Error schema and its request_id against the header. */
function checkedCode(answer: Answer, what: string): string {
  assert.is(answer.headers['content-type'], 'application/json; charset=utf-8', what)
  const body = JSON.parse(answer.body) as {error: {code: string; request_id: string}}
  conformance.checkSchema('Error', body)
  assert.ok(answer.headers['x-request-id'], what)
  assert.is(body.error.request_id, answer.headers['x-request-id'], what)
  return body.error.code
}

const CASES: [string, string[], number, string][] = [
  ['not HTTP', ['NOT HTTP AT ALL\r\n\r\n'], 400, 'bad_request'],
  ['headers over the limit', [head('GET /health HTTP/1.1', [`X-Padding: ${'p'.repeat(20 * 1024)}`])], 431, 'headers_too_large'],
  [
    'chunk extensions over the limit',
    [head('POST /v1/moderate/json HTTP/1.1', [withKey, json, 'Transfer-Encoding: chunked']), `1;${'x'.repeat(20 * 1024)}\r\n{\r\n`],
    413,
    'payload_too_large',
  ],
  ['an unknown path', [head('GET /nowhere HTTP/1.1', [withKey])], 404, 'not_found'],
  ['no key', [head('GET /v1/categories HTTP/1.1')], 401, 'unauthorized'],
  ['a wrong key', [head('GET /v1/categories HTTP/1.1', ['X-API-Key: wrong'])], 401, 'unauthorized'],
  ['another method on a listed path', [head('PUT /v1/categories HTTP/1.1', [withKey, 'Content-Length: 0'])], 405, 'method_not_allowed'],
  ['a body announced over the limit', [head('POST /v1/moderate/json HTTP/1.1', [withKey, json, 'Content-Length: 100000'])], 413, 'payload_too_large'],
  ['another media type', [head('POST /v1/moderate/json HTTP/1.1', [withKey, 'Content-Type: text/plain', 'Content-Length: 2']), '{}'], 415, 'unsupported_media'],
  ['a body that is not JSON', [head('POST /v1/moderate/json HTTP/1.1', [withKey, json, 'Content-Length: 5']), '{nope'], 400, 'bad_request'],
  [
    'an upload that stops arriving',
    [head('POST /v1/moderate HTTP/1.1', [withKey, 'Content-Type: multipart/form-data; boundary=b', 'Content-Length: 500']), '--b\r\n'],
    408,
    'request_timeout',
  ],
  ['an Expect the server does not meet', [head('POST /v1/moderate/json HTTP/1.1', [withKey, json, 'Expect: bogus', 'Content-Length: 2']), '{}'], 417, 'expectation_failed'],
  ['an Expect without the key', [head('GET /v1/categories HTTP/1.1', ['Expect: bogus'])], 417, 'expectation_failed'],
  ['CONNECT', ['CONNECT 127.0.0.1:443 HTTP/1.1\r\nHost: 127.0.0.1:443\r\n\r\n'], 405, 'method_not_allowed'],
  ['a query value that does not fit', [head('POST /v1/moderate/video?fps=99 HTTP/1.1', [withKey, 'Content-Type: multipart/form-data; boundary=b', 'Content-Length: 0'])], 400, 'bad_request'],
]

for (const [what, chunks, status, code] of CASES) {
  test(`${what}: ${status} ${code}, the body with its request_id`, async () => {
    const answer = await exchange(...chunks)
    assert.is(answer.status, status, answer.body)
    assert.is(checkedCode(answer, what), code)
  })
}

test('CONNECT and an unmet Expect are answered in words, CONNECT with an empty Allow (the server is not a proxy)', async () => {
  const connect = await exchange('CONNECT 127.0.0.1:443 HTTP/1.1\r\nHost: 127.0.0.1:443\r\nX-Request-Id: trace-9\r\n\r\n')
  assert.equal([connect.headers.allow, connect.headers['x-request-id'], JSON.parse(connect.body)], [
    '',
    'trace-9',
    {error: {code: 'method_not_allowed', message: 'CONNECT is not allowed: this server is not a proxy', request_id: 'trace-9'}},
  ])
  const expect = await exchange(head('POST /v1/moderate/json HTTP/1.1', [withKey, json, 'Expect: bogus', 'Content-Length: 2', 'X-Request-Id: trace-10']), '{}')
  assert.equal(JSON.parse(expect.body), {
    error: {code: 'expectation_failed', message: 'the server meets no expectation but 100-continue: send the request without its Expect header', request_id: 'trace-10'},
  })
})

test("a body the parser refuses midway is answered with the request's own X-Request-Id", async () => {
  const answer = await exchange(head('POST /v1/moderate/json HTTP/1.1', [withKey, json, 'Transfer-Encoding: chunked', 'X-Request-Id: trace-41']), 'zz\r\n')
  assert.is(answer.status, 400)
  assert.is(checkedCode(answer, 'bad chunk'), 'bad_request')
  assert.is(answer.headers['x-request-id'], 'trace-41')
})

test.run()
