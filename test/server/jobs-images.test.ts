// Bulk image jobs on the in-process queue, as a client uses them: a manifest of URLs or uploaded files, progress,
// NDJSON results in order and resumable, the signed callback, DELETE, and every refusal with its status.
import {mkdirSync} from 'node:fs'
import {readdir} from 'node:fs/promises'
import {createServer, type Server} from 'node:http'
import {connect, type AddressInfo} from 'node:net'
import {join} from 'node:path'

import sharp from 'sharp'
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {createMemoryImageQueue} from '../../src/server/jobs/images/memory.js'
import {manifestBodyLimit} from '../../src/server/jobs/images/schema.js'
import {warmCacheDir} from '../helpers/warm-cache.js'
import {
  blue,
  call,
  callbackReceiver,
  dripPng,
  errorOf,
  form,
  postJson,
  red,
  signature,
  start,
  tempDir,
  testSettings,
  toyEngine,
  type CallbackReceiver,
  type Running,
  until,
} from './harness.js'

const PUBLIC = '93.184.216.34'
const SECRET = 'image-callback-secret'
const dir = tempDir('mod-jobs-images-')
const storage = join(dir.path, 'jobs')
mkdirSync(storage)
// Fetches wait behind the scoring of earlier chunks: a loaded machine, or one emulating another CPU, needs seconds.
const base = testSettings(warmCacheDir(join(dir.path, 'cache')), {allowUrls: true, limits: {urlTimeoutMs: 10_000}})
const settings = {
  ...base,
  jobs: {...base.jobs, storage, callbackSecret: SECRET, callbackAllowPrivate: true, images: {maxItems: 100, maxBytes: 64 * 1024, maxPerClient: 2}},
}
const engine = toyEngine(settings)
let images: Server
let receiver: CallbackReceiver
let server: Running
let noUrls: Running
let keyed: Running
/** The dripped downloads: each resolves with how long its connection stayed open, in ms. */
const dripped: Promise<number>[] = []

test.before(async () => {
  const [redPng, bluePng] = await Promise.all([red(), blue()])
  images = createServer((req, res) => {
    if (req.url?.startsWith('/red')) res.writeHead(200, {'content-type': 'image/png'}).end(redPng)
    else if (req.url?.startsWith('/blue')) res.writeHead(200, {'content-type': 'image/png'}).end(bluePng)
    else if (req.url?.startsWith('/drip')) dripped.push(dripPng(res))
    else res.writeHead(404).end('missing')
  })
  ;[receiver] = await Promise.all([callbackReceiver(), new Promise<void>((resolve) => images.listen(0, '127.0.0.1', resolve))])
  const imagesPort = (images.address() as AddressInfo).port
  await engine.load()
  const fetch = {resolve: async () => [PUBLIC], connect: () => ({host: '127.0.0.1', port: imagesPort})}
  server = await start(engine, settings, {fetch, tmpDir: dir.path})
  noUrls = await start(engine, {...settings, allowUrls: false}, {tmpDir: dir.path})
  keyed = await start(engine, {...settings, apiKey: 'right'}, {tmpDir: dir.path})
})

test.after(async () => {
  await Promise.all([server.stop(), noUrls.stop(), keyed.stop()])
  await Promise.all([new Promise((resolve) => images.close(resolve)), receiver.close()])
  await engine.close()
  dir.remove()
})

async function done(id: string, on = server): Promise<any> {
  for (;;) {
    const r = await call(`${on.base}/v1/jobs/${id}`)
    if (r.body.status === 'done') return r.body
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

async function results(id: string, offset?: number): Promise<{status: string | null; total: string | null; lines: any[]}> {
  const res = await fetch(`${server.base}/v1/jobs/${id}/results${offset === undefined ? '' : `?offset=${offset}`}`)
  assert.is(res.status, 200)
  assert.is(res.headers.get('content-type'), 'application/x-ndjson')
  // As every JSON answer: never cached (a job's results are a user's), never read as another type.
  assert.is(res.headers.get('cache-control'), 'no-store')
  assert.is(res.headers.get('x-content-type-options'), 'nosniff')
  const text = await res.text()
  const lines = text === '' ? [] : text.trimEnd().split('\n').map((l) => JSON.parse(l))
  return {status: res.headers.get('x-mod-job-status'), total: res.headers.get('x-mod-items-total'), lines}
}

const urls = (n: number) => Array.from({length: n}, (_, i) => ({url: `http://images.example/${i % 3 === 0 ? 'red' : 'blue'}/${i}.png`, id: `item-${i}`}))

test('a manifest of 70 URLs runs in 3 chunks; every item has one line, in manifest order, with its id', async () => {
  const r = await postJson(`${server.base}/v1/jobs/images?callback_url=${encodeURIComponent(receiver.url)}`, {items: urls(70)})
  assert.is(r.status, 202)
  assert.is(r.headers.get('location'), `/v1/jobs/${r.body.id}`)
  assert.equal([r.body.kind, r.body.progress], ['images', {items_done: 0, items_total: 70, chunks_done: 0, chunks_total: 3}])
  const job = await done(r.body.id)
  assert.equal(job.progress, {items_done: 70, items_total: 70, chunks_done: 3, chunks_total: 3})
  const all = await results(r.body.id)
  assert.equal([all.status, all.total], ['done', '70'])
  assert.equal(all.lines.map((l) => l.index), [...Array(70).keys()])
  assert.equal(all.lines.map((l) => l.id), urls(70).map((u) => u.id))
  assert.equal(all.lines.map((l) => l.is_safe), urls(70).map((u) => !u.url.includes('/red/')), JSON.stringify(all.lines.filter((l) => l.error).slice(0, 3)))
  assert.is(all.lines[0].source, 'http://images.example/red/0.png')
  // The id upper-cased is the same job (UUIDs are case-insensitive).
  const upper = await fetch(`${server.base}/v1/jobs/${r.body.id.toUpperCase()}/results?offset=69`)
  assert.equal([upper.status, JSON.parse(await upper.text()).index], [200, 69])
  // offset is digits only, within safe integers: other forms Number() reads are 400 naming it.
  for (const offset of ['0x1', '1e0', '+1', '%201', '9007199254740993']) {
    const bad = await call(`${server.base}/v1/jobs/${r.body.id}/results?offset=${offset}`)
    assert.equal([bad.status, bad.body.error.code], [400, 'bad_request'], offset)
    assert.match(bad.body.error.message, /^offset=".*" is not valid: expected a whole number from 0 to 9007199254740991(, written in digits only)?$/, offset)
  }
  // Resumed from an offset: the lines from there on.
  const rest = await results(r.body.id, 68)
  assert.equal(rest.lines.map((l) => l.index), [68, 69])
  assert.equal((await results(r.body.id, 70)).lines, [])
  // The callback arrives signed, with the job done.
  const callback = await receiver.callbackFor(r.body.id)
  assert.is(callback.signature, signature(SECRET, callback.body))
  assert.equal(JSON.parse(callback.body), job)
})

test('an item whose URL cannot be fetched has its error line; the others are scored', async () => {
  const r = await postJson(`${server.base}/v1/jobs/images`, {items: [{url: 'http://images.example/red.png'}, {url: 'http://images.example/missing.png', id: 'x'}]})
  await done(r.body.id)
  const {lines} = await results(r.body.id)
  assert.is(lines[0].is_safe, false)
  assert.equal([lines[1].index, lines[1].id, lines[1].source, lines[1].error.code], [1, 'x', 'http://images.example/missing.png', 'url_fetch_failed'])
})

test('uploaded files are streamed to the job folder, scored in upload order, and removed when the job is done', async () => {
  const [redPng, bluePng] = await Promise.all([red(), blue()])
  const files = Array.from({length: 35}, (_, i) => ({name: `f${i}.png`, data: i % 2 === 0 ? redPng : bluePng}))
  files.push({name: 'empty.png', data: Buffer.alloc(0)})
  const r = await call(`${server.base}/v1/jobs/images`, {method: 'POST', body: form('files', files)})
  assert.is(r.status, 202)
  assert.is(r.body.progress.chunks_total, 2)
  await done(r.body.id)
  const {lines} = await results(r.body.id)
  assert.equal(lines.map((l) => l.source), files.map((f) => f.name))
  assert.equal(lines.slice(0, 35).map((l) => l.is_safe), files.slice(0, 35).map((_, i) => i % 2 === 1))
  assert.equal(lines[35].error.code, 'unsupported_media')
  // The process that finishes the job removes its uploads just after recording the last chunk.
  for (let waited = 0; (await readdir(storage)).length > 0 && waited < 5000; waited += 20) await new Promise((resolve) => setTimeout(resolve, 20))
  assert.equal(await readdir(storage), [])
})

test('an uploaded file name over 1024 characters makes no job: a 400 naming its length, and nothing is left in the job storage', async () => {
  const r = await call(`${server.base}/v1/jobs/images`, {method: 'POST', body: form('files', [{name: 'ok.png', data: await red()}, {name: `${'n'.repeat(1500)}.png`, data: await red()}])})
  assert.equal([r.status, r.body.error], [400, {code: 'bad_request', message: 'a file name is 1504 characters long; at most 1024 are taken'}])
  assert.equal(await readdir(storage), [])
})

test('a truncated JPEG has one code everywhere: 415 unsupported_media from /v1/moderate and /json, the same code in a batch entry and a job line', async () => {
  // Noise, so that half of the file lies past its header: the decoder knows it for a JPEG and fails in its data.
  const noise = Buffer.alloc(64 * 64 * 3)
  for (let i = 0; i < noise.length; i++) noise[i] = (i * 2654435761) >>> 24
  const whole = await sharp(noise, {raw: {width: 64, height: 64, channels: 3}}).jpeg().toBuffer()
  const cut = whole.subarray(0, whole.length >> 1)
  const single = await call(`${server.base}/v1/moderate`, {method: 'POST', body: form('file', [{name: 'cut.jpg', data: cut}])})
  const json = await postJson(`${server.base}/v1/moderate/json`, {image_base64: cut.toString('base64')})
  const expected = {code: 'unsupported_media', message: 'the image data is corrupt or truncated'}
  assert.equal([single.status, single.body], [415, {error: expected}])
  assert.equal([json.status, json.body], [415, {error: expected}])
  const batch = await call(`${server.base}/v1/moderate/batch`, {method: 'POST', body: form('files', [{name: 'cut.jpg', data: cut}])})
  assert.equal(batch.body.results, [{source: 'cut.jpg', error: expected}])
  const job = await call(`${server.base}/v1/jobs/images`, {method: 'POST', body: form('files', [{name: 'cut.jpg', data: cut}])})
  await done(job.body.id)
  assert.equal((await results(job.body.id)).lines, [{index: 0, source: 'cut.jpg', error: expected}])
})

test('DELETE cancels a job: its chunks not run are dropped, and it is unknown from then on', async () => {
  const r = await postJson(`${server.base}/v1/jobs/images`, {items: urls(100)})
  const deleted = await call(`${server.base}/v1/jobs/${r.body.id}`, {method: 'DELETE'})
  assert.equal([deleted.status, deleted.body.status], [200, 'cancelled'])
  assert.ok(deleted.body.progress.chunks_done < 4)
  assert.equal(errorOf(await call(`${server.base}/v1/jobs/${r.body.id}`)), {status: 404, code: 'not_found'})
  assert.equal(errorOf(await call(`${server.base}/v1/jobs/${r.body.id}/results`)), {status: 404, code: 'not_found'})
  assert.equal(errorOf(await call(`${server.base}/v1/jobs/${r.body.id}`, {method: 'DELETE'})), {status: 404, code: 'not_found'})
})

test('a done job deleted while its results are read: the body is cut off, not ended as if whole under X-Mod-Job-Status: done', async () => {
  // Lines of 8 KiB (the URL is their source), so the kernel's buffers hold a small part of the body while the
  // reader waits: the job goes while the server still has pages to read.
  const fetch = {resolve: async () => [PUBLIC], connect: () => ({host: '127.0.0.1', port: (images.address() as AddressInfo).port})}
  const big = await start(engine, {...settings, jobs: {...settings.jobs, images: {...settings.jobs.images, maxItems: 1000}}}, {fetch, tmpDir: dir.path})
  try {
    const items = Array.from({length: 1000}, (_, i) => ({url: `http://images.example/missing/${i}-${'p'.repeat(8000)}.png`}))
    const r = await postJson(`${big.base}/v1/jobs/images`, {items})
    await done(r.body.id, big)
    const {port} = new URL(big.base)
    const reader = connect(Number(port), '127.0.0.1')
    reader.write(`GET /v1/jobs/${r.body.id}/results HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`)
    // Not read yet: the server fills the buffers and waits.
    await new Promise((resolve) => setTimeout(resolve, 300))
    assert.is((await call(`${big.base}/v1/jobs/${r.body.id}`, {method: 'DELETE'})).status, 200)
    const chunks: Buffer[] = []
    reader.on('data', (d: Buffer) => chunks.push(d))
    await new Promise((resolve) => reader.on('close', resolve).on('error', () => {}))
    const answer = Buffer.concat(chunks).toString('latin1')
    assert.match(answer, /^HTTP\/1\.1 200 OK\r\n[^]*X-Mod-Job-Status: done\r\n/)
    const lines = answer.split('{"index":').length - 1
    assert.ok(lines > 0 && lines < 1000, `${lines} lines of 1000 arrived`)
    assert.not.ok(answer.endsWith('\r\n0\r\n\r\n'), 'the chunked body has no end: the client knows it is not whole')
  } finally {
    await big.stop()
  }
})

test('DELETE stops the URL downloads of the chunk running: they end at once, not at MOD_URL_TIMEOUT_MS', async () => {
  const r = await postJson(`${server.base}/v1/jobs/images`, {items: [{url: 'http://images.example/drip/0.png'}, {url: 'http://images.example/drip/1.png'}]})
  await until(() => dripped.length === 2)
  await call(`${server.base}/v1/jobs/${r.body.id}`, {method: 'DELETE'})
  const open = await Promise.race([Promise.all(dripped), new Promise<number[]>((resolve) => setTimeout(() => resolve([-1]), 5_000).unref())])
  assert.ok(open.every((ms) => ms > 0 && ms < 3_000), `the downloads stayed open ${open.join(', ')} ms (-1: over 5 s)`)
})

test('a manifest is bounded by what MOD_MAX_JOB_ITEMS items take, not by MOD_MAX_BYTES', async () => {
  // 100 items (MOD_MAX_JOB_ITEMS here) of 2 000-character signed URLs: about 200 KB, where MOD_MAX_BYTES of 16 KiB
  // used to allow 88 KiB (an image's base64) and refused it as more than an image needs.
  const small = await start(engine, {...settings, allowUrls: false, limits: {...settings.limits, maxBytes: 16 * 1024}}, {tmpDir: dir.path})
  try {
    const signed = urls(100).map((item) => ({...item, url: `${item.url}?signature=${'s'.repeat(2000)}`}))
    const read = await postJson(`${small.base}/v1/jobs/images`, {items: signed})
    // Read whole and parsed: refused for what it asks, not for its size.
    assert.equal(errorOf(read), {status: 403, code: 'url_fetch_disabled'})
    const padded = `{"items": ${JSON.stringify(signed)}${' '.repeat(100 * 8512)}}`
    const tooLarge = await postJson(`${small.base}/v1/jobs/images`, padded)
    assert.equal(errorOf(tooLarge), {status: 413, code: 'payload_too_large'})
    assert.match(tooLarge.body.error.message, 'the most a manifest of 100 items (MOD_MAX_JOB_ITEMS) takes, each URL and id at its longest')
  } finally {
    await small.stop()
  }
  // Never more than a worker holds in memory: a larger body could only ever be 503 overloaded.
  const held = manifestBodyLimit({limits: {...settings.limits, maxBufferedBytes: 5000}, jobs: settings.jobs})
  assert.equal(held, {maxBytes: 5000, room: 'the most request bytes a worker holds in memory (MOD_MAX_BUFFERED_BYTES)'})
})

test('bad input is refused with its status and code', async () => {
  const post = (body: unknown, on = server, headers: Record<string, string> = {}) => postJson(`${on.base}/v1/jobs/images`, body, headers)
  assert.equal(errorOf(await post('{"items": [')), {status: 400, code: 'bad_request'})
  assert.equal(errorOf(await post({items: []})), {status: 400, code: 'bad_request'})
  assert.equal(errorOf(await post({items: [{uri: 'http://images.example/red.png'}]})), {status: 400, code: 'bad_request'})
  assert.equal(errorOf(await post({items: [{url: 'not a url'}]})), {status: 400, code: 'bad_request'})
  assert.equal(errorOf(await post({items: urls(101)})), {status: 413, code: 'too_many_files'})
  const blocked = await post({items: [{url: 'http://images.example/red.png'}, {url: 'http://127.0.0.1/red.png'}]})
  assert.equal(errorOf(blocked), {status: 422, code: 'url_blocked'})
  assert.match(blocked.body.error.message, /^items\[1\]\.url: /)
  assert.equal(errorOf(await post({items: [{url: 'ftp://images.example/red.png'}]})), {status: 422, code: 'url_blocked'})
  assert.equal(errorOf(await post({items: urls(1)}, noUrls)), {status: 403, code: 'url_fetch_disabled'})
  assert.equal(errorOf(await post({items: urls(1)}, keyed, {'x-api-key': 'wrong'})), {status: 401, code: 'unauthorized'})
  assert.equal(errorOf(await call(`${keyed.base}/v1/jobs/00000000-0000-4000-8000-000000000000/results`)), {status: 401, code: 'unauthorized'})
  assert.equal(errorOf(await call(`${server.base}/v1/jobs/00000000-0000-4000-8000-000000000000/results`)), {status: 404, code: 'not_found'})
  assert.equal(errorOf(await call(`${server.base}/v1/jobs/00000000-0000-4000-8000-000000000000/results?offset=-1`)), {status: 400, code: 'bad_request'})
  const text = await call(`${server.base}/v1/jobs/images`, {method: 'POST', headers: {'content-type': 'text/plain'}, body: 'x'})
  assert.equal(errorOf(text), {status: 415, code: 'unsupported_media'})
  const big = await call(`${server.base}/v1/jobs/images`, {method: 'POST', body: form('files', [{name: 'a.png', data: Buffer.alloc(40 * 1024)}, {name: 'b.png', data: Buffer.alloc(40 * 1024)}])})
  assert.equal(errorOf(big), {status: 413, code: 'payload_too_large'})
  const many = await call(`${server.base}/v1/jobs/images`, {method: 'POST', body: form('files', Array.from({length: 101}, (_, i) => ({name: `${i}.png`, data: 'x'})))})
  assert.equal(errorOf(many), {status: 413, code: 'too_many_files'})
  assert.equal(await readdir(storage), [], 'a refused upload leaves no folder')
})

test('a client with as many jobs not done as MOD_MAX_JOBS_PER_CLIENT gets 429 too_many_jobs until one ends', async () => {
  // The jobs run until released, so that none ends before the third is asked for, however fast the machine.
  let release = () => {}
  const held = new Promise<void>((resolve) => (release = resolve))
  const queue = createMemoryImageQueue({storage, ttlSeconds: 60, maxPerClient: 2, describeError: () => ({code: 'internal', message: 'x'})})
  queue.work(async (chunk) => {
    await held
    return chunk.items.map((_, i) => JSON.stringify({index: chunk.start + i, source: `${chunk.start + i}`, error: {code: 'internal', message: 'x'}}))
  })
  const holding = await start(engine, settings, {tmpDir: dir.path, imageJobs: queue})
  const submit = () => call(`${holding.base}/v1/jobs/images`, {method: 'POST', body: form('files', Array.from({length: 4}, (_, i) => ({name: `${i}.png`, data: 'x'})))})
  try {
    const first = await submit()
    const second = await submit()
    const third = await submit()
    assert.equal([first.status, second.status], [202, 202])
    assert.equal(errorOf(third), {status: 429, code: 'too_many_jobs'})
    assert.is(third.headers.get('retry-after'), '30')
    release()
    await done(first.body.id, holding)
    await done(second.body.id, holding)
    assert.is((await submit()).status, 202)
  } finally {
    release()
    await holding.stop()
  }
})

test('a read while the job runs answers the lines ready, up to the first item not scored; the next read resumes', async () => {
  let release = () => {}
  const held = new Promise<void>((resolve) => (release = resolve))
  const queue = createMemoryImageQueue({storage, ttlSeconds: 60, maxPerClient: 2, describeError: () => ({code: 'internal', message: 'x'})})
  // The second chunk waits until released; every item's line says where it is.
  queue.work(async (chunk) => {
    if (chunk.index === 1) await held
    return chunk.items.map((_, i) => JSON.stringify({index: chunk.start + i, source: `${chunk.start + i}`, error: {code: 'internal', message: 'x'}}))
  })
  const holding = await start(engine, settings, {tmpDir: dir.path, imageJobs: queue})
  const read = async (id: string, offset: number) => {
    const res = await fetch(`${holding.base}/v1/jobs/${id}/results?offset=${offset}`)
    const text = await res.text()
    return {status: res.headers.get('x-mod-job-status'), indexes: text === '' ? [] : text.trimEnd().split('\n').map((l) => JSON.parse(l).index)}
  }
  const r = await call(`${holding.base}/v1/jobs/images`, {method: 'POST', body: form('files', Array.from({length: 70}, (_, i) => ({name: `${i}.png`, data: 'x'})))})
  while ((await call(`${holding.base}/v1/jobs/${r.body.id}`)).body.progress.chunks_done < 1) await new Promise((resolve) => setTimeout(resolve, 10))
  assert.equal(await read(r.body.id, 0), {status: 'running', indexes: [...Array(32).keys()]})
  assert.equal(await read(r.body.id, 32), {status: 'running', indexes: []})
  release()
  await done(r.body.id, holding)
  assert.equal(await read(r.body.id, 32), {status: 'done', indexes: Array.from({length: 38}, (_, i) => 32 + i)})
  await holding.stop()
})

test('a results read that fails after its first lines went out (Redis gone mid-read) is cut off, not ended or left open', async () => {
  const queue = createMemoryImageQueue({storage, ttlSeconds: 60, maxPerClient: 2, describeError: () => ({code: 'internal', message: 'x'})})
  queue.work(async (chunk) => chunk.items.map((_, i) => JSON.stringify({index: chunk.start + i, source: `${chunk.start + i}`, error: {code: 'internal', message: 'x'}})))
  // The second page of lines (from 256) cannot be read: it fails a moment later, as a Redis command that times out.
  const failing = {...queue, lines: async (id: string, from: number, count: number) => {
    if (from === 0) return queue.lines(id, from, count)
    await new Promise((resolve) => setTimeout(resolve, 200))
    throw new Error('Command timed out')
  }}
  const holding = await start(engine, {...settings, jobs: {...settings.jobs, images: {...settings.jobs.images, maxItems: 1000}}}, {tmpDir: dir.path, imageJobs: failing})
  try {
    const r = await call(`${holding.base}/v1/jobs/images`, {method: 'POST', body: form('files', Array.from({length: 300}, (_, i) => ({name: `${i}.png`, data: 'x'})))})
    await done(r.body.id, holding)
    const res = await fetch(`${holding.base}/v1/jobs/${r.body.id}/results`, {signal: AbortSignal.timeout(10_000)})
    assert.equal([res.status, res.headers.get('x-mod-job-status')], [200, 'done'])
    const read = await res.text().then(
      () => 'ended',
      (e: Error) => (e.name === 'TimeoutError' ? 'left open' : 'cut off'),
    )
    assert.is(read, 'cut off')
    assert.ok(holding.logs.some((l) => l.includes('Command timed out')), holding.logs.join('\n'))
  } finally {
    await holding.stop()
  }
})

test('a chunk whose run fails has the error as each of its items\' lines, so the job still ends', async () => {
  const queue = createMemoryImageQueue({storage, ttlSeconds: 60, maxPerClient: 2, describeError: () => ({code: 'internal', message: 'internal error'})})
  queue.work(async () => {
    throw new Error('the model went away')
  })
  const id = '11111111-1111-4111-8111-111111111111'
  await queue.submit({id, client: 'c', items: [{url: 'http://images.example/red.png', id: 'a'}, {file: 'b.png'}]})
  while ((await queue.get(id))?.status !== 'done') await new Promise((resolve) => setTimeout(resolve, 10))
  assert.equal((await queue.lines(id, 0, 2)).map((l) => JSON.parse(l as string)), [
    {index: 0, id: 'a', source: 'http://images.example/red.png', error: {code: 'internal', message: 'internal error'}},
    {index: 1, source: 'b.png', error: {code: 'internal', message: 'internal error'}},
  ])
  await queue.close()
})

test.run()
