// `mod serve` as a process: MOD_PRELOAD on and off, a model that cannot load, and a graceful SIGTERM.
// These run the built CLI (npm test builds first).
import {cpSync, existsSync, mkdirSync, readdirSync, statSync, utimesSync, writeFileSync} from 'node:fs'
import {basename, join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {readSettings, type Settings} from '../../src/lib/config/settings.js'
import {
  call,
  errorOf,
  form,
  multipartParts,
  rawRequest,
  red,
  serveProcess,
  start,
  tempDir,
  testSettings,
  TOY_MODEL,
  toyEngine,
  writeRednessPolicy,
  type ServeProcess,
} from './harness.js'
import {signalStates} from '../helpers/signals.js'
import {warmCacheDir} from '../helpers/warm-cache.js'

const dir = tempDir('mod-server-lifecycle-')
const cacheDir = join(dir.path, 'cache')
const policy = writeRednessPolicy(dir.path)
const toyEnv = {MOD_CACHE_DIR: warmCacheDir(cacheDir), MOD_MODEL_DIR: TOY_MODEL, MOD_CONFIG: policy}

/** The liveness part of /health (its `signals` are checked where signals are tested). */
const liveness = ({status, model_loaded}: {status: string; model_loaded: boolean}) => ({status, model_loaded})

/**
 * The temporary folder of the default server: its job storage holds, from before it starts, the folders of two jobs a
 * killed server left, one unchanged for two hours and one recent.
 */
const tmp = join(dir.path, 'tmp')
const storage = join(tmp, `mod-jobs-${process.getuid?.()}`)
const uploads = join(tmp, `mod-uploads-${process.getuid?.()}`)
const [oldJob, recentJob] = ['6f2c9a4e-1b7d-4c3e-8f5a-2d9b0e7c1a43', '6f2c9a4e-1b7d-4c3e-8f5a-2d9b0e7c1a44'].map((id) => join(storage, id))
for (const folder of [oldJob, recentJob]) {
  mkdirSync(folder, {recursive: true, mode: 0o700})
  writeFileSync(join(folder, 'upload'), 'a video')
}
const twoHoursAgo = new Date(Date.now() - 2 * 3600_000)
utimesSync(join(oldJob, 'upload'), twoHoursAgo, twoHoursAgo)
utimesSync(oldJob, twoHoursAgo, twoHoursAgo)

let defaults: ServeProcess | undefined
/** `mod serve` on the toy model with the defaults, started once for the tests that use it. */
const defaultServe = () => (defaults ??= serveProcess(['--port', '0'], {...toyEnv, TMPDIR: tmp}))

test.after(() => {
  defaults?.child.kill('SIGKILL')
  dir.remove()
})

test('flags win over MOD_HOST, MOD_PORT and MOD_WORKERS, which win over the defaults', () => {
  const env = {MOD_HOST: '0.0.0.0', MOD_PORT: '9000', MOD_WORKERS: '3'}
  const address = ({server: s}: Settings) => ({host: s.host, port: s.port, workers: s.workers})
  assert.equal(address(readSettings({}, {})), {host: '127.0.0.1', port: 8000, workers: 1})
  assert.equal(address(readSettings({}, env)), {host: '0.0.0.0', port: 9000, workers: 3})
  assert.equal(address(readSettings({host: '::1', port: 0, workers: 1}, env)), {host: '::1', port: 0, workers: 1})
  for (const [bad, name] of [[{MOD_PORT: '70000'}, 'MOD_PORT'], [{MOD_PORT: 'http'}, 'MOD_PORT'], [{MOD_WORKERS: '0'}, 'MOD_WORKERS'], [{MOD_HOST: ' '}, 'MOD_HOST']] as const) {
    assert.throws(() => readSettings({}, bad), (e: {code: string; message: string}) => e.code === 'invalid_config' && e.message.startsWith(`${name}=`))
  }
})

test('with MOD_PRELOAD (the default) the model is loaded before the port opens', async () => {
  const [, base] = await defaultServe().waitFor(/^listening on (http:\/\/127\.0\.0\.1:\d+)$/)
  assert.equal(liveness((await call(`${base}/health`)).body), {status: 'ok', model_loaded: true})
  // The last test stops this process with SIGTERM (exit 0).
})

test('with no CLIP model pulled, serve starts on the embedded specialist, logs what is not evaluated, and answers with it', async () => {
  const serve = serveProcess(['--port', '0'], {MOD_CACHE_DIR: warmCacheDir(join(dir.path, 'nothing-pulled'))})
  try {
    const [, base] = await serve.waitFor(/^listening on (http:\/\/127\.0\.0\.1:\d+)$/)
    assert.ok(
      serve.lines.some((l) => l.startsWith('not evaluated: violence, gore, weapons, hate_symbols, drugs, self_harm, alcohol, tobacco (no CLIP model installed; run `mod models pull fast` to score them)')),
      serve.lines.join('\n'),
    )
    assert.equal((await call(`${base}/health`)).body.signals, signalStates({clip: 'not_installed', nsfw: 'loaded', nudenet: 'not_installed'}))
    const r = await call(`${base}/v1/moderate`, {method: 'POST', body: form('file', [{name: 'red.png', data: await red()}])})
    assert.is(r.status, 200)
    assert.equal(r.body.labels.map((l: {name: string}) => l.name).sort(), ['nudity', 'sexual_activity', 'suggestive'])
    assert.equal(r.body.not_evaluated, ['violence', 'gore', 'weapons', 'hate_symbols', 'drugs', 'self_harm', 'alcohol', 'tobacco'])
    serve.child.kill('SIGTERM')
    assert.is(await serve.exited, 0)
  } finally {
    serve.child.kill('SIGKILL')
  }
})

test('a second signal while the first drains ends serve at once of that signal (an exit there aborted in onnxruntime while a model ran)', async () => {
  // The first SIGTERM starts a drain of 5 s (/ready answering 503): the second comes during it.
  const serve = serveProcess(['--port', '0'], {...toyEnv, MOD_DRAIN_DELAY_MS: '5000'})
  try {
    await serve.waitFor(/^listening on http:\/\/127\.0\.0\.1:\d+$/)
    serve.child.kill('SIGTERM')
    await serve.waitFor(/draining|SIGTERM/i)
    serve.child.kill('SIGINT')
    assert.is(await serve.exited, 'SIGINT')
    assert.ok(serve.lines.some((l) => l === 'SIGINT again: exiting without waiting'), serve.lines.join('\n'))
  } finally {
    serve.child.kill('SIGKILL')
  }
})

test('with MOD_PRELOAD=false the model loads on the first moderation (MOD_PORT used without --port)', async () => {
  const serve = serveProcess([], {...toyEnv, MOD_PRELOAD: 'false', MOD_PORT: '0'})
  try {
    const [, base] = await serve.waitFor(/^listening on (http:\/\/127\.0\.0\.1:\d+)$/)
    assert.equal(liveness((await call(`${base}/health`)).body), {status: 'ok', model_loaded: false})
    const r = await call(`${base}/v1/moderate`, {method: 'POST', body: form('file', [{name: 'red.png', data: await red()}])})
    assert.is(r.status, 200)
    assert.is(r.body.is_safe, false)
    assert.equal(liveness((await call(`${base}/health`)).body), {status: 'ok', model_loaded: true})
    serve.child.kill('SIGTERM')
    assert.is(await serve.exited, 0)
  } finally {
    serve.child.kill('SIGKILL')
  }
})

test('without Redis, serve removes the job folders a killed server left (unchanged for an hour), and keeps a recent one', async () => {
  const serve = defaultServe()
  await serve.waitFor(/removed 1 folder\(s\) of jobs no queue has/)
  assert.equal(readdirSync(storage), [basename(recentJob)])
  // A video upload makes this process's upload folder, which its graceful stop removes (the SIGTERM test below).
  const [, base] = await serve.waitFor(/^listening on (http:\/\/127\.0\.0\.1:\d+)$/)
  const video = await call(`${base}/v1/moderate/video`, {method: 'POST', body: form('file', [{name: 'not.mp4', data: 'not a video'}])})
  assert.is(video.status, 415)
  assert.is(readdirSync(uploads).length, 1)
})

test('with MOD_PRELOAD a model that cannot load stops the start with exit code 2', async () => {
  // A model folder whose files are all there at their recorded sizes, one of them zeros: it passes the start-up
  // check, then fails to load (in a cache of its own: a warm one holds the good file's optimised graph).
  const empty = join(dir.path, 'no-model')
  cpSync(TOY_MODEL, empty, {recursive: true})
  const encoder = join(empty, 'onnx', 'text_model.onnx')
  writeFileSync(encoder, Buffer.alloc(statSync(encoder).size))
  const serve = serveProcess(['--port', '0'], {...toyEnv, MOD_MODEL_DIR: empty, MOD_CACHE_DIR: join(dir.path, 'cold-cache')})
  try {
    assert.is(await serve.exited, 2)
    assert.match(serve.lines.join('\n'), /^the model could not be loaded: invalid_config: cannot load .*Protobuf parsing failed/m)
    assert.not.match(serve.lines.join('\n'), /listening on/)
  } finally {
    serve.child.kill('SIGKILL')
  }
})

test("a policy left with no category to check (the specialist's three disabled, no CLIP model) stops the start, exit 2", async () => {
  const off = join(dir.path, 'nothing-left.yaml')
  writeFileSync(off, 'categories:\n  nudity: {enabled: false}\n  sexual_activity: {enabled: false}\n  suggestive: {enabled: false}\n')
  const serve = serveProcess(['--port', '0'], {MOD_CACHE_DIR: warmCacheDir(join(dir.path, 'no-models')), MOD_CONFIG: off})
  try {
    assert.is(await serve.exited, 2)
    assert.match(serve.lines.join('\n'), /^the model could not be loaded: model_missing: none of the policy's categories \(violence, .*\) can be checked: /m)
    assert.not.match(serve.lines.join('\n'), /listening on/)
  } finally {
    serve.child.kill('SIGKILL')
  }
})

test('without preload, a model that fails to load answers 503 model_unavailable with Retry-After; /ready says it failed, and each attempt is logged', async () => {
  const empty = join(dir.path, 'still-no-model')
  mkdirSync(empty)
  const settings = testSettings(cacheDir, {preload: false})
  const server = await start(toyEngine(settings, empty), settings)
  try {
    // The first probe starts the load; once it has failed (logged), the next says so, and tries again.
    const ready = async () => (await call(`${server.base}/ready`)).body.error.message
    assert.is(await ready(), 'the model is loading')
    for (let tries = 0; tries < 50 && server.logs.length === 0; tries++) await new Promise((resolve) => setTimeout(resolve, 100))
    assert.match(server.logs[0] ?? '', /^model could not be loaded: model_missing: /)
    assert.is(await ready(), 'the model could not be loaded (the server log says why); trying again')
    for (let tries = 0; tries < 50 && server.logs.length === 1; tries++) await new Promise((resolve) => setTimeout(resolve, 100))
    assert.is(server.logs.length, 2)
    for (let i = 0; i < 2; i++) {
      const r = await call(`${server.base}/v1/moderate`, {method: 'POST', body: form('file', [{name: 'red.png', data: await red()}])})
      assert.equal(errorOf(r), {status: 503, code: 'model_unavailable'})
      assert.is(r.headers.get('retry-after'), '10')
      assert.is(r.body.error.message, 'the model could not be loaded; try again later')
    }
    assert.equal(liveness((await call(`${server.base}/health`)).body), {status: 'ok', model_loaded: false})
    assert.is(server.logs.length, 4)
    assert.ok(server.logs.every((line) => line.startsWith('model could not be loaded: model_missing: ')), server.logs.join('\n'))
  } finally {
    await server.stop()
  }
})

// SIGHUP too: a closed terminal or ssh session must not cut the requests in flight (it killed the server at once).
for (const signal of ['SIGTERM', 'SIGHUP'] as const) {
  test(`${signal} stops accepting connections, finishes the request in flight, then exits 0`, async () => {
    // The first stops the server the earlier tests share; the second starts its own.
    const serve = signal === 'SIGTERM' ? defaultServe() : serveProcess(['--port', '0'], toyEnv)
    try {
      const [, base] = await serve.waitFor(/^listening on (http:\/\/127\.0\.0\.1:\d+)$/)
      const image = await red()
      const {head, tail, type} = multipartParts('file', 'slow.png')
      let finish = () => {}
      const answer = rawRequest(
        `${base}/v1/moderate`,
        {headers: {'content-type': type, 'content-length': head.length + image.length + tail.length}, timeoutMs: 15_000},
        (req) => {
          req.write(head)
          req.write(image.subarray(0, 10))
          finish = () => req.end(Buffer.concat([image.subarray(10), tail]))
        },
      )
      await new Promise((resolve) => setTimeout(resolve, 200))
      serve.child.kill(signal)
      await serve.waitFor(/^stopping: finishing 1 request\(s\) in flight$/)
      const refused = await fetch(`${base}/health`).then(
        () => 'answered',
        (e: {cause?: {code?: string}}) => e.cause?.code,
      )
      assert.is(refused, 'ECONNREFUSED')
      finish()
      const r = await answer
      assert.is(r.status, 200)
      assert.is(JSON.parse(r.body).source, 'slow.png')
      assert.is(r.headers.connection, 'close')
      assert.is(await serve.exited, 0)
      // Stopped gracefully, it leaves no upload folder of its own, not only for the next start to remove, nor the
      // shared root, which no other process uses.
      if (signal === 'SIGTERM') assert.not.ok(existsSync(uploads))
    } finally {
      serve.child.kill('SIGKILL')
    }
  })
}

test.run()
