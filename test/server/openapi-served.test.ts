import {mkdtempSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import {request} from 'node:http'
import type {AddressInfo} from 'node:net'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

import sharp from 'sharp'
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {engineFromConfig} from '../../src/lib/compose.js'
import {loadConfig} from '../../src/lib/config/load.js'
import type {Engine} from '../../src/lib/engine.js'
import {buildServer, type ModServer} from '../../src/server/app.js'
import {openapiDocument} from '../../src/server/openapi.js'
import {TOY_MODEL} from '../helpers/cli.js'
import {assertConforms, createConformance, type Conformance} from './conformance.js'
import {brokenAnswers} from './harness.js'
import {warmCacheDir} from '../helpers/warm-cache.js'

const KEY = 'test-key-123'
const VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {version: string})
  .version

interface Running {
  base: string
  server: ModServer
  engine: Engine
  env: Record<string, string>
  broken: ReturnType<typeof brokenAnswers>
}

const dir = mkdtempSync(join(tmpdir(), 'mod-openapi-'))
writeFileSync(join(dir, 'policy.yaml'), 'categories:\n  redness:\n    prompts: ["red"]\n    threshold: 0.5\n')

async function start(extra: Record<string, string> = {}): Promise<Running> {
  const env = {
    MOD_MODEL_DIR: TOY_MODEL,
    MOD_CACHE_DIR: warmCacheDir(join(dir, 'cache')),
    MOD_CONFIG: join(dir, 'policy.yaml'),
    MOD_MAX_BATCH: '3',
    ...extra,
  }
  const config = await loadConfig({}, env, dir)
  const engine = engineFromConfig(config)
  const broken = brokenAnswers()
  const server = buildServer(engine, config.settings.server, {log: () => {}, brokenAnswer: broken.brokenAnswer})
  await new Promise<void>((done) => server.server.listen(0, '127.0.0.1', done))
  return {base: `http://127.0.0.1:${(server.server.address() as AddressInfo).port}`, server, engine, env, broken}
}

async function stop(r: Running): Promise<void> {
  await r.server.close()
  await r.engine.close()
  r.broken.check()
}

/** A raw GET: fetch would normalise `..` away before sending. */
function rawGet(base: string, path: string): Promise<{status: number; headers: Record<string, string>; body: string}> {
  return new Promise((done, fail) => {
    const req = request(`${base}/`, {path, method: 'GET'}, (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (d: string) => (body += d))
      res.on('end', () => done({status: res.statusCode ?? 0, headers: res.headers as Record<string, string>, body}))
    })
    req.on('error', fail)
    req.end()
  })
}

const png = async (r: number, g: number, b: number): Promise<Uint8Array<ArrayBuffer>> =>
  new Uint8Array(await sharp({create: {width: 32, height: 32, channels: 3, background: {r, g, b}}}).png().toBuffer())

let open: Running
let conformance: Conformance

test.before(async () => {
  open = await start()
  const served = (await (await fetch(`${open.base}/openapi.json`)).json()) as Parameters<typeof createConformance>[0]
  conformance = createConformance(served)
})

test.after(async () => {
  await stop(open)
  rmSync(dir, {recursive: true, force: true})
})

test('GET /openapi.json is the document for this server, and it conforms to itself', async () => {
  const res = await fetch(`${open.base}/openapi.json`)
  const body = await assertConforms(conformance, res)
  const config = await loadConfig({}, open.env, dir)
  const expected = openapiDocument({version: VERSION, apiKey: false, allowUrls: false, limits: config.settings.server.limits})
  assert.equal(body, JSON.parse(JSON.stringify(expected)))
  assert.match(JSON.stringify(body), '"maxItems":3')
})

test('GET /docs is HTML that loads only same-origin assets, each with its content type', async () => {
  const res = await fetch(`${open.base}/docs`)
  const html = (await assertConforms(conformance, res)) as string
  assert.ok(res.headers.get('content-security-policy')?.includes("script-src 'self'"))
  assert.not.match(html, /https?:\/\//)
  const urls = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1])
  assert.is(urls.length, 8)
  const types: Record<string, string> = {css: 'text/css', js: 'text/javascript', png: 'image/png', json: 'application/json'}
  for (const url of urls) {
    assert.not.ok(url.startsWith('/'), url)
    const asset = await fetch(new URL(url, res.url))
    assert.is(asset.status, 200, url)
    const ext = /\.(\w+)(?:\?|$)/.exec(url)?.[1] ?? ''
    assert.is(asset.headers.get('content-type')?.split(';')[0], types[ext], url)
    assert.ok((await asset.arrayBuffer()).byteLength > 0, url)
  }
})

test('GET and HEAD /docs/ redirect to the page, /docs, by a relative Location', async () => {
  for (const method of ['GET', 'HEAD']) {
    const res = await fetch(`${open.base}/docs/`, {method, redirect: 'manual'})
    assert.equal([res.status, res.headers.get('location')], [301, '../docs'], method)
  }
})

test('a path outside the docs assets is 404 not_found, encoded or not', async () => {
  for (const path of ['/docs/../package.json', '/docs/..%2Fpackage.json', '/docs/%2e%2e%2fpackage.json', '/docs/package.json']) {
    const res = await rawGet(open.base, path)
    assert.is(res.status, 404, path)
    assert.not.match(res.body, /"name":\s*"mod"/, path)
    conformance.check('GET', path, res.status, res.headers, res.body)
  }
})

test('real responses of the moderation endpoints conform to the document', async () => {
  const red = await png(255, 0, 0)
  const blue = await png(0, 0, 255)

  const single = new FormData()
  single.append('file', new Blob([red], {type: 'image/png'}), 'red.png')
  const result = (await assertConforms(conformance, await fetch(`${open.base}/v1/moderate`, {method: 'POST', body: single}))) as {
    is_safe: boolean
  }
  assert.is(result.is_safe, false)

  const batch = new FormData()
  batch.append('files', new Blob([red], {type: 'image/png'}), 'red.png')
  batch.append('files', new Blob([blue], {type: 'image/png'}), 'blue.png')
  batch.append('files', new Blob(['not an image'], {type: 'text/plain'}), 'notes.txt')
  const batchRes = await fetch(`${open.base}/v1/moderate/batch`, {method: 'POST', body: batch})
  const {results} = (await assertConforms(conformance, batchRes)) as {results: {source: string; error?: unknown}[]}
  assert.equal(
    results.map((r) => [r.source, 'error' in r]),
    [
      ['red.png', false],
      ['blue.png', false],
      ['notes.txt', true],
    ],
  )

  const tooMany = new FormData()
  for (let i = 0; i < 4; i++) tooMany.append('files', new Blob([blue], {type: 'image/png'}), `${i}.png`)
  const tooManyRes = await fetch(`${open.base}/v1/moderate/batch`, {method: 'POST', body: tooMany})
  assert.is(tooManyRes.status, 413)
  await assertConforms(conformance, tooManyRes)

  const json = (body: unknown) =>
    fetch(`${open.base}/v1/moderate/json`, {method: 'POST', headers: {'content-type': 'application/json'}, body: JSON.stringify(body)})
  const fromBase64 = await json({image_base64: Buffer.from(blue).toString('base64')})
  assert.equal(((await assertConforms(conformance, fromBase64)) as {source: string}).source, 'image_base64')
  const both = await json({image_base64: 'AAAA', url: 'https://example.com/a.png'})
  assert.is(both.status, 400)
  await assertConforms(conformance, both)
  const disabled = await json({url: 'https://example.com/a.png'})
  assert.is(disabled.status, 403)
  await assertConforms(conformance, disabled)

  const notAnImage = new FormData()
  notAnImage.append('file', new Blob(['hello'], {type: 'text/plain'}), 'hello.txt')
  const unsupported = await fetch(`${open.base}/v1/moderate`, {method: 'POST', body: notAnImage})
  assert.is(unsupported.status, 415)
  await assertConforms(conformance, unsupported)

  for (const path of ['/v1/moderate', '/v1/moderate/batch', '/v1/moderate/json', '/v1/moderate/video']) {
    const wrongType = await fetch(`${open.base}${path}`, {method: 'POST', headers: {'content-type': 'text/plain'}, body: 'hello'})
    assert.is(wrongType.status, 415, path)
    await assertConforms(conformance, wrongType)
  }

  await assertConforms(conformance, await fetch(`${open.base}/health`))
  await assertConforms(conformance, await fetch(`${open.base}/v1/categories`))
  const wrongMethod = await fetch(`${open.base}/v1/moderate`)
  assert.is(wrongMethod.status, 405)
  await assertConforms(conformance, wrongMethod, {method: 'GET'})
})

test('with MOD_API_KEY set, everything but /health, /ready and the documentation needs the key', async () => {
  const locked = await start({MOD_API_KEY: KEY})
  try {
    const doc = (await (await fetch(`${locked.base}/openapi.json`)).json()) as Parameters<
      typeof createConformance
    >[0]
    const c = createConformance(doc)
    assert.match(doc.info.description, 'This server has `MOD_API_KEY` set')
    for (const path of ['/openapi.json', '/docs']) {
      const res = await fetch(`${locked.base}${path}`)
      assert.is(res.status, 200, path)
      await assertConforms(c, res)
    }
    const refused = await fetch(`${locked.base}/v1/categories`)
    assert.is(refused.status, 401)
    await assertConforms(c, refused)
    await assertConforms(c, await fetch(`${locked.base}/health`))
  } finally {
    await stop(locked)
  }
})

test.run()
