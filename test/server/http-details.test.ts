import {connect as connectHttp2, constants as http2Constants} from 'node:http2'
import {connect} from 'node:net'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {fakeEngine, rawError, rawRequest, start, tempDir, testSettings, type Running} from './harness.js'

const dir = tempDir('mod-server-http-details-')
let server: Running

test.before(async () => {
  server = await start(fakeEngine(), testSettings(join(dir.path, 'cache')), {tmpDir: dir.path})
})

test.after(async () => {
  await server.stop()
  dir.remove()
})

test('HEAD on /openapi.json, /docs and a /docs/ file answers as GET without the body', async () => {
  for (const path of ['/openapi.json', '/docs', '/docs/swagger-ui.css']) {
    const [get, head] = await Promise.all([fetch(`${server.base}${path}`), fetch(`${server.base}${path}`, {method: 'HEAD'})])
    assert.is(head.status, 200, path)
    assert.is(head.headers.get('content-type'), get.headers.get('content-type'), path)
    assert.is(await head.text(), '', path)
    assert.ok((await get.text()).length > 0, path)
  }
  const missing = await fetch(`${server.base}/docs/nothing-here.js`, {method: 'HEAD'})
  assert.is(missing.status, 404)
  const wrong = await fetch(`${server.base}/docs/init.js`, {method: 'POST'})
  assert.equal([wrong.status, wrong.headers.get('allow')], [405, 'GET, HEAD'])
})

/** A multipart body whose file parts carry a filename and no Content-Type of their own. */
function untyped(field: string, names: string[]): {body: string; type: string} {
  const parts = names.map((name) => `--b0undary\r\nContent-Disposition: form-data; name="${field}"; filename="${name}"\r\n\r\nbytes of ${name}\r\n`)
  return {body: `${parts.join('')}--b0undary--\r\n`, type: 'multipart/form-data; boundary=b0undary'}
}

test('a file part without its own Content-Type is a file (RFC 7578), its content left to the decoder', async () => {
  const one = untyped('file', ['photo.jpg'])
  const r = await fetch(`${server.base}/v1/moderate`, {method: 'POST', headers: {'content-type': one.type}, body: one.body})
  assert.equal([r.status, (await r.json()).source], [200, 'photo.jpg'])
  const two = untyped('files', ['a.png', 'b.png'])
  const batch = await fetch(`${server.base}/v1/moderate/batch`, {method: 'POST', headers: {'content-type': two.type}, body: two.body})
  assert.equal((await batch.json()).results.map((x: {source: string}) => x.source), ['a.png', 'b.png'])
  const video = untyped('file', ['clip.mp4'])
  const v = await fetch(`${server.base}/v1/moderate/video`, {method: 'POST', headers: {'content-type': video.type}, body: video.body})
  assert.equal([v.status, (await v.json()).source], [200, 'clip.mp4'])
})

test('headers over the limit get 431 with the JSON error body, and the connection is closed', async () => {
  const answer = await rawRequest(`${server.base}/health`, {method: 'GET', headers: {'x-padding': 'p'.repeat(20 * 1024)}}, (req) => req.end())
  assert.is(answer.status, 431)
  assert.is(answer.headers['content-type'], 'application/json; charset=utf-8')
  assert.is(answer.headers.connection, 'close')
  assert.equal(rawError(answer), {
    error: {code: 'headers_too_large', message: 'the request headers are larger than the server accepts (16 KiB)'},
  })
})

test('a request that is not HTTP gets 400 with the JSON error body', async () => {
  const {port} = new URL(server.base)
  const text = await new Promise<string>((resolve, reject) => {
    let got = ''
    const socket = connect(Number(port), '127.0.0.1', () => socket.write('NOT HTTP AT ALL\r\n\r\n'))
    socket.on('data', (d) => (got += d.toString()))
    socket.on('end', () => resolve(got))
    socket.on('error', reject)
  })
  assert.match(text, /^HTTP\/1\.1 400 Bad Request\r\n/)
  const id = /\r\nX-Request-Id: ([\w-]+)\r\n/.exec(text)?.[1]
  assert.ok(id)
  assert.match(text, new RegExp(`\\r\\n\\r\\n\\{"error":\\{"code":"bad_request","message":"the request is not valid HTTP","request_id":"${id}"\\}\\}$`))
})

/** What the server answers to `request`, written as it is on a connection of its own, to the server's closing it. */
function onSocket(request: string): Promise<string> {
  const {port} = new URL(server.base)
  return new Promise<string>((resolve, reject) => {
    let got = ''
    const socket = connect(Number(port), '127.0.0.1', () => socket.write(request))
    socket.on('data', (d) => (got += d.toString()))
    socket.on('end', () => resolve(got))
    socket.on('error', reject)
  })
}

test('an HTTP/1.1 request without a Host header, or with two, is 400 with the JSON error body; HTTP/1.0 needs none', async () => {
  for (const [hosts, request] of [
    [0, 'GET /health HTTP/1.1\r\nConnection: close\r\n\r\n'],
    [2, 'GET /health HTTP/1.1\r\nHost: a\r\nHost: b\r\nConnection: close\r\n\r\n'],
  ] as const) {
    const text = await onSocket(request)
    assert.match(text, /^HTTP\/1\.1 400 Bad Request\r\n/, String(hosts))
    assert.match(text, /\r\nX-Request-Id: [\w-]+\r\n/)
    assert.match(text, `{"error":{"code":"bad_request","message":"an HTTP/1.1 request has one Host header; this one has ${hosts}"`)
  }
  assert.match(await onSocket('GET /health HTTP/1.0\r\n\r\n'), /^HTTP\/1\.1 200 OK\r\n/)
})

test('a request pipelined behind a valid one that does not parse is answered after it: the valid answer first, then a 400 of its own id', async () => {
  const text = await onSocket('GET /health HTTP/1.1\r\nHost: x\r\nX-Request-Id: valid-1\r\n\r\nNOT HTTP AT ALL\r\n\r\n')
  const answers = text.split(/(?=HTTP\/1\.1 )/)
  assert.is(answers.length, 2, text)
  assert.match(answers[0], /^HTTP\/1\.1 200 OK\r\n(?:[\s\S]*\r\n)?X-Request-Id: valid-1\r\n/)
  assert.match(answers[1], /^HTTP\/1\.1 400 Bad Request\r\n/)
  const id = /\r\nX-Request-Id: ([\w-]+)\r\n/.exec(answers[1])?.[1]
  assert.ok(id && id !== 'valid-1', String(id))
  assert.match(answers[1], `{"error":{"code":"bad_request","message":"the request is not valid HTTP","request_id":"${id}"}}`)
})

test('every valid request pipelined before one that does not parse is answered, in order, then the 400, then the connection closes', async () => {
  const get = (path: string, i: number) => `GET ${path} HTTP/1.1\r\nHost: x\r\nX-Request-Id: pipe-${i}\r\n\r\n`
  const text = await onSocket(get('/health', 1) + get('/v1/categories', 2) + get('/ready', 3) + get('/health', 4) + 'GARBAGE\r\n\r\n')
  const answers = text.split(/(?=HTTP\/1\.1 )/)
  assert.equal(
    answers.map((a) => [a.split('\r\n')[0], /\r\nX-Request-Id: ([\w-]+)\r\n/.exec(a)?.[1]]),
    [
      ['HTTP/1.1 200 OK', 'pipe-1'],
      ['HTTP/1.1 200 OK', 'pipe-2'],
      ['HTTP/1.1 200 OK', 'pipe-3'],
      ['HTTP/1.1 200 OK', 'pipe-4'],
      ['HTTP/1.1 400 Bad Request', answers[4] && /\r\nX-Request-Id: ([\w-]+)\r\n/.exec(answers[4])?.[1]],
    ],
    text,
  )
  assert.match(answers[4], /"code":"bad_request","message":"the request is not valid HTTP"/)
})

test('an HTTP/2 client with prior knowledge is refused in HTTP/2: GOAWAY with HTTP_1_1_REQUIRED, which it reports by name; HTTP/1.1 goes on', async () => {
  const session = connectHttp2(server.base)
  const goaway = new Promise<{code: number; last: number; data: string} | string>((resolve) => {
    session.once('goaway', (code, last, data) => resolve({code, last, data: data?.toString() ?? ''}))
    setTimeout(() => resolve('no GOAWAY within 5 s'), 5000).unref()
  })
  const request = session.request({':path': '/health'})
  const failed = new Promise<string>((resolve) => {
    request.on('response', () => resolve('answered'))
    request.on('error', (e: NodeJS.ErrnoException) => resolve(String(e.code)))
    request.on('close', () => resolve('closed'))
  })
  session.on('error', () => {})
  request.end()
  assert.equal(await goaway, {code: http2Constants.NGHTTP2_HTTP_1_1_REQUIRED, last: 0, data: 'this server speaks HTTP/1.1 only'})
  assert.is.not(await failed, 'answered')
  session.destroy()
  assert.is((await fetch(`${server.base}/health`)).status, 200)
})

test.run()
