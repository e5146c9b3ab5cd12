// The code reader in its worker thread: it reads what the reader in the event loop's thread reads, leaves that
// thread free while zxing works on noise frames, and cuts a frame short at its time limit, starting a new thread
// for the next frame.
import {spawn} from 'node:child_process'
import {randomBytes} from 'node:crypto'
import {fileURLToPath} from 'node:url'
import {Worker} from 'node:worker_threads'

import sharp from 'sharp'
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {codesEvidence} from '../../../../src/lib/signals/codes/evidence.js'
import {openCodeReader} from '../../../../src/lib/signals/codes/read.js'
import {openThreadedCodeReader} from '../../../../src/lib/signals/codes/reader-thread.js'
import type {RgbImage} from '../../../../src/lib/types.js'
import {testUnless} from '../../../helpers/skip.js'
import {nodeArgs} from '../../../helpers/ts-script.js'
import {drawCode, photo, printOnPhoto, resizeCode} from './draw.js'

async function raw(png: Buffer): Promise<RgbImage> {
  const {data, info} = await sharp(png).removeAlpha().raw().toBuffer({resolveWithObject: true})
  return {data, width: info.width, height: info.height}
}

/** Noise, full-HD by default: zxing looks long at it (some 100 ms) and finds nothing. */
const noise = (width = 1920, height = 1080): RgbImage => ({data: randomBytes(width * height * 3), width, height})

test('the thread reads the same codes, with the same boxes, as the reader in this thread', async () => {
  const qr = await resizeCode(await drawCode('QRCode', 'https://shop.example/menu', 4), 160)
  const ean = await resizeCode(await drawCode('EAN-13', '4006381333931', 3), 240)
  const {image} = await printOnPhoto('coffee.jpg', 800, 600, [
    {code: qr, left: 60, top: 80},
    {code: ean, left: 420, top: 300},
  ])
  const here = await openCodeReader()
  const thread = openThreadedCodeReader()
  try {
    const expected = here.read(image)
    assert.is(expected.length, 2)
    assert.equal(await thread.read(image), {codes: expected, timedOut: false})
    assert.equal(await thread.read(await photo('coffee.jpg')), {codes: [], timedOut: false})
  } finally {
    await here.close()
    await thread.close()
  }
})

test('while the thread reads noise frames, a timer set every 10 ms keeps firing, never later than 100 ms or half the reading', async () => {
  const thread = openThreadedCodeReader()
  const frames = [noise(), noise(), noise(), noise()]
  try {
    // The thread started and ready: what follows measures reading alone.
    await thread.read({data: Buffer.alloc(16 * 16 * 3, 255), width: 16, height: 16})
    let last = performance.now()
    let worst = 0
    let fired = 0
    const tick = (): void => {
      const now = performance.now()
      worst = Math.max(worst, now - last - 10)
      last = now
    }
    const ticks = setInterval(() => {
      fired++
      tick()
    }, 10)
    const started = performance.now()
    const read = await Promise.all(frames.map((f) => thread.read(f)))
    const took = performance.now() - started
    // The time since the last tick counts too: reading on this thread would end just before here, no tick after it.
    tick()
    clearInterval(ticks)
    assert.equal(read, frames.map(() => ({codes: [], timedOut: false})))
    assert.ok(took > 100, `${took.toFixed(0)} ms for four noise frames: zxing did work`)
    // Read on this thread, the four frames would hold the timer for all of `took`, and it would not fire. A loaded
    // machine (the suite's other files) slows the reading and delays timers alike: half the reading's time bounds the
    // delay there, and the timer fires at least a quarter of its times.
    assert.ok(worst < Math.max(100, took / 2), `a timer fired ${worst.toFixed(0)} ms late while the reading took ${took.toFixed(0)} ms`)
    assert.ok(fired >= took / 40, `the timer fired ${fired} times in ${took.toFixed(0)} ms`)
  } finally {
    await thread.close()
  }
})

test('a frame past its time limit is cut short (no codes, timedOut), and the next frame is read by a new thread', async () => {
  const qr = await raw((await drawCode('QRCode', 'after the cut', 3)).png)
  // 4K noise read whole and inverted too: some 600 ms of zxing's time, against a small code's few milliseconds.
  const thread = openThreadedCodeReader({timeoutMs: 200, inverted: true, maxPixels: 3840 * 2160})
  try {
    assert.equal(await thread.read(noise(3840, 2160)), {codes: [], timedOut: true})
    const next = await thread.read(qr)
    assert.equal([next.codes.map((c) => c.payload), next.timedOut], [['after the cut'], false])
  } finally {
    await thread.close()
  }
  const closed = await thread.read(qr).then(
    () => undefined,
    (e: Error) => e.message,
  )
  assert.is(closed, 'the code reader is closed')
})

testUnless(
  'cpuUsage' in Worker.prototype ? undefined : `Node.js ${process.version} does not measure a worker thread's CPU time (24.6 and later do, 22.23 too): the limit is wall time`,
  "the limit is the thread's CPU time: a frame whose reading waited 1.5 s for the CPU (its process stopped) is read whole under a 1 s limit",
  async () => {
    const child = spawn(process.execPath, [...nodeArgs(fileURLToPath(new URL('./stopped-read.ts', import.meta.url))), '1000'], {stdio: ['ignore', 'pipe', 'inherit']})
    let out = ''
    child.stdout.on('data', (d: Buffer) => {
      out += d
      if (out !== 'asked\n') return
      // Wall time passes for the frame, the thread's CPU time does not (a full-HD noise frame takes some 100-300 ms of it).
      child.kill('SIGSTOP')
      setTimeout(() => child.kill('SIGCONT'), 1500)
    })
    const code = await new Promise((resolve) => child.on('close', resolve))
    assert.is(code, 0)
    assert.equal(JSON.parse(out.split('\n')[1]), {codes: [], timedOut: false})
  },
)

test('a frame cut short says codes_truncated in the result; the field is absent otherwise', () => {
  const code = {format: 'qr_code' as const, payload: 'x', box: [0, 0, 1, 1] as [number, number, number, number]}
  assert.equal(codesEvidence.image([{codes: [code], hits: []}, {codes: [], hits: [], truncated: true}]), {codes: [code], code_hits: [], codes_truncated: true})
  assert.equal(codesEvidence.image([{codes: [code], hits: []}]), {codes: [code], code_hits: []})
  const segment = codesEvidence.segment!('contact_info')
  segment.add({codes: [], hits: [], truncated: true}, 0)
  assert.equal(segment.fields(), {codes: [], code_hits: [], codes_truncated: true})
})

test.run()
