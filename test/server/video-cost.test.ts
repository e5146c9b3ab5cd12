import {execFile} from 'node:child_process'
import {readFileSync} from 'node:fs'
import {join} from 'node:path'
import {Writable} from 'node:stream'
import {promisify} from 'node:util'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import type {Engine} from '../../src/lib/engine.js'
import {createLogger, logTo} from '../../src/server/logger.js'
import {call, errorOf, fakeEngine, form, multipartParts, rawRequest, start, tempDir, testSettings, toyEngine, until} from './harness.js'

// What a video costs the server: bounded by the limits whatever the clip, and a client that hangs up is no error.

const dir = tempDir('mod-server-video-cost-')
const settings = testSettings(join(dir.path, 'cache'))
const gif = join(dir.path, 'many.gif')

/** The server's pino records, as `mod serve` writes them. */
const records: {level: string; msg: string; err?: {stack?: string}; [field: string]: unknown}[] = []
const logger = createLogger({
  level: 'info',
  destination: new Writable({
    write(chunk, _encoding, done) {
      records.push(JSON.parse(String(chunk)))
      done()
    },
  }),
})

test.before(async () => {
  // 10 000 frames of 32x32 in 1.6 MB: ffmpeg reads a GIF's 1/100 s delays as 1/10 s, so 1000 s of video.
  await promisify(execFile)('ffmpeg', ['-nostdin', '-loglevel', 'error', '-f', 'lavfi', '-i', 'testsrc=s=32x32:r=100', '-t', '100', gif])
})
test.before.each(() => {
  records.length = 0
})
test.after(() => dir.remove())

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

test('a GIF of 10 000 tiny frames at fps=10 is answered 422 video_too_long at once, not after scoring 6000 frames', async () => {
  const engine = toyEngine(settings)
  const s = await start(engine, settings, {tmpDir: dir.path})
  try {
    const started = Date.now()
    const r = await call(`${s.base}/v1/moderate/video?fps=10`, {
      method: 'POST',
      body: form('file', [{name: 'many.gif', data: readFileSync(gif), type: 'image/gif'}]),
      // A hang guard, far above the few seconds the answer takes.
      signal: AbortSignal.timeout(60_000),
    })
    assert.equal(errorOf(r), {status: 422, code: 'video_too_long'})
    assert.is(r.body.error.message, 'the video is longer than the limit of 600 s (MOD_MAX_VIDEO_SECONDS)')
    assert.ok(Date.now() - started < 60_000)
  } finally {
    await s.stop()
    await engine.close()
  }
})

/** Records that would page someone: errors, or anything with a stack. */
const alarming = () => records.filter((r) => r.level === 'error' || r.level === 'fatal' || r.err?.stack !== undefined)

async function withLoggedServer(engine: Engine, run: (base: string) => Promise<void>): Promise<void> {
  const s = await start(engine, settings, {tmpDir: dir.path, logger, log: logTo(logger)})
  try {
    await run(s.base)
  } finally {
    await s.stop()
  }
}

test('a client that hangs up while its video is scored is logged at info as such, with no internal error or stack', async () => {
  let scoring = false
  // As the engine does: the request's signal aborts the work, which rejects with the signal's reason.
  const engine = fakeEngine({
    moderateVideo: (_path, o) =>
      new Promise((_resolve, reject) => {
        scoring = true
        o.signal?.addEventListener('abort', () => reject(o.signal?.reason))
      }),
  })
  await withLoggedServer(engine, async (base) => {
    const controller = new AbortController()
    const pending = fetch(`${base}/v1/moderate/video`, {
      method: 'POST',
      body: form('file', [{name: 'clip.mp4', data: Buffer.alloc(1000, 7)}]),
      signal: controller.signal,
    })
    pending.catch(() => {})
    await until(() => scoring)
    controller.abort()
    // The access line comes when the connection closes, the upload's failure after it (later under load).
    await until(() => records.some((r) => r.msg === 'request') && records.some((r) => r.msg === 'client closed the request')).catch(() => {})
    await sleep(100)
  })
  assert.equal(alarming(), [])
  const closed = records.filter((r) => r.msg === 'client closed the request')
  assert.equal(closed.map((r) => [r.level, r.method, r.path]), [['info', 'POST', '/v1/moderate/video']])
})

test('a client that hangs up halfway through its upload is logged at info as such, with no internal error or stack', async () => {
  let moderated = false
  const engine = fakeEngine({
    moderateVideo: async () => {
      moderated = true
      throw new Error('never reached')
    },
  })
  await withLoggedServer(engine, async (base) => {
    const {head, type} = multipartParts('file', 'clip.mp4')
    const answer = rawRequest(
      `${base}/v1/moderate/video`,
      {headers: {'content-type': type, 'content-length': head.length + 200_000}},
      (req) => {
        req.write(head)
        req.write(Buffer.alloc(50_000, 7), () => setTimeout(() => req.destroy(), 100))
      },
    )
    await answer.catch(() => {})
    // The access line comes when the connection closes, the upload's failure after it (later under load).
    await until(() => records.some((r) => r.msg === 'request') && records.some((r) => r.msg === 'client closed the request')).catch(() => {})
    await sleep(100)
  })
  assert.is(moderated, false)
  assert.equal(alarming(), [])
  const closed = records.filter((r) => r.msg === 'client closed the request')
  assert.equal(closed.map((r) => [r.level, r.method, r.path]), [['info', 'POST', '/v1/moderate/video']])
})

test.run()
