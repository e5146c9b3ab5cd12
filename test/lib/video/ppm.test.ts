import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {isModError} from '../../../src/lib/errors.js'
import {createPpmParser} from '../../../src/lib/video/ppm.js'

function ppm(width: number, height: number, fill: number): Buffer {
  return Buffer.concat([Buffer.from(`P6\n${width} ${height}\n255\n`, 'latin1'), Buffer.alloc(width * height * 3, fill)])
}

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn()
  } catch (e) {
    return isModError(e) ? e.code : 'not a ModError'
  }
  return undefined
}

test('splits several frames that arrive in one chunk', () => {
  const frames = createPpmParser(64).push(Buffer.concat([ppm(2, 1, 10), ppm(1, 2, 20)]))
  assert.equal(
    frames.map((f) => [f.width, f.height, [...f.data]]),
    [
      [2, 1, [10, 10, 10, 10, 10, 10]],
      [1, 2, [20, 20, 20, 20, 20, 20]],
    ],
  )
})

test('assembles frames split across chunks at every byte, header included', () => {
  const stream = Buffer.concat([ppm(3, 2, 7), ppm(2, 2, 9)])
  for (let cut = 1; cut < stream.length; cut++) {
    const parser = createPpmParser(64)
    const frames = [...parser.push(stream.subarray(0, cut)), ...parser.push(stream.subarray(cut))]
    assert.equal(frames.map((f) => [f.width, f.height, f.data.length, f.data[0]]), [[3, 2, 18, 7], [2, 2, 12, 9]], `cut at ${cut}`)
  }
})

test('keeps pixel bytes that look like whitespace after the header', () => {
  const [frame] = createPpmParser(64).push(ppm(1, 1, 0x0a))
  assert.equal([...frame.data], [10, 10, 10])
})

test('returns nothing until a frame is complete', () => {
  const parser = createPpmParser(64)
  assert.equal(parser.push(ppm(4, 4, 1).subarray(0, 30)), [])
})

test('refuses a frame larger than the side limit before allocating it', () => {
  assert.is(codeOf(() => createPpmParser(512).push(Buffer.from('P6\n9999 9999\n255\n'))), 'internal')
  assert.is(codeOf(() => createPpmParser(512).push(Buffer.from('P6\n512 513\n255\n'))), 'internal')
  assert.is(createPpmParser(512).push(ppm(512, 1, 0)).length, 1)
})

test('a picture of stacked parts is given as its parts, top first, each its share of the height', () => {
  const stacked = (...fills: number[]): Buffer => {
    const frame = ppm(2, 2 * fills.length, 0)
    const header = frame.length - 2 * 2 * 3 * fills.length
    fills.forEach((fill, k) => frame.fill(fill, header + k * 12, header + (k + 1) * 12))
    return frame
  }
  const parts = createPpmParser(2, 4).push(Buffer.concat([stacked(255, 0, 40, 9), stacked(1, 2, 3, 4)]))
  assert.equal(
    parts.map((f) => [f.width, f.height, [...new Set(f.data)]]),
    [255, 0, 40, 9, 1, 2, 3, 4].map((v) => [2, 2, [v]]),
  )
})

test('a picture of stacked parts is checked for its parts: each at most the side limit, the height a multiple of their count', () => {
  assert.is(createPpmParser(512, 2).push(ppm(512, 1024, 0)).length, 2)
  assert.is(codeOf(() => createPpmParser(512, 2).push(Buffer.from('P6\n512 1026\n255\n'))), 'internal')
  assert.is(codeOf(() => createPpmParser(512, 2).push(Buffer.from('P6\n4 3\n255\n'))), 'internal')
  assert.is(codeOf(() => createPpmParser(512, 4).push(Buffer.from('P6\n4 6\n255\n'))), 'internal')
})

test('refuses a stream that is not 8-bit PPM', () => {
  assert.is(codeOf(() => createPpmParser(64).push(Buffer.from('P6\n2 2\n65535\n'))), 'internal')
  assert.is(codeOf(() => createPpmParser(64).push(Buffer.alloc(100, 0x41))), 'internal')
})

test.run()
