import {request as httpRequest} from 'node:http'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {readSettings} from '../../src/lib/config/settings.js'
import {isLoopbackHost, startupWarnings} from '../../src/server/address.js'
import {keyMatches} from '../../src/server/auth.js'
import {call, errorOf, fakeEngine, form, start, tempDir, testSettings, type Running} from './harness.js'

const KEY = 'k3y-that-must-not-leak'
const dir = tempDir('mod-server-auth-')
let locked: Running
let open: Running

test.before(async () => {
  const cacheDir = join(dir.path, 'cache')
  locked = await start(fakeEngine(), testSettings(cacheDir, {apiKey: KEY}))
  open = await start(fakeEngine(), testSettings(cacheDir))
})

test.after(async () => {
  await Promise.all([locked.stop(), open.stop()])
  dir.remove()
})

const withKey = (key: string) => ({headers: {'X-API-Key': key}})

test('with MOD_API_KEY set, GET (and HEAD) /health needs no key', async () => {
  const r = await call(`${locked.base}/health`)
  assert.equal([r.body.status, r.body.model_loaded], ['ok', false])
  assert.is((await fetch(`${locked.base}/health`, {method: 'HEAD'})).status, 200)
})

test('with MOD_API_KEY set, a request without X-API-Key is 401 unauthorized', async () => {
  const r = await call(`${locked.base}/v1/categories`)
  assert.equal(errorOf(r), {status: 401, code: 'unauthorized'})
  assert.is(r.body.error.message, 'this server needs an API key: send it in the X-API-Key header')
  const upload = await call(`${locked.base}/v1/moderate`, {method: 'POST', body: form('file', [{name: 'a.png', data: 'x'}])})
  assert.equal(errorOf(upload), {status: 401, code: 'unauthorized'})
  assert.is(upload.headers.get('connection'), 'close')
})

test('with MOD_API_KEY set, a wrong key is 401 and the answer repeats neither key', async () => {
  for (const key of ['wrong', `${KEY}x`, KEY.slice(0, -1), KEY.toUpperCase()]) {
    const res = await fetch(`${locked.base}/v1/categories`, withKey(key))
    const text = await res.text()
    assert.is(res.status, 401)
    assert.is(JSON.parse(text).error.code, 'unauthorized')
    assert.not.ok(text.includes(KEY) || text.includes(key), key)
  }
  assert.not.ok(locked.logs.join('\n').includes(KEY))
})

test('the right key sent twice (a proxy adding it again) is 401 saying it was sent more than once', async () => {
  const answer = await new Promise<{status: number; body: string}>((resolve, reject) => {
    const req = httpRequest(`${locked.base}/v1/categories`, {headers: {'x-api-key': [KEY, KEY]}}, (res) => {
      let body = ''
      res.on('data', (d: Buffer) => (body += d))
      res.on('end', () => resolve({status: res.statusCode ?? 0, body}))
    })
    req.on('error', reject)
    req.end()
  })
  assert.is(answer.status, 401)
  assert.is(JSON.parse(answer.body).error.message, 'the X-API-Key header was sent more than once (a proxy adding it again?): send it once')
})

test('a MOD_API_KEY read with a trailing newline (a key file) is trimmed: clients sending the key get in', async () => {
  const {apiKey} = readSettings({}, {MOD_API_KEY: `${KEY}\n`}).server
  const filed = await start(fakeEngine(), testSettings(join(dir.path, 'cache'), {apiKey}))
  try {
    assert.is((await call(`${filed.base}/v1/categories`, withKey(KEY))).status, 200)
    assert.is((await call(`${filed.base}/v1/categories`, withKey(`${KEY}x`))).status, 401)
  } finally {
    await filed.stop()
  }
})

test('with MOD_API_KEY set, the right key is let through on every endpoint', async () => {
  assert.is((await call(`${locked.base}/v1/categories`, withKey(KEY))).status, 200)
  const r = await call(`${locked.base}/v1/moderate`, {method: 'POST', body: form('file', [{name: 'a.png', data: 'x'}]), ...withKey(KEY)})
  assert.is(r.status, 200)
  assert.is((await fetch(`${locked.base}/openapi.json`, withKey(KEY))).status, 200)
})

test('with MOD_API_KEY set, the documentation needs no key: the page, its files and the document', async () => {
  for (const path of ['/docs', '/docs/', '/docs/init.js', '/docs/swagger-ui.css', '/openapi.json']) {
    assert.is((await fetch(`${locked.base}${path}`)).status, 200, path)
    assert.is((await fetch(`${locked.base}${path}`, {method: 'HEAD'})).status, 200, `HEAD ${path}`)
  }
  assert.is((await fetch(`${locked.base}/docs/nothing.js`)).status, 404)
  assert.is((await fetch(`${locked.base}/openapi.json`, {method: 'POST'})).status, 401)
})

test('with MOD_API_KEY set, every other path needs the key too: unknown paths included', async () => {
  for (const path of ['/nothing-here', '/health/', '/docsx', '/v1/docs/']) {
    const res = await fetch(`${locked.base}${path}`)
    assert.is(res.status, 401, path)
    assert.is((await res.json()).error.code, 'unauthorized')
  }
  const post = await fetch(`${locked.base}/health`, {method: 'POST'})
  assert.is(post.status, 401)
})

test('without MOD_API_KEY no key is needed', async () => {
  assert.is((await call(`${open.base}/v1/categories`)).status, 200)
  assert.is((await call(`${open.base}/v1/categories`, withKey('anything'))).status, 200)
})

test('keys are compared whole: same text only, whatever the length', () => {
  assert.ok(keyMatches('secret', 'secret'))
  assert.not.ok(keyMatches('secret', 'secre'))
  assert.not.ok(keyMatches('secret', 'secret '))
  assert.not.ok(keyMatches('secret', ''))
  assert.not.ok(keyMatches('secret', ['secret', 'secret']))
  assert.not.ok(keyMatches('secret', undefined))
})

test('serving on a non-loopback interface without a key prints a warning at startup', () => {
  const [warning] = startupWarnings('0.0.0.0', {})
  assert.match(warning, /^warning: serving on 0\.0\.0\.0 without MOD_API_KEY/)
  assert.is(startupWarnings('::', {}).length, 1)
  assert.is(startupWarnings('192.168.1.5', {}).length, 1)
  assert.is(startupWarnings('example.com', {}).length, 1)
  assert.equal(startupWarnings('0.0.0.0', {apiKey: 'k'}), [])
  for (const host of ['127.0.0.1', '127.8.9.10', '::1', '[::1]', 'localhost', '::ffff:127.0.0.1']) {
    assert.ok(isLoopbackHost(host), host)
    assert.equal(startupWarnings(host, {}), [])
  }
})

test.run()
