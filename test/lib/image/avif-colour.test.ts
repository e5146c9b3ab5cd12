// An AVIF's nclx colour box (primaries and transfer by H.273 code points) is applied as browsers apply it, where
// libvips keeps the decoded values: Display P3 and HDR (PQ, HLG) photos come out as shown, not dull or grey.
import {execFile, execFileSync} from 'node:child_process'
import {mkdtempSync, readFileSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {promisify} from 'node:util'
import sharp from 'sharp'
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {isModError} from '../../../src/lib/errors.js'
import {avifNclx} from '../../../src/lib/image/avif-colour.js'
import {decodeImage} from '../../../src/lib/image/decode.js'
import {testUnless} from '../../helpers/skip.js'

const LIMITS = {maxBytes: 10_000_000, maxPixels: 10_000_000}

/** A box: size, type, content. */
const box = (type: string, ...content: Buffer[]): Buffer => {
  const body = Buffer.concat(content)
  const head = Buffer.alloc(8)
  head.writeUInt32BE(8 + body.length)
  head.write(type, 4, 'latin1')
  return Buffer.concat([head, body])
}
/** A full box: a version byte and three bytes of flags before the content. */
const fullBox = (type: string, version: number, flags: number, ...content: Buffer[]): Buffer => box(type, Buffer.from([version, flags >> 16, (flags >> 8) & 0xff, flags & 0xff]), ...content)
const u16 = (...values: number[]): Buffer => Buffer.concat(values.map((v) => Buffer.from([v >> 8, v & 0xff])))
const u32 = (v: number): Buffer => Buffer.from([v >>> 24, (v >> 16) & 0xff, (v >> 8) & 0xff, v & 0xff])
const nclx = (primaries: number, transfer: number): Buffer => box('colr', Buffer.from('nclx'), u16(primaries, transfer, 1), Buffer.from([0x80]))
const icc = box('colr', Buffer.from('prof'), Buffer.alloc(16))

/**
 * A file's boxes down to the properties: `properties` in `ipco` (numbered from 1), `items` giving each item id its
 * property numbers in `ipma` (version 0, one-byte numbers; `wide`: version 1 and two-byte numbers), `primary` the id.
 */
function heif(properties: Buffer[], items: [number, number[]][], primary: number, wide = false): Buffer {
  const entries = items.map(([id, numbers]) =>
    Buffer.concat([wide ? u32(id) : u16(id), Buffer.from([numbers.length]), ...numbers.map((n) => (wide ? u16(0x8000 | n) : Buffer.from([0x80 | n])))]),
  )
  const ipma = fullBox('ipma', wide ? 1 : 0, wide ? 1 : 0, u32(items.length), ...entries)
  return Buffer.concat([box('ftyp', Buffer.from('avif'), u32(0), Buffer.from('avifmif1')), fullBox('meta', 0, 0, fullBox('pitm', 0, 0, u16(primary)), box('iprp', box('ipco', ...properties), ipma))])
}

test("the nclx box read is the primary item's, by its property numbers; an ICC profile beside it leaves the colour to libvips", () => {
  const other = box('ispe', Buffer.alloc(12))
  assert.equal(avifNclx(heif([other, nclx(1, 13), nclx(9, 16)], [[1, [1, 2]], [2, [1, 3]]], 2)), [9, 16])
  assert.equal(avifNclx(heif([other, nclx(1, 13), nclx(9, 16)], [[1, [1, 2]], [2, [1, 3]]], 1)), [1, 13])
  assert.equal(avifNclx(heif([nclx(12, 13), other], [[7, [2, 1]]], 7, true)), [12, 13])
  assert.is(avifNclx(heif([nclx(9, 16), icc], [[1, [1, 2]]], 1)), undefined)
  assert.is(avifNclx(heif([other], [[1, [1]]], 1)), undefined)
})

test('a truncated or malformed file gives no colour, and no error from here (the decoder judges the file)', () => {
  const whole = heif([nclx(9, 16)], [[1, [1]]], 1)
  for (let end = 0; end < whole.length; end += 7) assert.not.throws(() => avifNclx(whole.subarray(0, end)))
  const lying = Buffer.from(whole)
  lying.writeUInt32BE(0xffffff, whole.indexOf('meta') - 4)
  assert.is(avifNclx(lying), undefined)
  // An association past the properties there are.
  assert.is(avifNclx(heif([nclx(9, 16)], [[1, [5]]], 1)), undefined)
})

/** Why this machine's ffmpeg cannot make the test's AVIF files (an AV1 encoder, zimg's zscale); undefined when it can. */
function ffmpegMissing(): string | undefined {
  try {
    const encoders = execFileSync('ffmpeg', ['-hide_banner', '-encoders'], {encoding: 'utf8'})
    const filters = execFileSync('ffmpeg', ['-hide_banner', '-filters'], {encoding: 'utf8'})
    if (!/libaom-av1/.test(encoders)) return "this machine's ffmpeg has no libaom-av1 encoder"
    if (!/\bzscale\b/.test(filters)) return "this machine's ffmpeg has no zscale filter (zimg)"
    return undefined
  } catch {
    return 'ffmpeg is not installed'
  }
}

/** Brick red (192, 48, 32) as a 10-bit AVIF still whose nclx names `primaries` and `transfer` (ffmpeg's names). */
async function brickRed(dir: string, primaries: string, transfer: string): Promise<Buffer> {
  const path = join(dir, `${primaries}-${transfer}.avif`)
  const graph = `format=gbrpf32le,zscale=tin=iec61966-2-1:min=gbr:pin=bt709:rin=full:t=${transfer}:m=bt709:p=${primaries}:r=full:npl=203,format=yuv444p10le`
  await promisify(execFile)('ffmpeg', [
    ...['-nostdin', '-y', '-v', 'error', '-f', 'lavfi', '-i', 'color=c=0xC03020:s=32x32:d=0.1', '-vf', graph, '-frames:v', '1'],
    ...['-c:v', 'libaom-av1', '-still-picture', '1', '-crf', '10', '-color_primaries', primaries, '-color_trc', transfer, '-colorspace', 'bt709', '-color_range', 'pc', path],
  ])
  return readFileSync(path)
}

const missing = ffmpegMissing()

testUnless(missing, 'Display P3, PQ and HLG AVIF photos decode to the colour they show (brick red), where their decoded values are dull or grey', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'mod-avif-'))
  try {
    for (const [primaries, transfer, code] of [['smpte432', 'iec61966-2-1', [12, 13]], ['bt2020', 'smpte2084', [9, 16]], ['bt2020', 'arib-std-b67', [9, 18]]] as const) {
      const file = await brickRed(dir, primaries, transfer)
      assert.equal(avifNclx(file), [...code])
      const [image] = await decodeImage(file, LIMITS)
      const [r, g, b] = image.data
      assert.ok(r >= 184 && r <= 200 && g >= 40 && g <= 56 && b >= 24 && b <= 40, `${transfer}: ${r}, ${g}, ${b}`)
      // What libvips gives alone: 176,61,44 (P3), 120,82,63 (PQ), 143,72,48 (HLG).
      const [vr] = await sharp(file).raw({depth: 'uchar'}).toBuffer()
      assert.ok(vr < 180, `${transfer}: libvips alone gives red ${vr}`)
    }
  } finally {
    rmSync(dir, {recursive: true, force: true})
  }
})

testUnless(missing, "an AVIF whose nclx names BT.709's transfer keeps its decoded values, as Chromium shows them", async () => {
  const dir = mkdtempSync(join(tmpdir(), 'mod-avif-'))
  try {
    for (const transfer of ['bt709', 'smpte170m', 'bt2020-10']) {
      const path = join(dir, `${transfer}.avif`)
      await promisify(execFile)('ffmpeg', [
        ...['-nostdin', '-y', '-v', 'error', '-f', 'lavfi', '-i', 'color=c=0x806040:s=16x16:d=0.1', '-vf', 'format=yuv444p10le', '-frames:v', '1'],
        ...['-c:v', 'libaom-av1', '-still-picture', '1', '-crf', '5', '-color_primaries', 'bt709', '-color_trc', transfer, '-colorspace', 'bt709', '-color_range', 'pc', path],
      ])
      const file = readFileSync(path)
      assert.is(avifNclx(file)?.[0], 1)
      const [image] = await decodeImage(file, LIMITS)
      assert.equal([...image.data.subarray(0, 3)], [...(await sharp(file).raw({depth: 'uchar'}).toBuffer()).subarray(0, 3)], transfer)
    }
  } finally {
    rmSync(dir, {recursive: true, force: true})
  }
})

testUnless(missing, 'an AVIF whose nclx names a transfer this does not convert is unsupported_media saying so', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'mod-avif-'))
  try {
    const file = Buffer.from(await brickRed(dir, 'bt709', 'iec61966-2-1'))
    // SMPTE ST 428 (17), the digital cinema transfer, written into the box.
    file.writeUInt16BE(17, file.indexOf('nclx') + 6)
    const error = await decodeImage(file, LIMITS).catch((e: unknown) => e)
    assert.ok(isModError(error) && error.code === 'unsupported_media' && /nclx/.test(error.message) && /transfer 17/.test(error.message), String(error))
  } finally {
    rmSync(dir, {recursive: true, force: true})
  }
})

test.run()
