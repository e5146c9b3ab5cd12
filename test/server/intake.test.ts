import {mkdirSync, readdirSync} from 'node:fs'
import type {ClientRequest} from 'node:http'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {call, errorOf, fakeEngine, form, multipartParts, rawError, rawRequest, start, tempDir, testSettings, until, type SettingsOverrides} from './harness.js'

const dir = tempDir('mod-server-intake-')
const uploads = join(dir.path, 'uploads')
mkdirSync(uploads)

test.after(() => dir.remove())

const image = (name: string) => ({method: 'POST', body: form('file', [{name, data: 'x'}])})

function server(limits: SettingsOverrides['limits']) {
  return start(fakeEngine(), testSettings(join(dir.path, 'cache'), {limits}), {tmpDir: uploads})
}

/** An upload that sends its headers and the start of its body, then nothing until `cut()`. */
function stalled(base: string, path = '/v1/moderate') {
  const {head, tail, type} = multipartParts('file', 'slow.png')
  let client: ClientRequest | undefined
  const answer = rawRequest(
    `${base}${path}`,
    {headers: {'content-type': type, 'content-length': head.length + 1000 + tail.length}, timeoutMs: 20_000},
    (req) => {
      client = req
      req.write(head)
      req.write(Buffer.alloc(10, 1))
    },
  )
  answer.catch(() => {})
  return {answer, cut: () => client?.destroy()}
}

test('requests still sending their body hold no queue place: a complete request is served meanwhile', async () => {
  const s = await server({queueLimit: 1, maxUploads: 10})
  const slow = [stalled(s.base), stalled(s.base), stalled(s.base)]
  try {
    await until(() => s.handle.gate.receiving === 3)
    assert.is(s.handle.gate.admitted, 0)
    const served = await call(`${s.base}/v1/moderate`, image('quick.png'))
    assert.equal([served.status, served.body.source], [200, 'quick.png'])
  } finally {
    for (const u of slow) u.cut()
    await until(() => s.handle.gate.receiving === 0)
    await s.stop()
  }
})

test('beyond MOD_MAX_UPLOADS bodies being received a request is refused with 503 overloaded and Retry-After', async () => {
  const s = await server({maxUploads: 2})
  const slow = [stalled(s.base), stalled(s.base, '/v1/moderate/video')]
  try {
    await until(() => s.handle.gate.receiving === 2)
    const refused = await call(`${s.base}/v1/moderate`, image('third.png'))
    assert.equal(errorOf(refused), {status: 503, code: 'overloaded'})
    assert.is(refused.body.error.message, 'the server is busy (2 uploads already in progress); retry shortly')
    assert.is(refused.headers.get('retry-after'), '1')
    slow[0].cut()
    await until(() => s.handle.gate.receiving === 1)
    assert.is((await call(`${s.base}/v1/moderate`, image('fourth.png'))).status, 200)
  } finally {
    for (const u of slow) u.cut()
    await until(() => s.handle.gate.receiving === 0)
    await s.stop()
  }
})

test('a body that sends nothing for MOD_BODY_TIMEOUT_MS is answered 408 and a video upload removed', async () => {
  // MOD_BODY_MIN_RATE out of the way: these bodies are silent, not slow.
  const s = await server({bodyTimeoutMs: 200, bodyMinRate: 1})
  try {
    for (const path of ['/v1/moderate', '/v1/moderate/batch', '/v1/moderate/video']) {
      const started = Date.now()
      const {head, tail, type} = multipartParts(path.endsWith('batch') ? 'files' : 'file', 'slow.bin')
      const answer = await rawRequest(`${s.base}${path}`, {headers: {'content-type': type, 'content-length': head.length + 1000 + tail.length}}, (req) => {
        req.write(head)
        req.write(Buffer.alloc(10, 1))
      })
      assert.is(answer.status, 408, path)
      assert.is(answer.headers.connection, 'close', path)
      assert.equal(rawError(answer), {
        error: {code: 'request_timeout', message: 'no part of the request body arrived for 200 ms (MOD_BODY_TIMEOUT_MS)'},
      })
      assert.ok(Date.now() - started < 2000, path)
      assert.equal(readdirSync(uploads), [], path)
    }
    const json = await rawRequest(`${s.base}/v1/moderate/json`, {headers: {'content-type': 'application/json', 'content-length': 100}}, (req) => {
      req.write('{"image_base64": "')
    })
    assert.equal([json.status, JSON.parse(json.body).error.code], [408, 'request_timeout'])
    assert.equal([s.handle.gate.receiving, s.handle.gate.admitted], [0, 0])
  } finally {
    await s.stop()
  }
})

test('a body that is never silent for MOD_BODY_TIMEOUT_MS is not cut off by it (only by MOD_BODY_MIN_RATE)', async () => {
  const s = await server({bodyTimeoutMs: 300, bodyMinRate: 1})
  try {
    const {head, tail, type} = multipartParts('file', 'trickle.png')
    const pieces = 8
    const answer = await rawRequest(`${s.base}/v1/moderate`, {headers: {'content-type': type, 'content-length': head.length + pieces + tail.length}}, (req) => {
      req.write(head)
      let sent = 0
      const timer = setInterval(() => {
        req.write(Buffer.from([1]))
        if (++sent === pieces) {
          clearInterval(timer)
          req.end(tail)
        }
      }, 120)
    })
    assert.equal([answer.status, JSON.parse(answer.body).source], [200, 'trickle.png'])
  } finally {
    await s.stop()
  }
})

test('the files of a batch over MOD_MAX_BATCH_BYTES together are refused with 413 as they arrive', async () => {
  const s = await server({maxBytes: 64 * 1024, maxBatch: 4, maxBatchBytes: 100 * 1024})
  try {
    const files = ['a.png', 'b.png'].map((name) => ({name, data: Buffer.alloc(60 * 1024, 1)}))
    const r = await call(`${s.base}/v1/moderate/batch`, {method: 'POST', body: form('files', files)})
    assert.equal(errorOf(r), {status: 413, code: 'payload_too_large'})
    assert.is(r.body.error.message, 'the files are larger than 100 KiB together (MOD_MAX_BATCH_BYTES)')
    assert.is(s.handle.gate.held, 0)
  } finally {
    await s.stop()
  }
})

test('a batch whose total is bounded by MOD_MAX_BATCH x MOD_MAX_BYTES, below MOD_MAX_BATCH_BYTES, names those settings when it is over', async () => {
  const s = await server({maxBytes: 64 * 1024, maxBatch: 2, maxBatchBytes: 1024 * 1024})
  try {
    // The first file is over MOD_MAX_BYTES (an error entry of its own), and its bytes still count towards the total.
    const files = [
      {name: 'a.png', data: Buffer.alloc(70 * 1024, 1)},
      {name: 'b.png', data: Buffer.alloc(60 * 1024, 1)},
    ]
    const r = await call(`${s.base}/v1/moderate/batch`, {method: 'POST', body: form('files', files)})
    assert.equal(errorOf(r), {status: 413, code: 'payload_too_large'})
    assert.is(r.body.error.message, 'the files are larger than 128 KiB together (2 files of at most 64 KiB each: MOD_MAX_BATCH, MOD_MAX_BYTES)')
    assert.is(s.handle.gate.held, 0)
  } finally {
    await s.stop()
  }
})

test('a worker never holds more than MOD_MAX_BUFFERED_BYTES: a request that would go over is refused with 503', async () => {
  const budget = 150 * 1024
  const waiting: (() => void)[] = []
  let inEngine = 0
  let mostInEngine = 0
  let mostHeld = 0
  const engine = fakeEngine({
    moderateImage: (data, source) =>
      new Promise((resolve) => {
        inEngine += data.length
        mostInEngine = Math.max(mostInEngine, inEngine)
        mostHeld = Math.max(mostHeld, s.handle.gate.held)
        waiting.push(() => {
          inEngine -= data.length
          resolve({source, is_safe: true, violations: [], labels: [], not_evaluated: []})
        })
      }),
  })
  const settings = testSettings(join(dir.path, 'cache'), {limits: {maxBytes: 64 * 1024, maxBufferedBytes: budget}})
  const s = await start(engine, settings, {tmpDir: uploads})
  const photo = (name: string) => ({method: 'POST', body: form('file', [{name, data: Buffer.alloc(60 * 1024, 1)}])})
  try {
    const a = call(`${s.base}/v1/moderate`, photo('a.png'))
    const b = call(`${s.base}/v1/moderate`, photo('b.png'))
    await until(() => waiting.length === 2)
    const held = s.handle.gate.held
    assert.ok(held >= 120 * 1024 && held <= budget, String(held))

    // Declared length over what is left: refused before reading.
    const declared = await call(`${s.base}/v1/moderate`, photo('c.png'))
    assert.equal(errorOf(declared), {status: 503, code: 'overloaded'})
    assert.is(declared.body.error.message, 'the server is busy (its memory for uploads is in use); retry shortly')
    assert.is(declared.headers.get('retry-after'), '1')
    // No length (chunked): refused once its bytes would go over.
    const {head, tail, type} = multipartParts('file', 'd.png')
    const chunked = await rawRequest(`${s.base}/v1/moderate`, {headers: {'content-type': type}}, (req) => {
      req.write(head)
      req.end(Buffer.concat([Buffer.alloc(60 * 1024, 1), tail]))
    })
    assert.equal([chunked.status, JSON.parse(chunked.body).error.code], [503, 'overloaded'])
    assert.is(s.handle.gate.held, held)

    waiting.shift()?.()
    assert.is((await a).status, 200)
    const e = call(`${s.base}/v1/moderate`, photo('e.png'))
    await until(() => waiting.length === 2)
    for (const finish of waiting.splice(0)) finish()
    assert.equal([(await b).status, (await e).status], [200, 200])
    assert.ok(mostHeld <= budget && mostInEngine <= budget, `${mostHeld} ${mostInEngine}`)
    assert.is(s.handle.gate.held, 0)
  } finally {
    for (const finish of waiting.splice(0)) finish()
    await s.stop()
  }
})

test.run()
