// HTTP details a client or a browser relies on: WWW-Authenticate on 401, CORS only when MOD_CORS_ORIGINS
// allows the origin (preflights answered without the key) with Vary: Origin wherever that depends on the Origin,
// OPTIONS otherwise like any undeclared method.
import {connect} from 'node:net'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {readSettings} from '../../src/lib/config/settings.js'
import {call, fakeEngine, start, tempDir, testSettings, type Running} from './harness.js'

const KEY = 'http-key'
const dir = tempDir('mod-server-http-')
const engine = fakeEngine()
let closed: Running
let listed: Running
let any: Running

test.before(async () => {
  await engine.load()
  const base = {apiKey: KEY}
  closed = await start(engine, testSettings(join(dir.path, 'cache'), base))
  listed = await start(engine, testSettings(join(dir.path, 'cache'), {...base, corsOrigins: ['https://app.example.com']}))
  any = await start(engine, testSettings(join(dir.path, 'cache'), {...base, corsOrigins: ['*']}))
})

test.after(async () => {
  await Promise.all([closed.stop(), listed.stop(), any.stop()])
  dir.remove()
})

const corsOf = (h: Headers) =>
  Object.fromEntries([...h.entries()].filter(([name]) => name.startsWith('access-control-') || name === 'vary'))

test('401 names the scheme and the header of the key in WWW-Authenticate', async () => {
  for (const path of ['/v1/categories', '/nowhere']) {
    const r = await call(`${closed.base}${path}`)
    assert.equal([r.status, r.headers.get('www-authenticate')], [401, 'ApiKey header="X-API-Key"'], path)
  }
  assert.is((await call(`${closed.base}/v1/categories`, {headers: {'x-api-key': KEY}})).headers.get('www-authenticate'), null)
})

test('without MOD_CORS_ORIGINS: no CORS headers, and OPTIONS is 405 like any undeclared method (401 first without the key)', async () => {
  const origin = {origin: 'https://app.example.com'}
  const r = await fetch(`${closed.base}/health`, {headers: origin})
  assert.equal(corsOf(r.headers), {})
  const preflight = {...origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'x-api-key'}
  const refused = await fetch(`${closed.base}/v1/moderate`, {method: 'OPTIONS', headers: preflight})
  assert.equal([refused.status, corsOf(refused.headers)], [401, {}])
  const keyed = await fetch(`${closed.base}/v1/moderate`, {method: 'OPTIONS', headers: {...preflight, 'x-api-key': KEY}})
  assert.equal([keyed.status, keyed.headers.get('allow'), corsOf(keyed.headers)], [405, 'POST', {}])
})

test('with listed origins: a preflight from one is 204 without the key; answers carry the origin; others get nothing', async () => {
  const preflight = {origin: 'https://app.example.com', 'access-control-request-method': 'POST'}
  const p = await fetch(`${listed.base}/v1/moderate`, {method: 'OPTIONS', headers: preflight})
  assert.is(p.status, 204)
  assert.equal(corsOf(p.headers), {
    'access-control-allow-headers': 'X-API-Key, Content-Type, X-Request-Id',
    'access-control-allow-methods': 'POST',
    'access-control-allow-origin': 'https://app.example.com',
    'access-control-expose-headers': 'X-Request-Id, Retry-After, WWW-Authenticate, Location, X-Mod-Job-Status, X-Mod-Items-Total, X-Mod-Policy-Sha256, Server-Timing',
    'access-control-max-age': '600',
    vary: 'Origin',
  })
  assert.is(await p.text(), '')
  const r = await call(`${listed.base}/v1/categories`, {headers: {origin: 'https://app.example.com', 'x-api-key': KEY}})
  assert.equal([r.status, r.headers.get('access-control-allow-origin'), r.headers.get('vary')], [200, 'https://app.example.com', 'Origin'])
  const unauthorized = await call(`${listed.base}/v1/categories`, {headers: {origin: 'https://app.example.com'}})
  assert.equal([unauthorized.status, unauthorized.headers.get('access-control-allow-origin')], [401, 'https://app.example.com'])
  const other = await fetch(`${listed.base}/v1/moderate`, {method: 'OPTIONS', headers: {...preflight, origin: 'https://evil.example'}})
  assert.equal([other.status, corsOf(other.headers)], [401, {vary: 'Origin'}])
  const unknownPath = await fetch(`${listed.base}/v2/nothing`, {method: 'OPTIONS', headers: preflight})
  assert.is(unknownPath.status, 401)
})

test('with listed origins, every answer carries Vary: Origin: allowed origin, other origin or none, cacheable files included', async () => {
  for (const path of ['/docs/swagger-ui.css', '/health', '/v1/categories', '/nowhere']) {
    for (const headers of [{origin: 'https://app.example.com'}, {origin: 'https://evil.example'}, {}] as Record<string, string>[]) {
      const r = await fetch(`${listed.base}${path}`, {headers})
      await r.arrayBuffer()
      assert.is(r.headers.get('vary'), 'Origin', `${path} ${JSON.stringify(headers)}`)
    }
  }
  // The file at the versioned URL the page names, cached for good.
  const css = /docs\/swagger-ui\.css\?v=[^"]+/.exec(await (await fetch(`${listed.base}/docs`)).text())?.[0]
  const other = await fetch(`${listed.base}/${css}`, {headers: {origin: 'https://evil.example'}})
  assert.equal([other.status, other.headers.get('access-control-allow-origin')], [200, null])
  assert.match(other.headers.get('cache-control') ?? '', 'max-age')
})

test('with `*`: every answer carries `*` and the exposed headers whatever the Origin, so no Vary; OPTIONS varies by Origin', async () => {
  const p = await fetch(`${any.base}/health`, {method: 'OPTIONS', headers: {origin: 'https://a.example', 'access-control-request-method': 'GET'}})
  assert.equal([p.status, p.headers.get('access-control-allow-origin'), p.headers.get('access-control-allow-methods'), p.headers.get('vary')], [
    204,
    '*',
    'GET, HEAD',
    'Origin',
  ])
  for (const headers of [{origin: 'https://b.example'}, {}] as Record<string, string>[]) {
    const r = await fetch(`${any.base}/docs/swagger-ui.css`, {headers})
    await r.arrayBuffer()
    assert.equal(
      [r.headers.get('access-control-allow-origin'), r.headers.get('access-control-expose-headers'), r.headers.get('vary')],
      ['*', 'X-Request-Id, Retry-After, WWW-Authenticate, Location, X-Mod-Job-Status, X-Mod-Items-Total, X-Mod-Policy-Sha256, Server-Timing', null],
      JSON.stringify(headers),
    )
  }
})

/** Sends `head` (a request line and headers) on a socket as written, and reads the answer until the server closes. */
function exchange(base: string, head: string): Promise<{status: number; text: string}> {
  const {port} = new URL(base)
  return new Promise((resolve, reject) => {
    let got = ''
    const socket = connect(Number(port), '127.0.0.1', () => socket.write(`${head}Connection: close\r\n\r\n`))
    socket.on('data', (d) => (got += d.toString()))
    socket.on('end', () => resolve({status: Number(/^HTTP\/1\.1 (\d+)/.exec(got)?.[1]), text: got}))
    socket.on('error', reject)
  })
}

test('a request target in absolute form (RFC 9112 §3.2.2) is routed by its path and query', async () => {
  const {host} = new URL(closed.base)
  const health = await exchange(closed.base, `GET http://${host}/health HTTP/1.1\r\nHost: ${host}\r\n`)
  assert.is(health.status, 200, health.text)
  // Another authority in the target than in Host: the target's is the one that counts, and the path is what routes.
  const keyed = await exchange(closed.base, `GET HTTP://elsewhere.example:8000/v1/categories?x=1 HTTP/1.1\r\nHost: ${host}\r\nX-API-Key: ${KEY}\r\n`)
  assert.is(keyed.status, 200, keyed.text)
  assert.is((await exchange(closed.base, `GET http://${host}/v1/categories HTTP/1.1\r\nHost: ${host}\r\n`)).status, 401)
  const missing = await exchange(closed.base, `GET http://${host}/nowhere HTTP/1.1\r\nHost: ${host}\r\nX-API-Key: ${KEY}\r\n`)
  assert.is(missing.status, 404)
  assert.match(missing.text, '"message":"no such endpoint: /nowhere"')
  // No path after the authority is /, which is no endpoint.
  assert.match((await exchange(closed.base, `GET http://${host}?a=1 HTTP/1.1\r\nHost: ${host}\r\nX-API-Key: ${KEY}\r\n`)).text, '"no such endpoint: /"')
})

test('MOD_CORS_ORIGINS is read and checked', () => {
  assert.equal(readSettings({}, {}).server.corsOrigins, [])
  assert.equal(readSettings({}, {MOD_CORS_ORIGINS: ' https://a.example , http://localhost:3000 '}).server.corsOrigins, ['https://a.example', 'http://localhost:3000'])
  assert.equal(readSettings({}, {MOD_CORS_ORIGINS: '*'}).server.corsOrigins, ['*'])
  for (const bad of ['https://a.example/', 'a.example', 'ftp://a.example', '*,https://a.example']) {
    assert.throws(() => readSettings({}, {MOD_CORS_ORIGINS: bad}), /^MOD_CORS_ORIGINS=/, bad)
  }
})

test.run()
