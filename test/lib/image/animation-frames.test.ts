import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {displayDurations, frameIndices, MAX_FRAMES, scoredFrames} from '../../../src/lib/image/animation-frames.js'

test('picks frames evenly by index from first to last', () => {
  assert.equal(frameIndices(1), [0])
  assert.equal(frameIndices(5), [0, 1, 2, 3, 4])
  assert.equal(frameIndices(8), [0, 1, 2, 3, 4, 5, 6, 7])
  assert.equal(frameIndices(20), [0, 3, 5, 8, 11, 14, 16, 19])
  assert.is(MAX_FRAMES, 8)
})

test('a delay of 10 ms or less (0 included) is shown for 100 ms, as browsers show it; longer ones as they are', () => {
  assert.equal(displayDurations([0, 5, 10, 11, 40, 10_000]), [100, 100, 100, 11, 40, 10_000])
})

test('9 frames, one shown 10 s at index 4 and eight 40 ms: the 10 s frame is scored (index spacing skipped it)', () => {
  assert.not.ok(frameIndices(9).includes(4))
  assert.equal(scoredFrames([40, 40, 40, 40, 10_000, 40, 40, 40, 40]), [0, 1, 2, 4, 5, 6, 7, 8])
  // Wherever the long frame is.
  for (let at = 0; at < 9; at++) {
    const delays = Array<number>(9).fill(40)
    delays[at] = 10_000
    const scored = scoredFrames(delays)
    assert.ok(scored.includes(at), `long frame at ${at}: ${scored}`)
    assert.is(scored.length, 8)
  }
})

test('equal delays keep the even spacing by index, whatever the delay (0 included) and the count', () => {
  assert.equal(scoredFrames(Array<number>(16).fill(40)), [0, 2, 4, 6, 9, 11, 13, 15])
  for (const delay of [0, 10, 40, 100, 65_535]) {
    for (let frames = 1; frames <= 200; frames++) assert.equal(scoredFrames(Array<number>(frames).fill(delay)), frameIndices(frames), `${frames} x ${delay} ms`)
  }
  // 0 and 10 ms count as 100 ms: the same as 100 ms frames.
  assert.equal(scoredFrames([0, 100, 10, 100, 0, 100, 100, 100, 100, 0, 100, 100]), frameIndices(12))
})

test('a frame of delay 0 among 20 ms frames is shown 100 ms, the longest: it is scored', () => {
  const delays = Array<number>(12).fill(20)
  delays[4] = 0
  assert.not.ok(frameIndices(12).includes(4))
  assert.ok(scoredFrames(delays).includes(4))
})

test('the longest frame, when no instant falls on it, takes the place of the nearest sampled frame among the shortest', () => {
  // 20 frames of 100 ms and frame 1 of 150 ms: the instants fall on 0, 2, 5, 8, 11, 13, 16 and 19.
  const delays = Array<number>(20).fill(100)
  delays[1] = 150
  assert.equal(scoredFrames(delays), [0, 1, 5, 8, 11, 13, 16, 19])
})

test('two long frames take several instants each: both are scored, and the slots left go to the others by index', () => {
  const delays = Array<number>(16).fill(40)
  delays[1] = 10_000
  delays[9] = 10_000
  assert.equal(scoredFrames(delays), [0, 1, 3, 6, 9, 10, 13, 15])
})

/** A small seeded generator (mulberry32), so that the random delays are the same on every run. */
function random(seed: number): () => number {
  let a = seed
  return () => {
    a = (a + 0x6d2b79f5) | 0
    let t = Math.imul(a ^ (a >>> 15), 1 | a)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296
  }
}

test('whatever the delays: MAX_FRAMES distinct frames in order, the first, the last, the longest and every frame on screen over 1/7 of the time', () => {
  const next = random(7)
  for (let run = 0; run < 2000; run++) {
    const frames = 9 + Math.floor(next() * 60)
    const spiky = next() < 0.5
    const delays = Array.from({length: frames}, () => (spiky && next() < 0.1 ? Math.floor(next() * 20_000) : Math.floor(next() * 120)))
    const durations = displayDurations(delays)
    const total = durations.reduce((sum, d) => sum + d, 0)
    const scored = scoredFrames(delays)
    const what = `delays ${delays}: ${scored}`
    assert.is(scored.length, MAX_FRAMES, what)
    assert.ok(scored.every((f, i) => i === 0 || f > scored[i - 1]), what)
    assert.ok(scored.includes(0) && scored.includes(frames - 1), what)
    assert.ok(scored.includes(durations.indexOf(Math.max(...durations))), what)
    durations.forEach((d, i) => assert.ok(d * (MAX_FRAMES - 1) <= total || scored.includes(i), `frame ${i}, ${what}`))
  }
})

test.run()
