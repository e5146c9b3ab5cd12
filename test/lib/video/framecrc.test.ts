import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {createPacketClock} from '../../../src/lib/video/framecrc.js'

const LISTING = `#software: Lavf59.27.100
#tb 0: 1/12800
#media_type 0: video
#codec_id 0: mpeg4
#dimensions 0: 64x64
#sar 0: 1/1
0,          0,          0,      512,       78, 0x148b26cd
0,        512,       1024,      512,       17, 0x334d06b5, F=0x0
0,       1024,        512,      512,       17, 0x2c9a0626, F=0x0
`

test('gives the end of the latest packet in seconds, whatever the packet order', () => {
  const clock = createPacketClock()
  clock.push(Buffer.from(LISTING))
  assert.is(clock.end(), 1536 / 12800)
})

test('counts the packets of every stream listed, each in its own time base', () => {
  const clock = createPacketClock()
  clock.push(Buffer.from('#tb 0: 1/10\n#tb 1: 1/1000\n#tb 2: 1/1000\n0, 0, 0, 1, 9, 0x1\n1, 500, 500, 100, 9, 0x2\n1, 4000, 4000, 500, 9, 0x3\n0, 1, 1, 1, 9, 0x4\n'))
  assert.equal([clock.packets(), clock.end(), clock.span()], [4, 4.5, 4.5])
  // Per stream, in order: the third is listed without a packet (declared, but empty).
  assert.equal(clock.streamPackets(), [2, 2, 0])
})

test('gives the span the packets cover from the earliest one, for a stream that does not start at 0', () => {
  const clock = createPacketClock()
  assert.is(clock.span(), undefined)
  clock.push(Buffer.from('#tb 0: 1/100\n0,        150,        150,       10,       25, 0x1\n0,        160,        160,       10,       25, 0x2\n'))
  assert.is(clock.end(), 1.7)
  assert.is(clock.span()?.toFixed(6), '0.200000')
})

test('reads lines split across chunks', () => {
  const clock = createPacketClock()
  const bytes = Buffer.from(LISTING)
  for (let i = 0; i < bytes.length; i += 7) clock.push(bytes.subarray(i, i + 7))
  assert.is(clock.end(), 0.12)
})

test('knows nothing before the time base and the first packet', () => {
  const clock = createPacketClock()
  assert.is(clock.end(), undefined)
  clock.push(Buffer.from('0,          0,          0,      512,       78, 0x148b26cd\n#tb 0: 1/100\n'))
  assert.is(clock.end(), undefined)
  clock.push(Buffer.from('0,        240,        240,       10,       25, 0x26f901ee, F=0x0\n'))
  assert.is(clock.end(), 2.5)
})

test('skips packets without a timestamp', () => {
  const clock = createPacketClock()
  clock.push(Buffer.from('#tb 0: 1/1000\n0, 0, 1000, 40, 9, 0x0\n0, -9223372036854775808, -9223372036854775808, 0, 9, 0x0\n'))
  assert.is(clock.end(), 1.04)
})

test('counts the packets, those without a timestamp too', () => {
  const clock = createPacketClock()
  assert.is(clock.packets(), 0)
  clock.push(Buffer.from(`${LISTING}0,-9223372036854775808,-9223372036854775808, 1, 17, 0x1\n`))
  assert.is(clock.packets(), 4)
})

test.run()
