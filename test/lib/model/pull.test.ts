import {createHash} from 'node:crypto'
import {createServer, type Server} from 'node:http'
import type {AddressInfo} from 'node:net'
import {mkdir, mkdtemp, readFile, rm, stat, symlink, writeFile} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {writeToyModel} from '../../../scripts/fixtures.js'
import {loadManifest} from '../../../src/lib/model/manifest.js'
import type {Manifest} from '../../../src/lib/model/manifest-types.js'
import {pullModel, type PulledFile, type PullProgress} from '../../../src/lib/model/pull.js'
import {rejection} from '../../helpers/errors.js'

/** How the test server answers one path: normally (with Range support), or one of the failures under test. */
type Mode = 'ok' | 'cut' | 'stall' | 'silent' | 'headers' | 'trickle' | 'no-range' | 'missing' | 'redirect' | 'endless' | 'loop' | 'file'

const root = await mkdtemp(join(tmpdir(), 'mod-pull-'))
const toy = await writeToyModel(join(root, 'source'))
const bodies = new Map<string, Buffer>()
for (const f of toy.files) bodies.set(`/${f.path}`, await readFile(join(root, 'source', f.path)))

const modes = new Map<string, Mode>()
/** The version a path's answers name (ETag), honouring If-Range: a range asked of another version gets the whole file. */
const etags = new Map<string, string>()
const seen: {path: string; range?: string; ifRange?: string}[] = []

const server: Server = createServer((req, res) => {
  const path = (req.url ?? '/').split('?')[0]
  const ifRange = req.headers['if-range'] as string | undefined
  seen.push({path, range: req.headers.range, ...(ifRange === undefined ? {} : {ifRange})})
  const etag = etags.get(path)
  if (etag !== undefined) res.setHeader('etag', etag)
  const mode = modes.get(path) ?? 'ok'
  // The request taken, never answered.
  if (mode === 'silent') return
  if (mode === 'redirect') {
    res.writeHead(302, {location: `/files${path}`}).end()
    return
  }
  if (mode === 'loop' || mode === 'file') {
    res.writeHead(302, {location: mode === 'loop' ? path : 'file:///etc/passwd'}).end()
    return
  }
  const body = bodies.get(path.replace(/^\/files\//, '/'))
  if (!body || mode === 'missing') {
    res.writeHead(404).end('not found')
    return
  }
  const range = /^bytes=(\d+)-$/.exec(req.headers.range ?? '')
  if (range && mode !== 'no-range' && (ifRange === undefined || ifRange === etag)) {
    const start = Number(range[1])
    if (start >= body.length) {
      res.writeHead(416, {'content-range': `bytes */${body.length}`}).end()
      return
    }
    res.writeHead(206, {'content-length': body.length - start, 'content-range': `bytes ${start}-${body.length - 1}/${body.length}`})
    res.end(body.subarray(start))
    return
  }
  if (mode === 'endless') {
    // No length, and bytes for as long as the client reads.
    res.writeHead(200)
    const more = (error?: Error | null): void => {
      if (!error && !res.destroyed) res.write(Buffer.alloc(65536, 1), more)
    }
    more()
    return
  }
  res.writeHead(200, {'content-length': body.length})
  if (mode === 'cut') {
    // The connection drops mid-body: the client gets a third of the file, then the socket closes.
    res.write(body.subarray(0, Math.floor(body.length / 3)), () => res.socket?.destroy())
    return
  }
  if (mode === 'stall') {
    res.write(body.subarray(0, 65536))
    return
  }
  if (mode === 'headers') {
    res.flushHeaders()
    return
  }
  if (mode === 'trickle') {
    // 4 KiB at once, then a byte every 20 ms: never idle long enough for a timeout between chunks.
    res.write(body.subarray(0, 4096))
    let at = 4096
    const drip = setInterval(() => (res.destroyed ? clearInterval(drip) : res.write(body.subarray(at, ++at))), 20)
    return
  }
  res.end(body)
})
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`

/** The toy manifest as a preset: every file with its URL on the test server; sizes/hashes as given. */
function preset(opts: {hashes?: boolean; prefix?: string} = {}): Manifest {
  return {
    ...toy,
    files: toy.files.map((f) => ({
      path: f.path,
      role: f.role,
      url: `${base}${opts.prefix ?? ''}/${f.path}`,
      ...(opts.hashes === false ? {} : {size: f.size, sha256: f.sha256}),
    })),
  }
}

let n = 0
function reset(): string {
  modes.clear()
  etags.clear()
  seen.length = 0
  return join(root, `dest-${n++}`)
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  )
}

async function assertSameFiles(dest: string): Promise<void> {
  for (const f of toy.files) {
    const got = await readFile(join(dest, f.path))
    assert.ok(got.equals(bodies.get(`/${f.path}`) as Buffer), `${f.path} has the served content`)
  }
}

const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex')

test('an int8 variant is pulled beside the fp32 files when asked, and only then', async () => {
  const encoders = toy.files.filter((f) => f.role === 'image_encoder' || f.role === 'text_encoder')
  for (const f of encoders) bodies.set(`/${f.path.replace('.onnx', '_quantized.onnx')}`, bodies.get(`/${f.path}`) as Buffer)
  const variantFile = (role: 'image_encoder' | 'text_encoder') => {
    const path = (encoders.find((f) => f.role === role) as {path: string}).path.replace('.onnx', '_quantized.onnx')
    return {path, role, url: `${base}/${path}`}
  }
  const manifest: Manifest = {...preset(), variants: {int8: {image_encoder: variantFile('image_encoder'), text_encoder: variantFile('text_encoder')}}}

  const plain = reset()
  await pullModel(manifest, plain)
  assert.not.ok(seen.some((s) => s.path.includes('_quantized')))
  const e = await rejection(loadManifest(plain, 'fast', 'int8'))
  assert.is(e.code, 'model_missing')
  assert.match(e.message, 'mod models pull fast --precision int8')

  const dest = reset()
  const installed = await pullModel(manifest, dest, {variants: ['int8']})
  assert.is(seen.filter((s) => s.path.includes('_quantized')).length, 2)
  const body = bodies.get(`/${variantFile('image_encoder').path}`) as Buffer
  assert.equal([installed.variants?.int8?.image_encoder.size, installed.variants?.int8?.image_encoder.sha256], [body.length, sha(body)])
  const selected = await loadManifest(dest, 'fast', 'int8')
  assert.is(selected.files.find((f) => f.role === 'image_encoder')?.path, variantFile('image_encoder').path)
  assert.is((await loadManifest(dest, 'fast')).files.find((f) => f.role === 'image_encoder')?.path, encoders.find((f) => f.role === 'image_encoder')?.path)
})

test('a pull of a variant that fails leaves the installed model installed: it lost its manifest.json', async () => {
  const encoders = toy.files.filter((f) => f.role === 'image_encoder' || f.role === 'text_encoder')
  const variantFile = (role: 'image_encoder' | 'text_encoder') => {
    const path = (encoders.find((f) => f.role === role) as {path: string}).path.replace('.onnx', '_missing_int8.onnx')
    return {path, role, url: `${base}/${path}`}
  }
  const manifest: Manifest = {...preset(), variants: {int8: {image_encoder: variantFile('image_encoder'), text_encoder: variantFile('text_encoder')}}}
  const dest = reset()
  await pullModel(manifest, dest)
  const before = await readFile(join(dest, 'manifest.json'), 'utf8')
  const e = await rejection(pullModel(manifest, dest, {variants: ['int8']}))
  assert.is(e.code, 'download_failed')
  assert.match(e.message, 'answered HTTP 404')
  assert.is(await readFile(join(dest, 'manifest.json'), 'utf8'), before)
  assert.is((await loadManifest(dest, 'fast')).id, toy.id)
})

test('asking for a variant the model does not offer is a clear configuration error', async () => {
  const e = await rejection(pullModel(preset(), reset(), {variants: ['fp16']}))
  assert.is(e.code, 'invalid_config')
  assert.match(e.message, 'offers no fp16 encoders')
  const f = await rejection(loadManifest(join(root, 'source'), 'fast', 'fp16'))
  assert.is(f.code, 'invalid_config')
})

test('pulls every file, verifies it and writes manifest.json last; the folder then loads', async () => {
  const dest = reset()
  const progress: PullProgress[] = []
  const done: PulledFile[] = []
  const installed = await pullModel(preset(), dest, {onProgress: (p) => progress.push(p), onFile: (f) => done.push(f)})
  await assertSameFiles(dest)
  const expected = {...preset(), files: preset().files.map((f) => ({...f, trust: 'pinned' as const}))}
  assert.equal(installed, expected)
  assert.equal(await loadManifest(dest, 'fast'), expected)
  assert.equal(JSON.parse(await readFile(join(dest, 'manifest.json'), 'utf8')), expected)
  assert.not.ok(await exists(join(dest, '.partial')), 'no partial folder left')
  assert.equal(done, toy.files.map((f) => ({file: f.path, size: f.size, sha256: f.sha256, skipped: false, pinned: true})))
  const vocab = progress.filter((p) => p.file === 'vocab.json')
  assert.equal(vocab.at(-1), {file: 'vocab.json', received: bodies.get('/vocab.json')?.length, total: bodies.get('/vocab.json')?.length})
})

test('without sizes and hashes in the preset, the installed manifest records the computed ones', async () => {
  const dest = reset()
  const done: PulledFile[] = []
  const installed = await pullModel(preset({hashes: false}), dest, {onFile: (f) => done.push(f)})
  for (const f of installed.files) {
    const body = bodies.get(`/${f.path}`) as Buffer
    assert.is(f.size, body.length)
    assert.is(f.sha256, sha(body))
    assert.is(f.trust, 'first_use')
  }
  assert.equal((await loadManifest(dest)).files, installed.files)
  assert.equal(done.map((f) => [f.file, f.pinned, f.sha256]), installed.files.map((f) => [f.path, false, f.sha256]))
})

test('files with a pinned hash are marked pinned, the others first_use, in the installed manifest', async () => {
  const dest = reset()
  const mixed = preset()
  const unpinned = new Set(['vocab.json', 'merges.txt'])
  mixed.files = mixed.files.map((f) => (unpinned.has(f.path) ? {path: f.path, role: f.role, url: f.url} : f))
  const done: PulledFile[] = []
  await pullModel(mixed, dest, {onFile: (f) => done.push(f)})
  const written = JSON.parse(await readFile(join(dest, 'manifest.json'), 'utf8')) as Manifest
  assert.equal(
    written.files.map((f) => [f.path, f.trust]),
    toy.files.map((f) => [f.path, unpinned.has(f.path) ? 'first_use' : 'pinned']),
  )
  assert.equal(
    done.filter((f) => !f.pinned).map((f) => [f.file, f.sha256]),
    toy.files.filter((f) => unpinned.has(f.path)).map((f) => [f.path, sha(bodies.get(`/${f.path}`) as Buffer)]),
  )
})

test('a hash mismatch fails naming the file and both hashes, and leaves no file and no manifest', async () => {
  const dest = reset()
  const wrong = preset()
  const vocab = wrong.files.find((f) => f.path === 'vocab.json') as Manifest['files'][number]
  const real = vocab.sha256 as string
  vocab.sha256 = '0'.repeat(64)
  const err = await rejection(pullModel(wrong, dest))
  assert.is(err.code, 'download_failed')
  assert.match(err.message, 'vocab.json')
  assert.match(err.message, real)
  assert.match(err.message, '0'.repeat(64))
  assert.not.ok(await exists(join(dest, 'vocab.json')), 'no file at the final path')
  assert.not.ok(await exists(join(dest, '.partial', 'vocab.json.part')), 'the bad download is deleted')
  assert.not.ok(await exists(join(dest, 'manifest.json')), 'no manifest.json')
  assert.is((await rejection(loadManifest(dest, 'fast'))).code, 'model_missing')
})

test('a short read keeps the part for resume but never puts it in place; the next pull resumes with Range', async () => {
  const dest = reset()
  modes.set('/tokenizer.json', 'cut')
  const err = await rejection(pullModel(preset(), dest))
  assert.is(err.code, 'download_failed')
  assert.match(err.message, /download of tokenizer\.json stopped after [\d.]+ (bytes|KiB|MiB) of 2.12 MiB .*pull again to resume/)
  assert.not.ok(await exists(join(dest, 'tokenizer.json')), 'no file at the final path')
  assert.not.ok(await exists(join(dest, 'manifest.json')), 'no manifest.json')
  const partSize = (await stat(join(dest, '.partial', 'tokenizer.json.part'))).size
  assert.ok(partSize > 0, 'a part was kept')

  modes.clear()
  seen.length = 0
  await pullModel(preset(), dest)
  assert.equal(
    seen.filter((r) => r.path === '/tokenizer.json'),
    [{path: '/tokenizer.json', range: `bytes=${partSize}-`}],
  )
  await assertSameFiles(dest)
  assert.ok(await exists(join(dest, 'manifest.json')))
})

test('a transfer that brings less than the slowest pace in a span is stopped, its part kept to resume', async () => {
  const dest = reset()
  modes.set('/tokenizer.json', 'trickle')
  const err = await rejection(pullModel(preset(), dest, {slowest: {bytes: 1024, ms: 400}, signal: AbortSignal.timeout(10_000)}))
  assert.is(err.code, 'download_failed')
  assert.match(err.message, /^download of tokenizer\.json stopped after 4\.\d+ KiB of 2\.12 MiB \(the server sent \d+ bytes in the last 400 ms, under the 1 KiB a transfer must bring in that time\); pull again to resume$/)
  assert.ok((await stat(join(dest, '.partial', 'tokenizer.json.part'))).size > 4096, 'the part is kept')
  modes.clear()
  await pullModel(preset(), dest)
  await assertSameFiles(dest)
})

test('a server silent for the idle time (no answer, headers and nothing, bytes and nothing) stops the pull, saying for how long', async () => {
  for (const [mode, words] of [
    ['silent', /^cannot fetch tokenizer\.json from http:\/\/127\.0\.0\.1:\d+\/tokenizer\.json: the server took the request but sent no answer for 300 ms$/],
    ['headers', /^download of tokenizer\.json stopped after 0 bytes of 2\.12 MiB \(the server sent nothing for 300 ms\); pull again to resume$/],
    ['stall', /^download of tokenizer\.json stopped after 64 KiB of 2\.12 MiB \(the server sent nothing for 300 ms\); pull again to resume$/],
  ] as const) {
    const dest = reset()
    modes.set('/tokenizer.json', mode)
    const started = Date.now()
    // Bounded, so that the test ends (failing) without the idle timeout.
    const err = await rejection(pullModel(preset(), dest, {idleMs: 300, signal: AbortSignal.timeout(10_000)}))
    assert.is(err.code, 'download_failed', mode)
    assert.match(err.message, words)
    assert.ok(Date.now() - started < 5000, mode)
  }
  server.closeAllConnections()
})

test('a resume asks its range If-Range the version the part was of, and goes on where the version is the same', async () => {
  const dest = reset()
  etags.set('/tokenizer.json', '"v1"')
  modes.set('/tokenizer.json', 'cut')
  await rejection(pullModel(preset(), dest))
  const kept = (await stat(join(dest, '.partial', 'tokenizer.json.part'))).size
  modes.clear()
  seen.length = 0
  await pullModel(preset(), dest)
  assert.equal(seen.filter((r) => r.path === '/tokenizer.json'), [{path: '/tokenizer.json', range: `bytes=${kept}-`, ifRange: '"v1"'}])
  await assertSameFiles(dest)
})

test('a file without a pinned sha256 that changed on its server since its part was kept is fetched whole, not spliced', async () => {
  const dest = reset()
  const original = bodies.get('/tokenizer.json') as Buffer
  etags.set('/tokenizer.json', '"v1"')
  modes.set('/tokenizer.json', 'cut')
  await rejection(pullModel(preset({hashes: false}), dest))
  const changed = Buffer.from(original.toString('latin1').toUpperCase(), 'latin1')
  bodies.set('/tokenizer.json', changed)
  etags.set('/tokenizer.json', '"v2"')
  modes.clear()
  try {
    await pullModel(preset({hashes: false}), dest)
    assert.ok((await readFile(join(dest, 'tokenizer.json'))).equals(changed), 'the new version, whole')
  } finally {
    bodies.set('/tokenizer.json', original)
  }
})

test('a file without a pinned sha256 whose server named no version starts over: nothing could tell its part is of the same file', async () => {
  const dest = reset()
  modes.set('/tokenizer.json', 'cut')
  await rejection(pullModel(preset({hashes: false}), dest))
  assert.ok((await stat(join(dest, '.partial', 'tokenizer.json.part'))).size > 0)
  modes.clear()
  seen.length = 0
  await pullModel(preset({hashes: false}), dest)
  assert.equal(seen.filter((r) => r.path === '/tokenizer.json'), [{path: '/tokenizer.json', range: undefined}])
  await assertSameFiles(dest)
})

test('a server that ignores Range restarts the file from zero', async () => {
  const dest = reset()
  modes.set('/tokenizer.json', 'cut')
  await rejection(pullModel(preset(), dest))
  modes.set('/tokenizer.json', 'no-range')
  await pullModel(preset(), dest)
  await assertSameFiles(dest)
})

test('a whole part (a pull stopped between the last byte and the rename) is installed without a request when it matches', async () => {
  const dest = reset()
  const body = bodies.get('/merges.txt') as Buffer
  await pullModel(preset(), dest)
  await rm(join(dest, 'merges.txt'))
  await rm(join(dest, 'manifest.json'))
  await mkdir(join(dest, '.partial'), {recursive: true})
  await writeFile(join(dest, '.partial', 'merges.txt.part'), body)
  seen.length = 0
  await pullModel(preset(), dest)
  assert.equal(seen, [])
  await assertSameFiles(dest)
})

test('a part as long as the file that does not match is fetched again from zero, without a range', async () => {
  const dest = reset()
  const body = bodies.get('/merges.txt') as Buffer
  await pullModel(preset(), dest)
  await rm(join(dest, 'merges.txt'))
  await mkdir(join(dest, '.partial'), {recursive: true})
  await writeFile(join(dest, '.partial', 'merges.txt.part'), Buffer.alloc(body.length, 0x20))
  seen.length = 0
  await pullModel(preset(), dest)
  assert.equal(seen.map((r) => r.range), [undefined])
  await assertSameFiles(dest)
})

test('a part as long as a file of no pinned size (416 on resume) is fetched again from zero', async () => {
  const dest = reset()
  const body = bodies.get('/merges.txt') as Buffer
  await pullModel(preset({hashes: false}), dest)
  await rm(join(dest, 'merges.txt'))
  await mkdir(join(dest, '.partial'), {recursive: true})
  await writeFile(join(dest, '.partial', 'merges.txt.part'), Buffer.alloc(body.length, 0x20))
  // A part of the version the server names: only then is a file of no pinned sha256 resumed.
  etags.set('/merges.txt', '"v1"')
  await writeFile(join(dest, '.partial', 'merges.txt.part.version'), '"v1"')
  seen.length = 0
  await pullModel(preset({hashes: false}), dest)
  assert.equal(seen.map((r) => r.range), [`bytes=${body.length}-`, undefined])
  await assertSameFiles(dest)
})

test('a resumed download that does not match its sha256 (the part kept was damaged) is fetched once more from zero', async () => {
  const dest = reset()
  const body = bodies.get('/tokenizer.json') as Buffer
  await mkdir(join(dest, '.partial'), {recursive: true})
  await writeFile(join(dest, '.partial', 'tokenizer.json.part'), Buffer.alloc(1000, 0x20))
  await pullModel(preset(), dest)
  const asked = seen.filter((r) => r.path === '/tokenizer.json').map((r) => r.range)
  assert.equal(asked, ['bytes=1000-', undefined])
  await assertSameFiles(dest)
  assert.ok(body.length > 1000)
})

test('a fresh download that does not match is not fetched again: one request, the mismatch said', async () => {
  const dest = reset()
  const m = preset()
  const vocab = m.files.find((f) => f.path === 'vocab.json') as Manifest['files'][number]
  vocab.sha256 = '0'.repeat(64)
  const err = await rejection(pullModel(m, dest))
  assert.is(err.code, 'download_failed')
  assert.is(seen.filter((r) => r.path === '/vocab.json').length, 1)
})

test('an interrupted pull (abort) leaves no usable half file', async () => {
  const dest = reset()
  modes.set('/tokenizer.json', 'stall')
  const controller = new AbortController()
  const err = await rejection(
    pullModel(preset(), dest, {
      signal: controller.signal,
      onProgress: (p) => {
        if (p.file === 'tokenizer.json' && p.received > 0) controller.abort()
      },
    }),
  )
  assert.is(err.code, 'download_failed')
  assert.match(err.message, /interrupted/)
  assert.not.ok(await exists(join(dest, 'tokenizer.json')), 'no file at the final path')
  assert.not.ok(await exists(join(dest, 'manifest.json')), 'no manifest.json')
  assert.is((await rejection(loadManifest(dest, 'fast'))).code, 'model_missing')
})

test('a second pull into a folder being installed is refused naming the first; the first installs whole files', async () => {
  const dest = reset()
  modes.set('/tokenizer.json', 'stall')
  const controller = new AbortController()
  let stalled!: () => void
  const reached = new Promise<void>((resolve) => (stalled = resolve))
  const first = pullModel(preset(), dest, {
    signal: controller.signal,
    onProgress: (p) => {
      if (p.file === 'tokenizer.json' && p.received > 0) stalled()
    },
  })
  await reached
  // Without the lock it would stall on the same file: bounded, so that the test ends either way.
  const second = await rejection(pullModel(preset(), dest, {signal: AbortSignal.timeout(5000)}))
  assert.is(second.code, 'download_failed')
  assert.match(second.message, new RegExp(`another mod \\(process ${process.pid}\\) is installing there`))
  controller.abort()
  await rejection(first)
  // The lock goes with the first pull: the next one installs, every file as served.
  modes.clear()
  await pullModel(preset(), dest)
  await assertSameFiles(dest)
  assert.not.ok(await exists(join(dest, '.install.lock')))
})

test('the lock of a process that has gone (killed mid-install) is taken over', async () => {
  const dest = reset()
  await mkdir(dest, {recursive: true})
  // A pid no process has: beyond the kernel's pid_max.
  await writeFile(join(dest, '.install.lock'), '4194305\n')
  await pullModel(preset(), dest)
  await assertSameFiles(dest)
})

test('a lock naming this process, which holds none (a container restarted on the same cache, its pids alike), is taken over', async () => {
  const dest = reset()
  await mkdir(dest, {recursive: true})
  await writeFile(join(dest, '.install.lock'), `${process.pid}\n`)
  await pullModel(preset(), dest)
  await assertSameFiles(dest)
  assert.not.ok(await exists(join(dest, '.install.lock')))
})

test('a file without a pinned size from a server that never ends is cut off at the cap for such files, and not kept', async () => {
  const dest = reset()
  modes.set('/vocab.json', 'endless')
  // Bounded in time, so that the test ends (failing) without the cap.
  const err = await rejection(pullModel(preset({hashes: false}), dest, {maxUnpinnedBytes: 1024 * 1024, signal: AbortSignal.timeout(10_000)}))
  assert.is(err.code, 'download_failed')
  assert.match(err.message, 'vocab.json is larger than 1 MiB (1 048 576 bytes), the most a model file without a pinned size is taken')
  assert.not.ok(await exists(join(dest, '.partial', 'vocab.json.part')))
})

test('a full disk is said as such, a failure of this machine, not of the network', async () => {
  const dest = reset()
  await mkdir(join(dest, '.partial'), {recursive: true})
  // Every write to /dev/full fails with ENOSPC.
  await symlink('/dev/full', join(dest, '.partial', 'vocab.json.part'))
  const err = await rejection(pullModel(preset(), dest))
  assert.is(err.code, 'download_failed')
  assert.match(err.message, `the disk holding ${dest} is full: vocab.json stopped after`)
  assert.equal((err as {context?: unknown}).context, {local: true})
})

test('files already installed and matching are not downloaded again', async () => {
  const dest = reset()
  await pullModel(preset(), dest)
  seen.length = 0
  const done: PulledFile[] = []
  await pullModel(preset(), dest, {onFile: (f) => done.push(f)})
  assert.is(seen.length, 0, 'no request at all')
  assert.ok(done.every((f) => f.skipped))

  await rm(join(dest, 'vocab.json'))
  await writeFile(join(dest, 'merges.txt'), Buffer.alloc((bodies.get('/merges.txt') as Buffer).length, 0x41))
  await pullModel(preset(), dest)
  assert.equal(seen.map((r) => r.path).sort(), ['/merges.txt', '/vocab.json'], 'only the missing and the damaged file')
  await assertSameFiles(dest)
})

test('an HTTP error status is download_failed naming the status', async () => {
  const dest = reset()
  modes.set('/config.json', 'missing')
  const err = await rejection(pullModel(preset(), dest))
  assert.is(err.code, 'download_failed')
  assert.match(err.message, /config\.json.*HTTP 404/)
  assert.not.ok(await exists(join(dest, 'manifest.json')))
})

test('a server sending more than the manifest size is cut off and nothing is kept', async () => {
  const dest = reset()
  const small = preset()
  const vocab = small.files.find((f) => f.path === 'vocab.json') as Manifest['files'][number]
  vocab.size = 1000
  const err = await rejection(pullModel(small, dest))
  assert.is(err.code, 'download_failed')
  assert.match(err.message, /vocab\.json is larger than the 1000 bytes the manifest gives/)
  assert.not.ok(await exists(join(dest, 'vocab.json')))
  assert.not.ok(await exists(join(dest, '.partial', 'vocab.json.part')))
})

test('follows redirects (Hugging Face sends downloads to its CDN)', async () => {
  const dest = reset()
  for (const f of toy.files) modes.set(`/r/${f.path}`, 'redirect')
  const m = preset()
  m.files = m.files.map((f) => ({...f, url: `${base}/r/${f.path}`}))
  // The redirect target is /files/r/<path>: serve those under the same bodies.
  for (const f of toy.files) bodies.set(`/r/${f.path}`, bodies.get(`/${f.path}`) as Buffer)
  await pullModel(m, dest)
  await assertSameFiles(dest)
  assert.ok(seen.some((r) => r.path === `/files/r/${toy.files[0].path}`))
})

test('a redirect loop and a redirect to a file: address are named as such, not as a failed connection', async () => {
  for (const [mode, words] of [
    ['loop', 'the server redirected in a loop'],
    ['file', 'it redirected to an address that is not http or https'],
  ] as const) {
    const dest = reset()
    const m = preset()
    m.files = m.files.map((f) => ({...f, url: `${base}/${mode}/${f.path}`}))
    modes.set(`/${mode}/${toy.files[0].path}`, mode)
    const err = await rejection(pullModel(m, dest))
    assert.is(err.code, 'download_failed')
    assert.is(err.message, `cannot fetch ${toy.files[0].path} from ${base}/${mode}/${toy.files[0].path}: ${words}`)
  }
})

test('a file without a download URL is a configuration error before anything is fetched', async () => {
  const dest = reset()
  const m = preset()
  delete m.files[3].url
  const err = await rejection(pullModel(m, dest))
  assert.is(err.code, 'invalid_config')
  assert.match(err.message, m.files[3].path)
  assert.is(seen.length, 0)
})

test.after(async () => {
  server.closeAllConnections()
  await new Promise((resolve) => server.close(resolve))
  await rm(root, {recursive: true, force: true})
})

test.run()
