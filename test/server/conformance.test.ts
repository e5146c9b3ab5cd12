import {createServer, type Server} from 'node:http'
import type {AddressInfo} from 'node:net'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {DEFAULT_LIMITS} from '../../src/lib/config/settings.js'
import {openapiDocument} from '../../src/server/openapi.js'
import {assertConforms, createConformance} from './conformance.js'
import {signalStates} from '../helpers/signals.js'

/** Every signal of the registry, the CLIP model loaded and the others off, as /health writes them. */
const SIGNALS_JSON = JSON.stringify(signalStates({clip: 'loaded'}))

const doc = openapiDocument({version: '1.2.3', apiKey: false, allowUrls: false, limits: DEFAULT_LIMITS})
const JSON_TYPE = {'content-type': 'application/json; charset=utf-8'}
/** A verdict's headers: every 200 of a moderation route names its policy. */
const VERDICT = {...JSON_TYPE, 'x-mod-policy-sha256': 'a'.repeat(64)}

const result = {
  source: 'a.png',
  is_safe: true,
  violations: [],
  labels: [{name: 'gore', score: 0.1, threshold: 0.5, parent: 'violence', violated: false, origin: 'builtin'}],
  not_evaluated: [],
}

function rejects(fn: () => void, pattern: RegExp): void {
  try {
    fn()
  } catch (e) {
    assert.match(String(e), pattern)
    return
  }
  assert.unreachable(`expected an error matching ${pattern}`)
}

test('accepts a response that matches its operation, status and schema', () => {
  const c = createConformance(doc)
  c.check('POST', '/v1/moderate', 200, VERDICT, JSON.stringify(result))
  rejects(() => c.check('POST', '/v1/moderate', 200, JSON_TYPE, JSON.stringify(result)), /required header X-Mod-Policy-Sha256 is missing/)
  c.check('POST', '/v1/moderate/batch', 200, VERDICT, {
    results: [result, {source: 'b.txt', error: {code: 'unsupported_media', message: 'not an image'}}],
  })
  c.check('GET', '/health?verbose=1', 200, new Headers(JSON_TYPE), `{"status":"ok","version":"1.0.0","model_loaded":false,"signals":${SIGNALS_JSON},"coverage":{"evaluated":0,"total":0,"not_evaluated":[]},"categories":[]}`)
  assert.equal([...c.seen], ['POST /v1/moderate 200', 'POST /v1/moderate/batch 200', 'GET /health 200'])
})

test('rejects a field the schema does not list', () => {
  const c = createConformance(doc)
  rejects(
    () => c.check('POST', '/v1/moderate', 200, VERDICT, {...result, elapsed_ms: 3}),
    /must NOT have additional properties.*elapsed_ms/,
  )
})

test('rejects a missing required field and a wrong type', () => {
  const c = createConformance(doc)
  const {labels: _labels, ...noLabels} = result
  rejects(() => c.check('POST', '/v1/moderate', 200, VERDICT, noLabels), /must have required property 'labels'/)
  rejects(() => c.check('POST', '/v1/moderate', 200, VERDICT, {...result, is_safe: 'yes'}), /is_safe must be boolean/)
})

test('rejects a status the operation does not declare', () => {
  const c = createConformance(doc)
  const body = {error: {code: 'url_blocked', message: 'x', request_id: 'r-1'}}
  rejects(() => c.check('POST', '/v1/moderate', 422, JSON_TYPE, body), /status 422 is not declared/)
  assert.equal(c.seen.size, 0)
})

test('rejects an error code that belongs to another status', () => {
  const c = createConformance(doc)
  const body = {error: {code: 'too_many_files', message: 'x', request_id: 'r-1'}}
  rejects(() => c.check('POST', '/v1/moderate/json', 400, JSON_TYPE, body), /code must be equal to one of the allowed values/)
})

test('a batch error entry carries only per-file codes', () => {
  const c = createConformance(doc)
  const entry = {source: 'b', error: {code: 'overloaded', message: 'x'}}
  rejects(() => c.check('POST', '/v1/moderate/batch', 200, VERDICT, {results: [entry]}), /results\/0/)
})

test('requires Retry-After on 503 and checks it is a whole number of seconds', () => {
  const c = createConformance(doc)
  const body = {error: {code: 'overloaded', message: 'busy', request_id: 'r-1'}}
  rejects(() => c.check('POST', '/v1/moderate', 503, JSON_TYPE, body), /required header Retry-After is missing/)
  rejects(() => c.check('POST', '/v1/moderate', 503, {...JSON_TYPE, 'retry-after': 'soon'}, body), /header Retry-After/)
  c.check('POST', '/v1/moderate', 503, {...JSON_TYPE, 'Retry-After': '1'}, body)
})

test('rejects an undeclared content type and a body that is not JSON', () => {
  const c = createConformance(doc)
  rejects(() => c.check('GET', '/health', 200, {'content-type': 'text/plain'}, 'ok'), /Content-Type text\/plain is not declared/)
  rejects(() => c.check('GET', '/health', 200, {}, 'ok'), /Content-Type is missing/)
  rejects(() => c.check('GET', '/health', 200, JSON_TYPE, 'ok'), /not valid JSON/)
})

test('an unknown path may only be 404 not_found (or 401)', () => {
  const c = createConformance(doc)
  c.check('GET', '/v2/nothing', 404, JSON_TYPE, {error: {code: 'not_found', message: 'no such endpoint', request_id: 'r-1'}})
  c.check('GET', '/v2/nothing', 401, JSON_TYPE, {error: {code: 'unauthorized', message: 'key', request_id: 'r-1'}})
  rejects(() => c.check('GET', '/v2/nothing', 200, JSON_TYPE, {}), /not in the document/)
  rejects(
    () => c.check('GET', '/v2/nothing', 404, JSON_TYPE, {error: {code: 'bad_request', message: 'x', request_id: 'r-1'}}),
    /code not_found/,
  )
})

test('another method on a known path may only be 405 with an Allow header naming the documented one', () => {
  const c = createConformance(doc)
  const body = {error: {code: 'method_not_allowed', message: 'use POST', request_id: 'r-1'}}
  c.check('GET', '/v1/moderate', 405, {...JSON_TYPE, allow: 'POST'}, body)
  rejects(() => c.check('GET', '/v1/moderate', 405, {...JSON_TYPE, allow: 'GET'}, body), /Allow header "GET" lacks POST/)
  rejects(() => c.check('GET', '/v1/moderate', 404, JSON_TYPE, body), /no such operation/)
})

test('lists every declared response and which ones were not seen', () => {
  const c = createConformance(doc)
  assert.ok(c.declared.some((d) => d.method === 'post' && d.path === '/v1/moderate/json' && d.status === 504))
  const total = Object.values(doc.paths)
    .flatMap((item) => Object.values(item))
    .reduce((n, op) => n + Object.keys(op.responses).length, 0)
  assert.is(c.declared.length, total)
  c.check('GET', '/health', 200, JSON_TYPE, {status: 'ok', version: '1.0.0', model_loaded: true, signals: signalStates({clip: 'loaded'}), coverage: {evaluated: 0, total: 0, not_evaluated: []}, categories: []})
  assert.is(c.uncovered().length, total - 1)
  assert.not.ok(c.uncovered().some((d) => d.path === '/health' && d.status === 200))
})

test('checkSchema validates a value against a component schema', () => {
  const c = createConformance(doc)
  c.checkSchema('Segment', {start: 0, end: 1, frames: 1, max_confidence: 0.5})
  rejects(() => c.checkSchema('Segment', {start: 0, end: 1, frames: 0, max_confidence: 0.5}), /frames must be >= 1/)
  rejects(() => c.checkSchema('Nope', {}), /no component schema Nope/)
})

test('assertConforms checks a fetch Response and returns its parsed body', async () => {
  const server: Server = createServer((req, res) => {
    res.setHeader('Content-Type', 'application/json')
    res.end(req.url === '/health' ? `{"status":"ok","version":"1.0.0","model_loaded":true,"signals":${SIGNALS_JSON},"coverage":{"evaluated":0,"total":0,"not_evaluated":[]},"categories":[]}` : '{"status":"ok"}')
  })
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done))
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  try {
    const c = createConformance(doc)
    assert.equal(await assertConforms(c, await fetch(`${base}/health`)), {status: 'ok', version: '1.0.0', model_loaded: true, signals: signalStates({clip: 'loaded'}), coverage: {evaluated: 0, total: 0, not_evaluated: []}, categories: []})
    assert.ok(c.seen.has('GET /health 200'))
    const bad = await fetch(`${base}/health?x`)
    let message = ''
    await assertConforms(doc, bad).catch((e: unknown) => (message = String(e)))
    assert.match(message, /must have required property 'model_loaded'/)
    const text = await (await fetch(`${base}/health`)).text()
    const again = await fetch(`${base}/health`)
    await again.arrayBuffer()
    assert.equal(await assertConforms(doc, again, {body: text, method: 'GET'}), {status: 'ok', version: '1.0.0', model_loaded: true, signals: signalStates({clip: 'loaded'}), coverage: {evaluated: 0, total: 0, not_evaluated: []}, categories: []})
  } finally {
    server.close()
  }
})

test.run()
