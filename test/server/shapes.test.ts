// Extreme shapes on every route that takes an image: single upload (the whole sweep, 1 to 10^7 px both ways),
// batch entry, JSON base64 and URL. A side over 65 535 px is 413 payload_too_large; any other sliver answers
// what its centre 20 : 1 part answers on its own.
import {createServer, type Server} from 'node:http'
import type {AddressInfo} from 'node:net'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {MAX_ASPECT_RATIO} from '../../src/lib/image/aspect.js'
import {MAX_SIDE} from '../../src/lib/image/decode.js'
import {greyPng, sweepShapes} from '../helpers/hostile-images.js'
import {call, form, postJson, start, tempDir, testSettings, toyEngine, type Running} from './harness.js'
import {warmCacheDir} from '../helpers/warm-cache.js'

const dir = tempDir('mod-server-shapes-')
const settings = testSettings(warmCacheDir(join(dir.path, 'cache')), {allowUrls: true})
const engine = toyEngine(settings)
let server: Running
let images: Server

const SLIVER = {width: 5000, height: 1}
const TOO_LONG = {width: 1, height: 100_000}
const sliver = greyPng(SLIVER.width, SLIVER.height)
const tooLong = greyPng(TOO_LONG.width, TOO_LONG.height)
const refusal = (w: number, h: number) => ({code: 'payload_too_large', message: `image is ${w}x${h}; a side may be at most ${MAX_SIDE} pixels`})

test.before(async () => {
  images = createServer((req, res) => {
    const body = req.url === '/sliver.png' ? sliver : req.url === '/too-long.png' ? tooLong : undefined
    if (body) res.writeHead(200, {'content-type': 'image/png'}).end(body)
    else res.writeHead(404).end('missing')
  })
  await new Promise<void>((resolve) => images.listen(0, '127.0.0.1', resolve))
  const port = (images.address() as AddressInfo).port
  await engine.load()
  server = await start(engine, settings, {fetch: {resolve: async () => ['93.184.216.34'], connect: () => ({host: '127.0.0.1', port})}})
})

test.after(async () => {
  await server.stop()
  await new Promise((resolve) => images.close(resolve))
  await engine.close()
  dir.remove()
})

const upload = (name: string, data: Buffer) => call(`${server.base}/v1/moderate`, {method: 'POST', body: form('file', [{name, data}])})
const centre = (w: number, h: number) => greyPng(Math.min(w, MAX_ASPECT_RATIO * h), Math.min(h, MAX_ASPECT_RATIO * w))

for (const {width, height} of sweepShapes()) {
  const name = `${width}x${height}.png`
  test(`POST /v1/moderate ${name}`, async () => {
    const r = await upload(name, greyPng(width, height))
    if (Math.max(width, height) > MAX_SIDE) {
      assert.equal([r.status, r.body], [413, {error: refusal(width, height)}])
    } else {
      assert.is(r.status, 200)
      assert.equal(r.body, (await upload(name, centre(width, height))).body)
    }
  })
}

test('POST /v1/moderate/batch: a sliver entry is scored on its centre, a side over the limit is an error entry', async () => {
  const r = await call(`${server.base}/v1/moderate/batch`, {
    method: 'POST',
    body: form('files', [
      {name: 'sliver.png', data: sliver},
      {name: 'too-long.png', data: tooLong},
    ]),
  })
  assert.is(r.status, 200)
  assert.equal(r.body.results[0], (await upload('sliver.png', centre(SLIVER.width, SLIVER.height))).body)
  assert.equal(r.body.results[1], {source: 'too-long.png', error: refusal(TOO_LONG.width, TOO_LONG.height)})
})

test('POST /v1/moderate/json: the same answers for base64 and for a URL', async () => {
  const json = (value: unknown) => postJson(`${server.base}/v1/moderate/json`, value)
  const expected = (await upload('image_base64', centre(SLIVER.width, SLIVER.height))).body
  const encoded = await json({image_base64: sliver.toString('base64')})
  assert.equal([encoded.status, encoded.body], [200, expected])
  const refused = await json({image_base64: tooLong.toString('base64')})
  assert.equal([refused.status, refused.body], [413, {error: refusal(TOO_LONG.width, TOO_LONG.height)}])
  const url = 'http://images.example/sliver.png'
  const fetched = await json({url})
  assert.equal([fetched.status, fetched.body], [200, {...expected, source: url}])
  const long = await json({url: 'http://images.example/too-long.png'})
  assert.equal([long.status, long.body], [413, {error: refusal(TOO_LONG.width, TOO_LONG.height)}])
})

test.run()
