import {execFile} from 'node:child_process'
import {readdirSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {decodeFrames} from '../../../src/lib/video/frames.js'
import {moduleFor, nodeArgs, SCRIPT_EXT} from '../../helpers/ts-script.js'
import {childProcesses, colourClip, fakeFfmpeg, tempDir, decodeFailure, decodeOptions} from './helpers.js'

// How decodeFrames treats the ffmpeg process: stalls, a slow consumer, leaving early, aborting, no files.

const tmp = tempDir()
const clip = (name: string): string => join(tmp.dir, name)

test.before(async () => {
  await Promise.all([colourClip(clip('rbr.mp4'), ['red', 'blue', 'red'], 2), colourClip(clip('long.mp4'), ['green'], 30, {rate: 2})])
})
test.after(() => tmp.remove())

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

test('a decoder that never writes is killed after the stall timeout', async () => {
  const stuck = fakeFfmpeg(clip('stuck.sh'), 'exec sleep 30')
  const started = Date.now()
  assert.equal(await decodeFailure(clip('rbr.mp4'), {ffmpeg: stuck, stallTimeoutMs: 300}), {
    code: 'unsupported_media',
    message: 'the video decoder made no progress for 0.3 s; the file may be damaged',
    decoded: 0,
  })
  assert.ok(Date.now() - started < 3000)
  assert.equal(childProcesses(), [])
})

test('a decoder that stalls after some frames is killed too', async () => {
  // Lists one packet when asked for the listing, then gives one frame when asked to decode and stops there.
  const halting = fakeFfmpeg(
    clip('halting.sh'),
    "case \"$*\" in *pipe:3*) printf 'P6\\n2 1\\n255\\nabcdef'; exec sleep 30;; esac\nprintf '#tb 0: 1/10\\n0, 0, 0, 1, 9, 0x0\\n'",
  )
  assert.equal(await decodeFailure(clip('rbr.mp4'), {ffmpeg: halting, stallTimeoutMs: 800}), {
    code: 'unsupported_media',
    message: 'the video decoder made no progress for 0.8 s; the file may be damaged',
    decoded: 1,
  })
  assert.equal(childProcesses(), [])
})

test('a decoder slower than its time for the longest video allowed is killed: video_too_long', async () => {
  // Lists one packet, then gives a frame every 0.1 s: 10 frames at 10 fps fit in 1 s, which may take 0.5 s.
  const slow = fakeFfmpeg(
    clip('slow.sh'),
    "case \"$*\" in *pipe:3*) while :; do printf 'P6\\n2 1\\n255\\nabcdef'; sleep 0.1; done;; esac\nprintf '#tb 0: 1/10\\n0, 0, 0, 1, 9, 0x0\\n'",
  )
  const failure = await decodeFailure(clip('rbr.mp4'), {ffmpeg: slow, fps: 10, maxSeconds: 1, decodeTimePerSecond: 0.5})
  assert.equal([failure.code, failure.message], ['video_too_long', 'decoding the video took longer than 0.5 s, the limit for videos of up to 1 s'])
  assert.ok(failure.decoded < 10, `${failure.decoded} frames`)
  assert.equal(childProcesses(), [])
})

test('listing the packets counts in that time too', async () => {
  // A packet every 0.1 s, forever: each one is progress, but the listing never ends.
  const endless = fakeFfmpeg(clip('endless.sh'), "printf '#tb 0: 1/10\\n'\nwhile :; do printf '0, 0, 0, 1, 9, 0x0\\n'; sleep 0.1; done")
  const started = Date.now()
  assert.equal(await decodeFailure(clip('rbr.mp4'), {ffmpeg: endless, maxSeconds: 1, decodeTimePerSecond: 0.5}), {
    code: 'video_too_long',
    message: 'reading the video took longer than 0.5 s, the limit for videos of up to 1 s',
    decoded: 0,
  })
  assert.ok(Date.now() - started < 5000)
  assert.equal(childProcesses(), [])
})

test('a slow consumer is not taken for a stall, and holds ffmpeg back instead of buffering frames', async () => {
  const gen = decodeFrames(clip('long.mp4'), decodeOptions({fps: 10, stallTimeoutMs: 1000}))
  assert.is((await gen.next()).done, false)
  await sleep(1200)
  // Without backpressure, 300 frames of 12 KiB would all be decoded by now and ffmpeg would have exited;
  // had the watchdog counted our pause, it would have killed ffmpeg.
  assert.equal(childProcesses().map((p) => [p.name, p.state === 'Z']), [['ffmpeg', false]])
  for (let i = 1; i <= 3; i++) {
    const next = await gen.next()
    assert.equal(next.done ? 'done' : [next.value.index, next.value.time], [i, i / 10])
  }
  await gen.return({frames: 0, duration: 0})
  assert.equal(childProcesses(), [])
})

test('leaving the loop early kills ffmpeg', async () => {
  let seen = 0
  for await (const frame of decodeFrames(clip('long.mp4'), decodeOptions({fps: 10}))) {
    seen = frame.index + 1
    if (seen === 2) break
  }
  assert.is(seen, 2)
  assert.equal(childProcesses(), [])
})

test('aborting the signal kills ffmpeg and rejects with the reason', async () => {
  const controller = new AbortController()
  const gen = decodeFrames(clip('long.mp4'), decodeOptions({fps: 10, signal: controller.signal}))
  await gen.next()
  controller.abort(new Error('client went away'))
  let reason = ''
  try {
    while (!(await gen.next()).done);
  } catch (e) {
    reason = (e as Error).message
  }
  assert.is(reason, 'client went away')
  assert.equal(childProcesses(), [])
})

test('decoding writes no files, neither in the working folder nor in TMPDIR', async () => {
  const work = tempDir()
  const module = moduleFor(fileURLToPath(new URL('../../../src/lib/video/frames.ts', import.meta.url)))
  const script = join(tmp.dir, `no-files${SCRIPT_EXT}`)
  writeFileSync(
    script,
    `import {decodeFrames, DEFAULT_DECODE_LIMITS} from ${JSON.stringify(module)}
let n = 0
for await (const _ of decodeFrames(${JSON.stringify(clip('rbr.mp4'))}, {ffmpeg: 'ffmpeg', fps: 2, maxSeconds: 60, maxPixels: 1e8, ...DEFAULT_DECODE_LIMITS})) n++
console.log(n)`,
  )
  try {
    const out = await new Promise<string>((resolve, reject) =>
      execFile(process.execPath, nodeArgs(script), {cwd: work.dir, env: {...process.env, TMPDIR: work.dir}}, (e, stdout) =>
        e ? reject(e) : resolve(stdout),
      ),
    )
    assert.is(out.trim(), '12')
    // tsx-* is the child's own TypeScript cache, not ours.
    assert.equal(readdirSync(work.dir).filter((name) => !name.startsWith('tsx-')), [])
  } finally {
    work.remove()
  }
})

test.run()
