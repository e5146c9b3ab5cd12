// Every response the OpenAPI document declares is given by the server: each (method, path, status) is
// produced once here by a real request and checked against the document; a declared response that no
// request can produce fails the last test.
import {randomUUID} from 'node:crypto'
import {createServer, type Server} from 'node:http'
import type {AddressInfo} from 'node:net'
import {join} from 'node:path'
import {readFile} from 'node:fs/promises'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import type {Engine} from '../../src/lib/engine.js'
import {ModError} from '../../src/lib/errors.js'
import type {JobQueue} from '../../src/server/jobs/types.js'
import type {ImageJobQueue} from '../../src/server/jobs/images/types.js'
import {openapiDocument, type OpenApiDocument} from '../../src/server/openapi.js'
import {colourClip} from '../lib/video/helpers.js'
import {assertConforms, createConformance} from './conformance.js'
import {fakeEngine, form, multipartParts, rawRequest, red, start, tempDir, testSettings, toyEngine, type Running} from './harness.js'
import {warmCacheDir} from '../helpers/warm-cache.js'

const KEY = 'coverage-key'
const PUBLIC = '93.184.216.34'
const dir = tempDir('mod-server-coverage-')
const settings = testSettings(warmCacheDir(join(dir.path, 'cache')), {
  apiKey: KEY,
  allowUrls: true,
  // Long enough for a fetch from a busy machine: the 504 is asked of `hasty`, whose limit is short.
  limits: {maxBytes: 64 * 1024, maxBatch: 2, maxVideoBytes: 64 * 1024, maxVideoSeconds: 2, urlTimeoutMs: 10_000},
})
// Image jobs: a small byte limit, so that a body announced larger is refused before it is read.
settings.jobs = {...settings.jobs, images: {...settings.jobs.images, maxBytes: 128 * 1024, maxItems: 4}}
const doc = openapiDocument({version: '0.0.0', apiKey: true, allowUrls: true, limits: settings.limits})
const conformance = createConformance(doc)
const engine = toyEngine(settings)

let images: Server
let main: Running
let noUrls: Running
let failing: Running
let unloadable: Running
let brokenJobs: Running
let fullJobs: Running
let impatient: Running
let hasty: Running
let crowded: Running
let shortClip: Buffer
let longClip: Buffer
const slow = new Set<() => void>()

const boom = () => {
  throw new Error('unexpected failure')
}

/** Every engine call fails with an unexpected error: 500 internal. */
const failingEngine: Engine = fakeEngine({
  isLoaded: () => true,
  moderateImage: async () => boom(),
  async *moderateMany() {
    boom()
  },
  moderateVideo: async () => boom(),
  categories: async () => boom(),
})

/** A job queue whose every call fails with `fail`. */
function failingQueue(fail: () => never): JobQueue {
  return {
    checkRoom: async () => fail(),
    submit: async () => fail(),
    get: async () => fail(),
    remove: async () => fail(),
    work: () => {},
    stopping: () => {},
    reachable: () => false,
    close: async () => {},
  }
}

/** An image job queue whose every call fails with `fail`. */
function failingImageQueue(fail: () => never): ImageJobQueue {
  return {
    reserve: async () => fail(),
    submit: async () => fail(),
    get: async () => fail(),
    lines: async () => fail(),
    remove: async () => fail(),
    work: () => {},
    stopping: () => {},
    reachable: () => false,
    close: async () => {},
  }
}

/** The model never loads: 503 model_unavailable. */
const unloadableEngine: Engine = fakeEngine({
  load: async () => {
    throw new Error('no model here')
  },
})

test.before(async () => {
  const png = await red()
  images = createServer((req, res) => {
    if (req.url === '/red.png') res.writeHead(200, {'content-type': 'image/png'}).end(png)
    else if (req.url === '/slow.png') slow.add(() => res.end())
    else res.writeHead(404).end('missing')
  })
  await new Promise<void>((resolve) => images.listen(0, '127.0.0.1', resolve))
  const port = (images.address() as AddressInfo).port
  const fetchHooks = {
    resolve: async (host: string) => [host === 'intranet.example' ? '10.1.2.3' : PUBLIC],
    connect: () => ({host: '127.0.0.1', port}),
  }
  await engine.load()
  const options = {fetch: fetchHooks, tmpDir: dir.path}
  main = await start(engine, settings, options)
  noUrls = await start(engine, {...settings, allowUrls: false}, options)
  failing = await start(failingEngine, settings, {...options, metricsText: async () => boom()})
  unloadable = await start(unloadableEngine, settings, options)
  brokenJobs = await start(engine, settings, {...options, jobs: failingQueue(boom), imageJobs: failingImageQueue(boom)})
  const full = () => {
    throw new ModError('overloaded', 'the job queue is full')
  }
  fullJobs = await start(engine, settings, {...options, jobs: failingQueue(full), imageJobs: failingImageQueue(full)})
  impatient = await start(engine, {...settings, limits: {...settings.limits, bodyTimeoutMs: 150}}, options)
  hasty = await start(engine, {...settings, limits: {...settings.limits, urlTimeoutMs: 300}}, options)
  // This client (127.0.0.1) already holds its one upload place.
  crowded = await start(engine, {...settings, limits: {...settings.limits, maxUploadsPerClient: 1}}, options)
  crowded.handle.gate.receive({key: '127.0.0.1', network: '127.0.0.1'})
  shortClip = await readFile(await colourClip(join(dir.path, 'short.mp4'), ['blue'], 1))
  longClip = await readFile(await colourClip(join(dir.path, 'long.mp4'), ['blue'], 3))
})

test.after(async () => {
  for (const finish of slow) finish()
  await Promise.all([main.stop(), noUrls.stop(), failing.stop(), unloadable.stop(), brokenJobs.stop(), fullJobs.stop(), impatient.stop(), hasty.stop(), crowded.stop()])
  await new Promise((resolve) => images.close(resolve))
  await engine.close()
  dir.remove()
})

/** A request with the key (unless `key` is false), checked against the document; returns the status. */
async function send(base: string, method: string, path: string, init: RequestInit & {key?: boolean} = {}): Promise<number> {
  const {key = true, ...rest} = init
  const headers = {...(key ? {'x-api-key': KEY} : {}), ...(rest.headers as Record<string, string> | undefined)}
  const res = await fetch(`${base}${path}`, {...rest, method, headers})
  await assertConforms(conformance, res, {method})
  return res.status
}

/** A request whose body stops after its first bytes: 408 from the server with a 150 ms body timeout. */
async function stalled(path: string, contentType: string, start: string): Promise<number> {
  const answer = await rawRequest(
    `${impatient.base}${path}`,
    {headers: {'x-api-key': KEY, 'content-type': contentType, 'content-length': start.length + 1000}},
    (req) => req.write(start),
  )
  conformance.check('POST', path, answer.status, answer.headers, answer.body)
  return answer.status
}

/** The start of a multipart body with one file part in `field`. */
function stalledUpload(path: string, field: string): Promise<number> {
  const {head, type} = multipartParts(field, 'slow.bin')
  return stalled(path, type, head.toString('latin1'))
}

const upload = (field: string, files: {name: string; data: Buffer | string}[]) => ({body: form(field, files)})
const json = (value: unknown) => ({headers: {'content-type': 'application/json'}, body: JSON.stringify(value)})

/** The example the documentation page starts from for POST /v1/moderate/json. */
function jsonExample(d: OpenApiDocument): unknown {
  return d.paths['/v1/moderate/json']?.post?.requestBody?.content['application/json'].example
}

test('the service and policy endpoints', async () => {
  assert.is(await send(main.base, 'GET', '/health', {key: false}), 200)
  assert.is(await send(main.base, 'GET', '/v1/categories'), 200)
  assert.is(await send(main.base, 'GET', '/v1/categories', {key: false}), 401)
  assert.is(await send(failing.base, 'GET', '/v1/categories'), 500)
  assert.is(await send(main.base, 'GET', '/ready', {key: false}), 200)
  assert.is(await send(unloadable.base, 'GET', '/ready', {key: false}), 503)
  assert.is(await send(main.base, 'GET', '/metrics'), 200)
  assert.is(await send(main.base, 'GET', '/metrics', {key: false}), 401)
  assert.is(await send(failing.base, 'GET', '/metrics'), 500)
  for (const path of ['/openapi.json', '/docs']) {
    assert.is(await send(main.base, 'GET', path), 200, path)
    assert.is(await send(main.base, 'GET', path, {key: false}), 200, path)
  }
})

test('POST /v1/moderate', async () => {
  const image = [{name: 'red.png', data: await red()}]
  assert.is(await send(main.base, 'POST', '/v1/moderate', upload('file', image)), 200)
  assert.is(await send(main.base, 'POST', '/v1/moderate', upload('other', image)), 400)
  assert.is(await send(main.base, 'POST', '/v1/moderate', {...upload('file', image), key: false}), 401)
  assert.is(await stalledUpload('/v1/moderate', 'file'), 408)
  assert.is(await send(main.base, 'POST', '/v1/moderate', upload('file', [{name: 'big.png', data: Buffer.alloc(70_000, 1)}])), 413)
  assert.is(await send(main.base, 'POST', '/v1/moderate', upload('file', [{name: 'notes.txt', data: 'plain words'}])), 415)
  assert.is(await send(failing.base, 'POST', '/v1/moderate', upload('file', image)), 500)
  assert.is(await send(unloadable.base, 'POST', '/v1/moderate', upload('file', image)), 503)
})

test('POST /v1/moderate/batch', async () => {
  const image = {name: 'red.png', data: await red()}
  assert.is(await send(main.base, 'POST', '/v1/moderate/batch', upload('files', [image, {name: 'notes.txt', data: 'x'}])), 200)
  assert.is(await send(main.base, 'POST', '/v1/moderate/batch', upload('file', [image])), 400)
  assert.is(await send(main.base, 'POST', '/v1/moderate/batch', {...upload('files', [image]), key: false}), 401)
  assert.is(await stalledUpload('/v1/moderate/batch', 'files'), 408)
  assert.is(await send(main.base, 'POST', '/v1/moderate/batch', upload('files', [image, image, image])), 413)
  assert.is(await send(main.base, 'POST', '/v1/moderate/batch', json({image_base64: 'AAAA'})), 415)
  assert.is(await send(failing.base, 'POST', '/v1/moderate/batch', upload('files', [image])), 500)
  assert.is(await send(unloadable.base, 'POST', '/v1/moderate/batch', upload('files', [image])), 503)
})

test('POST /v1/moderate/json, the documentation example included', async () => {
  const example = jsonExample(doc)
  assert.is(await send(main.base, 'POST', '/v1/moderate/json', json(example)), 200)
  assert.is(await send(main.base, 'POST', '/v1/moderate/json', json({})), 400)
  assert.is(await send(main.base, 'POST', '/v1/moderate/json', {...json(example), key: false}), 401)
  assert.is(await send(noUrls.base, 'POST', '/v1/moderate/json', json({url: 'http://images.example/red.png'})), 403)
  assert.is(await stalled('/v1/moderate/json', 'application/json', '{"image_base64": "'), 408)
  const big = Buffer.alloc(70_000, 1).toString('base64')
  assert.is(await send(main.base, 'POST', '/v1/moderate/json', json({image_base64: big})), 413)
  const text = Buffer.from('plain words').toString('base64')
  assert.is(await send(main.base, 'POST', '/v1/moderate/json', json({image_base64: text})), 415)
  assert.is(await send(main.base, 'POST', '/v1/moderate/json', json({url: 'http://intranet.example/red.png'})), 422)
  assert.is(await send(failing.base, 'POST', '/v1/moderate/json', json(example)), 500)
  assert.is(await send(main.base, 'POST', '/v1/moderate/json', json({url: 'http://images.example/missing.png'})), 502)
  assert.is(await send(unloadable.base, 'POST', '/v1/moderate/json', json(example)), 503)
  assert.is(await send(hasty.base, 'POST', '/v1/moderate/json', json({url: 'http://images.example/slow.png'})), 504)
})

test('POST /v1/moderate/video', async () => {
  const clip = [{name: 'clip.mp4', data: shortClip}]
  assert.is(await send(main.base, 'POST', '/v1/moderate/video', upload('file', clip)), 200)
  assert.is(await send(main.base, 'POST', '/v1/moderate/video?fps=0.0001', upload('file', clip)), 400)
  assert.is(await send(main.base, 'POST', '/v1/moderate/video', {...upload('file', clip), key: false}), 401)
  assert.is(await stalledUpload('/v1/moderate/video', 'file'), 408)
  assert.is(await send(main.base, 'POST', '/v1/moderate/video', upload('file', [{name: 'big.mp4', data: Buffer.alloc(70_000, 1)}])), 413)
  assert.is(await send(main.base, 'POST', '/v1/moderate/video', upload('file', [{name: 'notes.mp4', data: 'plain words'}])), 415)
  assert.is(await send(main.base, 'POST', '/v1/moderate/video', upload('file', [{name: 'long.mp4', data: longClip}])), 422)
  assert.is(await send(failing.base, 'POST', '/v1/moderate/video', upload('file', clip)), 500)
  assert.is(await send(unloadable.base, 'POST', '/v1/moderate/video', upload('file', clip)), 503)
})

test('POST /v1/jobs/video, GET and DELETE /v1/jobs/{id}', async () => {
  const clip = [{name: 'clip.mp4', data: shortClip}]
  const submit = (base: string, query = '', init = {}) => send(base, 'POST', `/v1/jobs/video${query}`, {...upload('file', clip), ...init})
  const accepted = await fetch(`${main.base}/v1/jobs/video`, {method: 'POST', headers: {'x-api-key': KEY}, body: form('file', clip)})
  const id = ((await accepted.json()) as {id: string}).id
  assert.is(await submit(main.base), 202)
  assert.is(await submit(main.base, '?fps=0.0001'), 400)
  assert.is(await submit(main.base, '', {key: false}), 401)
  assert.is(await send(main.base, 'POST', '/v1/jobs/video', upload('file', [{name: 'big.mp4', data: Buffer.alloc(70_000, 1)}])), 413)
  assert.is(await send(main.base, 'POST', '/v1/jobs/video', upload('file', [{name: 'empty.mp4', data: Buffer.alloc(0)}])), 415)
  assert.is(await send(main.base, 'POST', '/v1/jobs/video', json({file: 'clip.mp4'})), 415)
  assert.is(await stalledUpload('/v1/jobs/video', 'file'), 408)
  assert.is(await submit(main.base, `?callback_url=${encodeURIComponent('http://10.1.2.3/hook')}`), 422)
  assert.is(await submit(brokenJobs.base), 500)
  assert.is(await submit(fullJobs.base), 503)
  for (const method of ['GET', 'DELETE']) {
    assert.is(await send(main.base, method, `/v1/jobs/${id}`), 200, method)
    assert.is(await send(main.base, method, `/v1/jobs/${id}`, {key: false}), 401, method)
    assert.is(await send(main.base, method, '/v1/jobs/not-a-uuid'), 400, method)
    assert.is(await send(main.base, method, `/v1/jobs/${randomUUID()}`), 404, method)
    assert.is(await send(brokenJobs.base, method, `/v1/jobs/${id}`), 500, method)
    assert.is(await send(fullJobs.base, method, `/v1/jobs/${id}`), 503, method)
  }
})

test('POST /v1/jobs/images and GET /v1/jobs/{id}/results', async () => {
  const image = {name: 'red.png', data: await red()}
  const manifest = json({items: [{url: 'http://images.example/red.png', id: 'a'}]})
  const accepted = await fetch(`${main.base}/v1/jobs/images`, {method: 'POST', headers: {'x-api-key': KEY}, body: form('files', [image])})
  const id = ((await accepted.json()) as {id: string}).id
  assert.is(await send(main.base, 'POST', '/v1/jobs/images', manifest), 202)
  assert.is(await send(main.base, 'POST', '/v1/jobs/images', json({items: []})), 400)
  assert.is(await send(main.base, 'POST', '/v1/jobs/images', {...manifest, key: false}), 401)
  assert.is(await send(noUrls.base, 'POST', '/v1/jobs/images', manifest), 403)
  assert.is(await stalledUpload('/v1/jobs/images', 'files'), 408)
  assert.is(await send(main.base, 'POST', '/v1/jobs/images', upload('files', [1, 2, 3, 4, 5].map((i) => ({name: `${i}.png`, data: 'x'})))), 413)
  assert.is(await send(main.base, 'POST', '/v1/jobs/images', {headers: {'content-type': 'text/plain'}, body: 'x'}), 415)
  assert.is(await send(main.base, 'POST', '/v1/jobs/images', json({items: [{url: 'http://10.1.2.3/red.png'}]})), 422)
  assert.is(await send(crowded.base, 'POST', '/v1/jobs/images', manifest), 429)
  assert.is(await send(brokenJobs.base, 'POST', '/v1/jobs/images', manifest), 500)
  assert.is(await send(fullJobs.base, 'POST', '/v1/jobs/images', manifest), 503)
  const results = `/v1/jobs/${id}/results`
  assert.is(await send(main.base, 'GET', results), 200)
  assert.is(await send(main.base, 'GET', `${results}?offset=x`), 400)
  assert.is(await send(main.base, 'GET', results, {key: false}), 401)
  assert.is(await send(main.base, 'GET', `/v1/jobs/${randomUUID()}/results`), 404)
  assert.is(await send(brokenJobs.base, 'GET', results), 500)
  assert.is(await send(fullJobs.base, 'GET', results), 503)
})

/** The message of an error example the document gives for (method, path, status). */
function exampleMessage(method: string, path: string, status: number): string | undefined {
  const operation = (doc.paths[path] as Record<string, {responses: Record<string, {content?: Record<string, {example?: {error?: {message?: string}}}>}>}>)[method.toLowerCase()]
  return operation.responses[String(status)]?.content?.['application/json']?.example?.error?.message
}

test("error examples are the route's own words: what the server answers to the request they describe", async () => {
  const exampleJob = '5f0c7a1e-8a7b-4a53-9a51-3f1f9d0e2c41'
  // A form with a text value and no file at all.
  const noFiles = new FormData()
  noFiles.append('note', 'x')
  const cases: [string, string, string, RequestInit & {base?: string}, number][] = [
    ['GET', '/v1/jobs/{id}', '/v1/jobs/x', {}, 400],
    ['GET', '/v1/jobs/{id}', `/v1/jobs/${exampleJob}`, {}, 404],
    ['DELETE', '/v1/jobs/{id}', `/v1/jobs/${exampleJob}`, {}, 404],
    ['GET', '/v1/jobs/{id}/results', '/v1/jobs/x/results', {}, 400],
    ['GET', '/v1/jobs/{id}/results', `/v1/jobs/${exampleJob}/results`, {}, 404],
    ['POST', '/v1/moderate/json', '/v1/moderate/json', json({}), 400],
    ['POST', '/v1/moderate/batch', '/v1/moderate/batch', {body: noFiles}, 400],
    ['POST', '/v1/jobs/images', '/v1/jobs/images', {...json({items: [{url: 'http://images.example/red.png'}]}), base: noUrls.base}, 403],
    ['POST', '/v1/moderate/video', '/v1/moderate/video', upload('file', [{name: 'big.mp4', data: Buffer.alloc(70_000, 1)}]), 413],
    ['POST', '/v1/jobs/video', '/v1/jobs/video', upload('file', [{name: 'big.mp4', data: Buffer.alloc(70_000, 1)}]), 413],
  ]
  for (const [method, path, url, {base = main.base, ...init}, status] of cases) {
    const res = await fetch(`${base}${url}`, {...init, method, headers: {'x-api-key': KEY, ...(init.headers as Record<string, string> | undefined)}})
    assert.is(res.status, status, `${method} ${url}`)
    const answer = ((await res.json()) as {error: {message: string}}).error.message
    assert.is(exampleMessage(method, path, status), answer, `${method} ${path} ${status}`)
  }
})

test('every upload endpoint: 429 past MOD_MAX_UPLOADS_PER_CLIENT', async () => {
  const image = [{name: 'red.png', data: await red()}]
  const clip = [{name: 'clip.mp4', data: shortClip}]
  assert.is(await send(crowded.base, 'POST', '/v1/moderate', upload('file', image)), 429)
  assert.is(await send(crowded.base, 'POST', '/v1/moderate/batch', upload('files', image)), 429)
  assert.is(await send(crowded.base, 'POST', '/v1/moderate/json', json(jsonExample(doc))), 429)
  assert.is(await send(crowded.base, 'POST', '/v1/moderate/video', upload('file', clip)), 429)
  assert.is(await send(crowded.base, 'POST', '/v1/jobs/video', upload('file', clip)), 429)
})

/** A request of the sweep below: anything a client may send, well-formed or not. */
interface Probe {
  method: string
  path: string
  headers?: Record<string, string | number>
  body?: string | Buffer
  /** Only the headers are sent (a body announced by Content-Length that never comes). */
  headersOnly?: boolean
}

/** Wording of the libraries under the server (ajv, formidable, ffmpeg) and raw byte counts: never in a message. */
const LIBRARY_WORDING = /must NOT|must match|must have required|options\.\w|MultipartParser|whitelist|moov atom|formidable|\d{5,} bytes|\[object /

const BOUNDARY = 'sweepboundary'

/** A multipart body of `parts`: a file part when it has a filename, else a text field. */
function multipart(parts: {field: string; filename?: string; data: string}[]): Probe['body'] {
  const text = parts
    .map(
      (p) =>
        `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${p.field}"${p.filename === undefined ? '' : `; filename="${p.filename}"`}\r\n` +
        `${p.filename === undefined ? '' : 'Content-Type: application/octet-stream\r\n'}\r\n${p.data}\r\n`,
    )
    .join('')
  return `${text}--${BOUNDARY}--\r\n`
}

const MULTIPART = `multipart/form-data; boundary=${BOUNDARY}`
const JSON_TYPE = 'application/json'

/** Bodies of every kind the routes read, and of kinds they do not. */
const BODIES: {headers?: Record<string, string | number>; body?: string | Buffer; headersOnly?: boolean}[] = [
  {},
  {headers: {'content-type': 'text/plain'}, body: 'hello'},
  ...['{', '[]', 'null', '{}', '"AAAA"'].map((body) => ({headers: {'content-type': JSON_TYPE}, body})),
  ...[
    {image_base64: ''},
    {image_base64: 'ab$d'},
    {image_base64: 'abc'},
    {image_base64: 'data:image/png;base64,'},
    {image_base64: 'AAAA'},
    {image_base64: 7},
    {url: ''},
    {url: 'not a url'},
    {url: 'ftp://images.example/red.png'},
    {url: 'http://intranet.example/red.png'},
    {url: 'http://images.example/missing.png'},
    {image_base64: 'AAAA', url: 'http://images.example/red.png'},
  ].map((value) => ({headers: {'content-type': JSON_TYPE}, body: JSON.stringify(value)})),
  ...[
    [],
    [{field: 'file', data: 'text, not a file'}],
    [{field: 'other', filename: 'a.png', data: 'x'}],
    [{field: 'file', filename: 'empty.bin', data: ''}],
    [{field: 'files', filename: 'empty.bin', data: ''}],
    [{field: 'file', filename: 'notes.txt', data: 'plain words'}],
    [{field: 'files', filename: 'notes.txt', data: 'plain words'}],
    [1, 2, 3].map((i) => ({field: 'file', filename: `${i}.txt`, data: 'x'})),
    [1, 2, 3].map((i) => ({field: 'files', filename: `${i}.txt`, data: 'x'})),
  ].map((parts) => ({headers: {'content-type': MULTIPART}, body: multipart(parts)})),
  {headers: {'content-type': MULTIPART}, body: `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="a"\r\n\r\nno closing boundary`},
  {headers: {'content-type': 'multipart/form-data'}, body: 'no boundary at all'},
  {headers: {'content-type': MULTIPART, 'content-length': 50 * 1024 * 1024}, headersOnly: true},
  {headers: {'content-type': JSON_TYPE, 'content-length': 50 * 1024 * 1024}, headersOnly: true},
]

const QUERIES = [
  'fps=1&fps=2',
  'fps=abc',
  'fps=Infinity',
  'min_frames=1.5',
  'stop_on_violation=maybe',
  'callback_url=not%20a%20url',
  'callback_url=ftp%3A%2F%2Fexample.com%2Fhook',
  'callback_url=http%3A%2F%2F10.1.2.3%2Fhook',
  'callback_url=http%3A%2F%2Fhooks.example%2Fa&callback_url=http%3A%2F%2Fhooks.example%2Fb',
  'unknown=1&unknown=2',
]

/** Every probe for one operation of the document: its path parameters spelled many ways, every body, every query. */
function probes(method: string, template: string): Probe[] {
  const paths = template.includes('{id}') ? [randomUUID(), 'not-a-uuid', '%00', 'x'.repeat(300), randomUUID().toUpperCase()].map((id) => template.replace('{id}', id)) : [template]
  const bodies = method === 'POST' ? BODIES : [{}]
  const withKey = (headers: Record<string, string | number> = {}) => ({'x-api-key': KEY, ...headers})
  return paths.flatMap((path) => [
    {method, path},
    {method, path, headers: {'x-api-key': 'wrong'}},
    {method: 'PUT', path, headers: withKey()},
    ...bodies.map((b) => ({method, path, ...b, headers: withKey(b.headers)})),
    ...QUERIES.map((q) => ({method, path: `${path}?${q}`, headers: withKey(method === 'POST' ? {'content-type': MULTIPART} : {}), ...(method === 'POST' ? {body: multipart([{field: 'file', filename: 'notes.txt', data: 'x'}])} : {})})),
  ])
}

test('no request answers a status, or a message, its operation does not declare (every operation, every kind of request)', async () => {
  const problems: string[] = []
  let sent = 0
  for (const [template, item] of Object.entries(doc.paths)) {
    for (const method of Object.keys(item).map((m) => m.toUpperCase())) {
      for (const probe of probes(method, template)) {
        const answer = await rawRequest(`${main.base}${probe.path}`, {method: probe.method, headers: probe.headers, timeoutMs: 15_000}, (req) =>
          probe.headersOnly ? req.flushHeaders() : req.end(probe.body),
        )
        sent++
        const what = `${probe.method} ${probe.path.slice(0, 80)} ${probe.headers?.['content-type'] ?? ''} ${String(probe.body ?? '').slice(0, 60)}`
        try {
          conformance.check(probe.method, probe.path, answer.status, answer.headers, answer.body)
        } catch (e) {
          problems.push(`${what}: ${(e as Error).message.split('\n')[0]}`)
          continue
        }
        if (answer.status >= 400) {
          const {message} = (JSON.parse(answer.body) as {error: {message: string}}).error
          if (LIBRARY_WORDING.test(message)) problems.push(`${what}: ${answer.status} "${message}" is not written for a person`)
        }
      }
    }
  }
  assert.equal(problems, [])
  assert.ok(sent > 400, `only ${sent} requests`)
})

test('every response the document declares was produced and conformed', () => {
  assert.equal(conformance.uncovered(), [])
})

test.run()
