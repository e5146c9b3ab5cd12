import {createServer, type ClientRequest, type Server} from 'node:http'
import type {AddressInfo} from 'node:net'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {dripPng, errorOf, multipartParts, postJson, rawError, rawRequest, red, start, tempDir, testSettings, toyEngine, until, type Running} from './harness.js'

// The route is tested against a local image server: host names resolve through a stub (public
// addresses for *.example, private ones for intranet.example), and every checked address is dialled
// at the local server, so nothing leaves 127.0.0.1 and the address rules still apply.
const PUBLIC = '93.184.216.34'
const dir = tempDir('mod-server-url-')
const settings = testSettings(join(dir.path, 'cache'), {allowUrls: true, limits: {maxBytes: 64 * 1024, urlTimeoutMs: 300}})
const engine = toyEngine(settings)
let images: Server
let imagesPort = 0
let server: Running
let disabled: Running
/** A server whose fetches may take 20 s: long enough that a fetch ending sooner was stopped. */
let patient: Running
/** Host names resolve to a public address (a private one for intranet.example), all dialled at the local server. */
let fetchHooks: NonNullable<Parameters<typeof start>[2]>['fetch']
const slowResponses = new Set<() => void>()
/** Resolves when a dripped response's connection closes, with the ms it stayed open. */
let dripClosed: Promise<number> = Promise.resolve(0)

test.before(async () => {
  const png = await red()
  images = createServer((req, res) => {
    if (req.url === '/red.png') res.writeHead(200, {'content-type': 'image/png'}).end(png)
    else if (req.url === '/big.png') res.writeHead(200, {'content-type': 'image/png'}).end(Buffer.alloc(128 * 1024))
    else if (req.url === '/to-intranet') res.writeHead(302, {location: 'http://intranet.example/red.png'}).end()
    else if (req.url === '/slow.png') slowResponses.add(() => res.end())
    else if (req.url === '/drip.png') dripClosed = dripPng(res)
    else res.writeHead(404).end('missing')
  })
  await new Promise<void>((resolve) => images.listen(0, '127.0.0.1', resolve))
  imagesPort = (images.address() as AddressInfo).port
  await engine.load()
  fetchHooks = {
    resolve: async (host: string) => [host === 'intranet.example' ? '10.1.2.3' : PUBLIC],
    connect: () => ({host: '127.0.0.1', port: imagesPort}),
  }
  server = await start(engine, settings, {fetch: fetchHooks})
  disabled = await start(engine, {...settings, allowUrls: false}, {fetch: fetchHooks})
  patient = await start(engine, {...settings, limits: {...settings.limits, urlTimeoutMs: 20_000}}, {fetch: fetchHooks})
})

test.after(async () => {
  for (const finish of slowResponses) finish()
  await Promise.all([server.stop(), disabled.stop(), patient.stop()])
  await new Promise((resolve) => images.close(resolve))
  await engine.close()
  dir.remove()
})

const moderateUrl = (base: string, url: string) => postJson(`${base}/v1/moderate/json`, {url})

test('a url is fetched and moderated when MOD_ALLOW_URLS is true; source is the URL', async () => {
  const r = await moderateUrl(server.base, 'http://images.example/red.png')
  assert.is(r.status, 200)
  assert.is(r.body.source, 'http://images.example/red.png')
  assert.equal(r.body.violations.map((v: {name: string}) => v.name), ['redness'])
})

test('a url with a host in another script is fetched (as browsers read URLs), one that is not a URL is 400', async () => {
  const r = await moderateUrl(server.base, 'http://bücher.example/red.png')
  assert.equal([r.status, r.body.source], [200, 'http://bücher.example/red.png'])
  assert.equal(r.body.violations.map((v: {name: string}) => v.name), ['redness'])
  const bad = await moderateUrl(server.base, 'not a url')
  assert.equal([bad.status, bad.body.error.message], [400, 'url is not valid: expected an absolute http(s) URL'])
  // Refused here, before any fetch: a remote server would refuse it too, as a failed fetch (502).
  const long = await moderateUrl(server.base, `http://images.example/red.png?${'a'.repeat(8192)}`)
  assert.equal([long.status, long.body.error.code], [400, 'bad_request'])
  assert.match(long.body.error.message, /url.*8192/)
})

test('403 url_fetch_disabled: a url while MOD_ALLOW_URLS is false', async () => {
  const r = await moderateUrl(disabled.base, 'http://images.example/red.png')
  assert.equal(errorOf(r), {status: 403, code: 'url_fetch_disabled'})
})

test('422 url_blocked: a scheme other than http(s)', async () => {
  for (const url of ['file:///etc/passwd', 'ftp://images.example/red.png', 'gopher://images.example/']) {
    assert.equal(errorOf(await moderateUrl(server.base, url)), {status: 422, code: 'url_blocked'}, url)
  }
})

test('422 url_blocked: a loopback or private address, literal or resolved, or reached by a redirect', async () => {
  for (const url of [
    `http://127.0.0.1:${imagesPort}/red.png`,
    'http://[::1]/red.png',
    'http://169.254.169.254/latest/meta-data',
    'http://intranet.example/red.png',
    'http://images.example/to-intranet',
  ]) {
    assert.equal(errorOf(await moderateUrl(server.base, url)), {status: 422, code: 'url_blocked'}, url)
  }
})

test('502 url_fetch_failed: the server answers non-2xx', async () => {
  const r = await moderateUrl(server.base, 'http://images.example/missing.png')
  assert.equal(errorOf(r), {status: 502, code: 'url_fetch_failed'})
})

test('504 url_fetch_timeout: the server does not answer within MOD_URL_TIMEOUT_MS', async () => {
  const started = Date.now()
  const r = await moderateUrl(server.base, 'http://images.example/slow.png')
  assert.equal(errorOf(r), {status: 504, code: 'url_fetch_timeout'})
  assert.ok(Date.now() - started < 3000)
})

test('a client that leaves stops its URL fetch: the download ends at once, not at MOD_URL_TIMEOUT_MS holding its upload place', async () => {
  const leaving = new AbortController()
  const body = JSON.stringify({url: 'http://images.example/drip.png'})
  const request = fetch(`${patient.base}/v1/moderate/json`, {method: 'POST', headers: {'content-type': 'application/json'}, body, signal: leaving.signal}).catch(() => undefined)
  await new Promise((r) => setTimeout(r, 500))
  leaving.abort()
  await request
  const open = await Promise.race([dripClosed, new Promise<number>((r) => setTimeout(() => r(-1), 5_000).unref())])
  assert.ok(open > 0 && open < 3_000, `the download stayed open ${open} ms (-1: over 5 s)`)
})

test('a URL download trickling below MOD_BODY_MIN_RATE gives its upload place to a newcomer, as a trickling body does (504)', async () => {
  const slowPlaces = await start(engine, {...settings, limits: {...settings.limits, urlTimeoutMs: 20_000, maxUploads: 2, maxUploadsPerClient: 2, bodyMinRate: 1000, bodyTimeoutMs: 400}}, {fetch: fetchHooks})
  const body = JSON.stringify({url: 'http://images.example/drip.png'})
  const headers = {'content-type': 'application/json', 'content-length': body.length}
  const clients: ClientRequest[] = []
  const downloads = ['127.0.0.2', '127.0.0.3'].map((from) =>
    rawRequest(`${slowPlaces.base}/v1/moderate/json`, {headers, localAddress: from, timeoutMs: 20_000}, (req) => clients.push(req.end(body))),
  )
  for (const d of downloads) d.catch(() => {})
  try {
    await until(() => slowPlaces.handle.gate.receiving === 2)
    // Past the downloads' grace (MOD_BODY_TIMEOUT_MS here), at 10 bytes a second against 1000.
    await new Promise((r) => setTimeout(r, 600))
    const {head, tail, type} = multipartParts('file', 'newcomer.png')
    const whole = Buffer.concat([head, await red(), tail])
    const served = await rawRequest(`${slowPlaces.base}/v1/moderate`, {headers: {'content-type': type, 'content-length': whole.length}, localAddress: '127.0.0.4'}, (req) => req.end(whole))
    assert.is(served.status, 200, served.body)
    const given = await Promise.race(downloads)
    assert.is(given.status, 504)
    const {error} = rawError(given)
    assert.is(error.code, 'url_fetch_timeout')
    assert.match(error.message, /^the image at the URL is arriving too slowly: \d+ bytes in \d+\.\d s, less than 1000 bytes per second \(MOD_BODY_MIN_RATE\); its upload place went to another client$/)
  } finally {
    // The other download's client leaves, which ends its fetch (the test above) and lets the server stop.
    for (const c of clients) c.destroy()
    await slowPlaces.stop()
  }
})

test('413 payload_too_large: the image behind the URL is over MOD_MAX_BYTES', async () => {
  assert.equal(errorOf(await moderateUrl(server.base, 'http://images.example/big.png')), {
    status: 413,
    code: 'payload_too_large',
  })
})

test('400 bad_request: a url that is not a URL, or not a string', async () => {
  assert.equal(errorOf(await moderateUrl(server.base, 'not a url')), {status: 400, code: 'bad_request'})
  assert.equal(errorOf(await postJson(`${server.base}/v1/moderate/json`, {url: 42})), {status: 400, code: 'bad_request'})
  assert.equal(errorOf(await postJson(`${server.base}/v1/moderate/json`, {url: ''})), {status: 400, code: 'bad_request'})
})

test.run()
