// What an operator reads: one JSON access line per request, X-Request-Id on every answer and in error
// bodies, and GET /metrics in Prometheus text (one process here; workers.test.ts sums a cluster).
import {randomUUID} from 'node:crypto'
import {readFileSync} from 'node:fs'
import {connect} from 'node:net'
import {Writable} from 'node:stream'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {buildPolicy} from '../../src/lib/config/policy.js'
import {createEngine} from '../../src/lib/engine.js'
import {createLogger, logTo, prettyDestination} from '../../src/server/logger.js'
import {createServerMetrics} from '../../src/server/metrics.js'
import {withoutSpecialist} from '../helpers/signals.js'
import {blue, call, fakeEngine, form, multipartParts, red, start, tempDir, testSettings, TOY_MODEL, until, type Running} from './harness.js'

const KEY = 'ops-key'
const dir = tempDir('mod-server-observability-')
const settings = testSettings(join(dir.path, 'cache'), {apiKey: KEY})
const metrics = createServerMetrics()
const engine = createEngine({
  preset: 'fast',
  modelDir: TOY_MODEL,
  cacheDir: settings.cacheDir,
  policy: buildPolicy({categories: [{name: 'redness', prompts: ['red']}]}),
  limits: settings.limits,
  observer: metrics.engine,
  signals: withoutSpecialist(),
})
const records: Record<string, unknown>[] = []
const logger = createLogger({
  level: 'info',
  base: {worker: 0},
  destination: new Writable({
    write(chunk, _encoding, done) {
      records.push(JSON.parse(String(chunk)))
      done()
    },
  }),
})
let server: Running

test.before(async () => {
  server = await start(engine, settings, {logger, metrics})
})

test.after(async () => {
  await server.stop()
  await engine.close()
  dir.remove()
})

const key = {'x-api-key': KEY}
const accessLine = (id: string) => records.find((r) => r.msg === 'request' && r.request_id === id)

test('every request gets one JSON access line with its method, path, status, bytes, duration and id', async () => {
  const res = await fetch(`${server.base}/health?probe=1`, {headers: {'x-request-id': 'lb-check-1'}})
  const text = await res.text()
  await until(() => accessLine('lb-check-1') !== undefined)
  const line = accessLine('lb-check-1') as Record<string, unknown>
  assert.equal(
    {...line, time: typeof line.time, duration_ms: typeof line.duration_ms},
    {
      level: 'info',
      time: 'string',
      pid: process.pid,
      worker: 0,
      method: 'GET',
      path: '/health',
      status: 200,
      bytes: Buffer.byteLength(text),
      duration_ms: 'number',
      request_id: 'lb-check-1',
      msg: 'request',
    },
  )
})

test("an answer written as it goes (a job's NDJSON results, no Content-Length) logs the bytes it sent", async () => {
  const accepted = await call(`${server.base}/v1/jobs/images`, {method: 'POST', headers: key, body: form('files', [{name: 'r.png', data: await red()}, {name: 'b.png', data: await blue()}])})
  assert.is(accepted.status, 202)
  const end = Date.now() + 30_000
  while ((await call(`${server.base}/v1/jobs/${accepted.body.id}`, {headers: key})).body.status !== 'done') {
    assert.ok(Date.now() < end, 'the job did not end in 30 s')
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  const res = await fetch(`${server.base}/v1/jobs/${accepted.body.id}/results`, {headers: {...key, 'x-request-id': 'results-1'}})
  assert.is(res.headers.get('content-length'), null)
  const text = await res.text()
  assert.equal(text.trim().split('\n').length, 2)
  await until(() => accessLine('results-1') !== undefined)
  assert.is(accessLine('results-1')?.bytes, Buffer.byteLength(text))
})

test('X-Request-Id: a sane one is echoed, a missing or odd one is replaced by a UUID', async () => {
  const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/
  assert.is((await fetch(`${server.base}/health`, {headers: {'x-request-id': 'abc-123.x:y'}})).headers.get('x-request-id'), 'abc-123.x:y')
  assert.match((await fetch(`${server.base}/health`)).headers.get('x-request-id') ?? '', uuid)
  for (const odd of ['has space', 'x'.repeat(129), 'quote"d']) {
    assert.match((await fetch(`${server.base}/health`, {headers: {'x-request-id': odd}})).headers.get('x-request-id') ?? '', uuid, odd)
  }
})

test('an error body carries the request id of its answer', async () => {
  const r = await fetch(`${server.base}/v1/categories`, {headers: {'x-request-id': 'trace-7'}})
  assert.equal([r.status, r.headers.get('x-request-id'), await r.json()], [
    401,
    'trace-7',
    {error: {code: 'unauthorized', message: 'this server needs an API key: send it in the X-API-Key header', request_id: 'trace-7'}},
  ])
  const missing = await fetch(`${server.base}/v2/nothing`, {headers: key})
  const id = missing.headers.get('x-request-id')
  assert.ok(id)
  assert.is(((await missing.json()) as {error: {request_id: string}}).error.request_id, id)
})

test('an internal error is logged as one structured record with the request id and the stack, as mod serve logs it', async () => {
  const failing = fakeEngine({
    isLoaded: () => true,
    categories: async () => {
      throw new TypeError('cannot read the head file')
    },
  })
  const s = await start(failing, settings, {logger, log: logTo(logger)})
  try {
    const r = await call(`${s.base}/v1/categories`, {headers: {...key, 'x-request-id': 'report-500'}})
    assert.equal([r.status, r.body], [500, {error: {code: 'internal', message: 'internal error'}}])
    const record = records.find((line) => line.msg === 'internal error' && line.request_id === 'report-500') as Record<string, any>
    assert.equal([record.level, record.worker, record.err.type, record.err.message], ['error', 0, 'TypeError', 'cannot read the head file'])
    assert.ok(String(record.err.stack).startsWith('TypeError: cannot read the head file\n    at '), record.err.stack)
  } finally {
    await s.stop()
  }
})

test("the terminal form of the log prints an error record's stack under its line", () => {
  const lines: string[] = []
  const pretty = createLogger({level: 'info', destination: prettyDestination((text) => lines.push(text))})
  const err = new Error('broken')
  logTo(pretty)('internal error', 'error', {err, request_id: 'r-1'})
  assert.equal(lines.length, 1)
  assert.match(lines[0], /^\d\d:\d\d:\d\d ERROR internal error request_id=r-1\nError: broken\n    at /)
})

test('GET /metrics needs the key and counts requests by route pattern, inference batches and the model load', async () => {
  assert.is((await call(`${server.base}/metrics`)).status, 401)
  const image = form('file', [{name: 'red.png', data: await red()}])
  assert.is((await call(`${server.base}/v1/moderate`, {method: 'POST', headers: key, body: image})).status, 200)
  await fetch(`${server.base}/docs/not-here.js`, {headers: key})
  // A path with a parameter is counted under its template, not as unmatched.
  assert.is((await call(`${server.base}/v1/jobs/${randomUUID()}`, {headers: key})).status, 404)
  const r = await call(`${server.base}/metrics`, {headers: key})
  assert.is(r.status, 200)
  assert.is(r.headers.get('content-type'), 'text/plain; version=0.0.4; charset=utf-8')
  const sample = (name: string) => {
    const line = (r.body as string).split('\n').find((l) => l.startsWith(`${name} `))
    return line === undefined ? undefined : Number(line.slice(name.length + 1))
  }
  assert.is(sample('mod_http_requests_total{method="POST",route="/v1/moderate",status="200"}'), 1)
  assert.is(sample('mod_http_requests_total{method="GET",route="/metrics",status="401"}'), 1)
  assert.is(sample('mod_http_requests_total{method="GET",route="/docs/*",status="404"}'), 1)
  assert.is(sample('mod_http_requests_total{method="GET",route="/v1/jobs/{id}",status="404"}'), 1)
  assert.is(sample('mod_http_request_duration_seconds_count{method="POST",route="/v1/moderate",status="200"}'), 1)
  assert.is(sample('mod_queue_depth'), 0)
  assert.ok((sample('mod_inference_batch_size_count') ?? 0) >= 1)
  assert.is(sample('mod_inference_batch_size_count'), sample('mod_inference_duration_seconds_count'))
  assert.ok((sample('mod_model_load_seconds') ?? 0) > 0)
})

test('GET /metrics counts verdicts (safe or unsafe, violations per category) and error answers per code, beside build info and the process defaults', async () => {
  const own = createServerMetrics()
  const s = await start(engine, settings, {metrics: own})
  try {
    const moderate = async (name: string, data: Buffer) =>
      (await call(`${s.base}/v1/moderate`, {method: 'POST', headers: key, body: form('file', [{name, data}])})).status
    assert.equal([await moderate('red.png', await red()), await moderate('blue.png', await blue())], [200, 200])
    const batch = form('files', [
      {name: 'a.png', data: await red()},
      {name: 'notes.txt', data: 'not an image'},
    ])
    assert.is((await call(`${s.base}/v1/moderate/batch`, {method: 'POST', headers: key, body: batch})).status, 200)
    assert.is((await call(`${s.base}/v1/categories`)).status, 401)
    assert.is((await call(`${s.base}/v1/jobs/${randomUUID()}`, {headers: key})).status, 404)
    assert.is((await call(`${s.base}/v1/jobs/${randomUUID()}`, {headers: key})).status, 404)
    const text = (await call(`${s.base}/metrics`, {headers: key})).body as string
    const lines = text.split('\n')
    const sample = (name: string) => lines.find((l) => l.startsWith(`${name} `))?.slice(name.length + 1)
    assert.equal(
      ['safe', 'unsafe'].map((v) => sample(`mod_results_total{verdict="${v}"}`)),
      ['1', '2'],
    )
    assert.is(sample('mod_violations_total{category="redness"}'), '2')
    assert.equal(lines.filter((l) => l.startsWith('mod_errors_total{')), ['mod_errors_total{code="unauthorized"} 1', 'mod_errors_total{code="not_found"} 2'])
    const {version} = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {version: string}
    const onnxruntime = (JSON.parse(readFileSync(new URL('../../node_modules/onnxruntime-node/package.json', import.meta.url), 'utf8')) as {version: string}).version
    assert.is(sample(`mod_build_info{version="${version}",node="${process.versions.node}",onnxruntime="${onnxruntime}"}`), '1')
    for (const name of ['process_cpu_user_seconds_total', 'process_resident_memory_bytes', 'nodejs_heap_size_used_bytes', 'nodejs_eventloop_lag_seconds']) {
      assert.ok(Number(sample(name)) > 0 || sample(name) === '0', name)
    }
  } finally {
    await s.stop()
  }
})

/** Sends `text` on a new connection and resolves with every byte answered until the server closes it. */
function exchange(base: string, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let got = ''
    const socket = connect(Number(new URL(base).port), '127.0.0.1', () => socket.write(text))
    socket.on('data', (d) => (got += d.toString()))
    socket.on('end', () => resolve(got))
    socket.on('error', reject)
  })
}

test('a request Node cannot parse (headers over 16 KiB, not HTTP) has its access line and is counted, without its headers', async () => {
  const own = createServerMetrics()
  const s = await start(engine, settings, {metrics: own, logger})
  try {
    const padding = 'secret-'.repeat(3000)
    const tooLarge = await exchange(s.base, `GET /health?x=1 HTTP/1.1\r\nHost: a\r\nX-Padding: ${padding}\r\n\r\n`)
    const notHttp = await exchange(s.base, 'HELLO\r\n\r\n')
    const idOf = (answer: string) => /\r\nX-Request-Id: ([\w-]+)\r\n/.exec(answer)?.[1] ?? ''
    const bytesOf = (answer: string) => Buffer.byteLength(answer.slice(answer.indexOf('\r\n\r\n') + 4))
    assert.match(tooLarge, /^HTTP\/1\.1 431 /)
    assert.match(notHttp, /^HTTP\/1\.1 400 /)
    await until(() => accessLine(idOf(notHttp)) !== undefined)
    const line = (answer: string) => {
      const {time, pid, ...rest} = accessLine(idOf(answer)) as Record<string, unknown>
      return rest
    }
    assert.equal(line(tooLarge), {level: 'info', worker: 0, method: 'GET', path: '/health', status: 431, bytes: bytesOf(tooLarge), request_id: idOf(tooLarge), msg: 'request'})
    assert.equal(line(notHttp), {level: 'info', worker: 0, status: 400, bytes: bytesOf(notHttp), request_id: idOf(notHttp), msg: 'request'})
    assert.not.ok(JSON.stringify(records).includes('secret-'))
    const lines = ((await call(`${s.base}/metrics`, {headers: key})).body as string).split('\n')
    assert.equal(lines.filter((l) => l.startsWith('mod_errors_total{')), ['mod_errors_total{code="headers_too_large"} 1', 'mod_errors_total{code="bad_request"} 1'])
    assert.equal(lines.filter((l) => l.startsWith('mod_http_requests_total{') && l.includes('route="other"')), [
      'mod_http_requests_total{method="other",route="other",status="431"} 1',
      'mod_http_requests_total{method="other",route="other",status="400"} 1',
    ])
  } finally {
    await s.stop()
  }
})

test('a CONNECT has its access line (no path) and is counted as method_not_allowed', async () => {
  const own = createServerMetrics()
  const s = await start(engine, settings, {metrics: own, logger})
  try {
    const answer = await exchange(s.base, 'CONNECT 127.0.0.1:443 HTTP/1.1\r\nHost: 127.0.0.1:443\r\nX-Request-Id: tunnel-1\r\n\r\n')
    assert.match(answer, /^HTTP\/1\.1 405 /)
    await until(() => accessLine('tunnel-1') !== undefined)
    const {time, pid, bytes, ...line} = accessLine('tunnel-1') as Record<string, unknown>
    assert.equal(line, {level: 'info', worker: 0, method: 'CONNECT', status: 405, request_id: 'tunnel-1', msg: 'request'})
    const lines = ((await call(`${s.base}/metrics`, {headers: key})).body as string).split('\n')
    assert.ok(lines.includes('mod_errors_total{code="method_not_allowed"} 1'), lines.join('\n'))
    assert.ok(lines.includes('mod_http_requests_total{method="other",route="other",status="405"} 1'))
  } finally {
    await s.stop()
  }
})

test('a request that got no answer is logged and counted as 499; an answer written on the socket with its own status and code', async () => {
  const own = createServerMetrics()
  const s = await start(engine, settings, {metrics: own, logger})
  try {
    const head = (id: string, framing: string) =>
      `POST /v1/moderate/json HTTP/1.1\r\nHost: a\r\nX-API-Key: ${KEY}\r\nContent-Type: application/json\r\n${framing}\r\nX-Request-Id: ${id}\r\n\r\n`
    // Half a body, then the client resets the connection: the route waits for the rest, and nothing is answered.
    const upload = `POST /v1/moderate HTTP/1.1\r\nHost: a\r\nX-API-Key: ${KEY}\r\nContent-Type: multipart/form-data; boundary=b\r\nContent-Length: 1000\r\nX-Request-Id: gone-1\r\n\r\n--b\r\nContent-Disposition: form-data; name="file"; filename="a.png"\r\nContent-Type: image/png\r\n\r\nabc`
    const gone = connect(Number(new URL(s.base).port), '127.0.0.1', () => gone.write(upload))
    gone.on('error', () => {})
    await new Promise((done) => setTimeout(done, 100))
    gone.resetAndDestroy()
    // Half a body, then the client ends its side (a FIN, as a client that gives up usually closes): no answer either.
    const ended = connect(Number(new URL(s.base).port), '127.0.0.1', () => ended.write(upload.replace('gone-1', 'gone-2')))
    ended.on('error', () => {})
    await new Promise((done) => setTimeout(done, 100))
    ended.end()
    // A chunk extension over Node's limit breaks the parser in the body: the 413 is written on the socket.
    const chunked = await exchange(s.base, `${head('chunky-1', 'Transfer-Encoding: chunked')}1;${'x'.repeat(20 * 1024)}\r\n{\r\n`)
    assert.match(chunked, /^HTTP\/1\.1 413 /)
    await until(() => accessLine('gone-1') !== undefined && accessLine('gone-2') !== undefined && accessLine('chunky-1') !== undefined)
    const line = (id: string) => {
      const {time, pid, duration_ms, ...rest} = accessLine(id) as Record<string, unknown>
      return rest
    }
    const base = {level: 'info', worker: 0, method: 'POST', path: '/v1/moderate/json', msg: 'request'}
    assert.equal(line('gone-1'), {...base, path: '/v1/moderate', status: 499, bytes: 0, request_id: 'gone-1', aborted: true})
    assert.equal(line('gone-2'), {...base, path: '/v1/moderate', status: 499, bytes: 0, request_id: 'gone-2', aborted: true})
    const body = chunked.slice(chunked.indexOf('\r\n\r\n') + 4)
    assert.equal(line('chunky-1'), {...base, status: 413, bytes: Buffer.byteLength(body), request_id: 'chunky-1'})
    const lines = ((await call(`${s.base}/metrics`, {headers: key})).body as string).split('\n')
    assert.equal(lines.filter((l) => l.startsWith('mod_http_requests_total{') && l.includes('route="/v1/moderate/json"')), [
      'mod_http_requests_total{method="POST",route="/v1/moderate/json",status="413"} 1',
    ])
    assert.equal(lines.filter((l) => l.startsWith('mod_http_requests_total{') && l.includes('route="/v1/moderate"')), [
      'mod_http_requests_total{method="POST",route="/v1/moderate",status="499"} 2',
    ])
    assert.equal(lines.filter((l) => l.startsWith('mod_errors_total{')), ['mod_errors_total{code="payload_too_large"} 1'])
  } finally {
    await s.stop()
  }
})

test('a verdict whose client went away before its answer is not counted among the verdicts answered', async () => {
  const own = createServerMetrics()
  let entered = false
  let release = () => {}
  const scored = new Promise<void>((resolve) => (release = resolve))
  const slow = fakeEngine({
    moderateImage: async (_data, source) => {
      entered = true
      await scored
      return {source, is_safe: true, violations: [], labels: [], not_evaluated: []}
    },
  })
  const s = await start(slow, settings, {metrics: own, logger})
  try {
    const png = await red()
    const {head, tail, type} = multipartParts('file', 'left.png')
    const body = Buffer.concat([head, png, tail])
    const socket = connect(Number(new URL(s.base).port), '127.0.0.1', () =>
      socket.write(Buffer.concat([Buffer.from(`POST /v1/moderate HTTP/1.1\r\nHost: a\r\nX-API-Key: ${KEY}\r\nContent-Type: ${type}\r\nContent-Length: ${body.length}\r\nX-Request-Id: left-1\r\n\r\n`), body])),
    )
    socket.on('error', () => {})
    // The client hangs up while its image is being scored, and the scoring ends after the server saw it go.
    await until(() => entered)
    socket.resetAndDestroy()
    await until(() => accessLine('left-1') !== undefined)
    release()
    assert.is((await call(`${s.base}/v1/moderate`, {method: 'POST', headers: key, body: form('file', [{name: 'stayed.png', data: png}])})).status, 200)
    const lines = ((await call(`${s.base}/metrics`, {headers: key})).body as string).split('\n')
    assert.is((accessLine('left-1') as {status: number}).status, 499)
    assert.equal(lines.filter((l) => l.startsWith('mod_results_total{')), ['mod_results_total{verdict="safe"} 1'])
  } finally {
    await s.stop()
  }
})

test('on a terminal the lines are short text: time, level, message, then the other fields', () => {
  const out: string[] = []
  const pretty = createLogger({level: 'info', base: {worker: 2}, destination: prettyDestination((t) => out.push(t))})
  pretty.info({status: 200, path: '/health'}, 'request')
  pretty.debug('not shown at info')
  assert.is(out.length, 1)
  assert.match(out[0], /^\d\d:\d\d:\d\d INFO  request worker=2 status=200 path=\/health\n$/)
})

test.run()
