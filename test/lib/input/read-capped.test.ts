import {createReadStream} from 'node:fs'
import {mkdtemp, rm, writeFile} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {Readable} from 'node:stream'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {ModError} from '../../../src/lib/errors.js'
import {byteCap, readCapped, readFileCapped} from '../../../src/lib/input/read-capped.js'
import {imageFormat, sniffImage} from '../../../src/lib/input/sniff.js'
import {rejection} from '../../helpers/errors.js'

test('a source within the cap is read whole, chunk boundaries and all', async () => {
  const source = Readable.from([Buffer.from('ab'), 'cd', new Uint8Array([101, 102])])
  assert.is((await readCapped(source, 6, 'x')).toString(), 'abcdef')
})

test('one byte over the cap is payload_too_large naming the source', async () => {
  const e = await rejection(readCapped(Readable.from([Buffer.alloc(4), Buffer.alloc(3)]), 6, 'upload.png'))
  assert.is(e.code, 'payload_too_large')
  assert.is(e.message, 'upload.png is larger than 6 bytes')
})

test('a byte cap counts across calls and throws its own error once over the limit', () => {
  const cap = byteCap(10, 'x', () => new ModError('payload_too_large', 'too much'))
  cap.add(6)
  cap.add(4)
  assert.is(cap.total, 10)
  assert.throws(() => cap.add(1), (e: ModError) => e.code === 'payload_too_large' && e.message === 'too much')
  assert.throws(() => byteCap(1, 'stdin').add(2), (e: ModError) => e.message === 'stdin is larger than 1 byte')
})

test('an endless source (/dev/zero) stops at the cap and is released', async () => {
  const stream = createReadStream('/dev/zero')
  const e = await rejection(readCapped(stream, 1024 * 1024, '/dev/zero'))
  assert.is(e.code, 'payload_too_large')
  await new Promise((r) => setImmediate(r))
  assert.ok(stream.destroyed)
})

test('any async iterable of buffers is a source', async () => {
  async function* parts() {
    yield Buffer.from('12')
    yield Buffer.from('34')
  }
  assert.is((await readCapped(parts(), 4, 'x')).toString(), '1234')
})

const dir = await mkdtemp(join(tmpdir(), 'mod-read-capped-'))
test.after(async () => {
  await rm(dir, {recursive: true, force: true})
})

test('a file within the cap is read whole; an empty file is an empty buffer', async () => {
  const file = join(dir, 'photo.jpg')
  const bytes = Buffer.from(Array.from({length: 300_000}, (_, i) => i % 251))
  await writeFile(file, bytes)
  assert.ok((await readFileCapped(file, bytes.length)).equals(bytes))
  await writeFile(join(dir, 'empty'), '')
  assert.is((await readFileCapped(join(dir, 'empty'), 10)).length, 0)
})

test('a file larger than the cap is payload_too_large naming its path', async () => {
  const file = join(dir, 'big.png')
  await writeFile(file, Buffer.alloc(11))
  const e = await rejection(readFileCapped(file, 10))
  assert.is(e.code, 'payload_too_large')
  assert.is(e.message, `${file} is larger than 10 bytes`)
})

test('a file whose size says nothing (/proc) is read to its end and still held to the cap as bytes arrive', async () => {
  const status = (await readFileCapped('/proc/self/status', 1 << 20)).toString()
  assert.match(status, /^Name:/)
  assert.match(status, /VmRSS:/)
  assert.is((await rejection(readFileCapped('/proc/self/status', 64))).code, 'payload_too_large')
})

const box = (major: string, ...compatible: string[]): Buffer => {
  const brands = Buffer.from([major, '\0\0\0\0', ...compatible].join(''), 'latin1')
  const size = Buffer.alloc(4)
  size.writeUInt32BE(8 + brands.length)
  return Buffer.concat([size, Buffer.from('ftyp'), brands])
}

test('formats are told by their first bytes, not their names', () => {
  const cases: [Buffer, string | undefined][] = [
    [Buffer.from([0xff, 0xd8, 0xff, 0xe0]), 'JPEG'],
    [Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0]), 'PNG'],
    [Buffer.from('GIF89a....'), 'GIF'],
    [Buffer.from('RIFF\0\0\0\0WEBPVP8 '), 'WebP'],
    [Buffer.from('II*\0xxxx', 'latin1'), 'TIFF'],
    [Buffer.from('MM\0*xxxx', 'latin1'), 'TIFF'],
    [box('avif', 'mif1'), 'AVIF'],
    [box('mif1', 'avif'), 'AVIF'],
    [box('heic', 'mif1'), 'HEIF'],
    [box('isom', 'mp41'), undefined],
    [Buffer.from('plain text, not an image'), undefined],
    [Buffer.alloc(0), undefined],
    // Formats browsers show and the decoder refuses.
    [Buffer.concat([Buffer.from('BM', 'latin1'), Buffer.from('3a000000000000003600000028000000', 'hex')]), 'BMP'],
    [Buffer.concat([Buffer.from('BM', 'latin1'), Buffer.from('3a000000010000003600000028000000', 'hex')]), undefined],
    [Buffer.from('BMW service notes, 2026'), undefined],
    [Buffer.from('0000010001001010000001002000' + '68040000' + '16000000', 'hex'), 'ICO'],
    [Buffer.from('0000020001001010000001002000' + '68040000' + '16000000', 'hex'), 'ICO'],
    [Buffer.from('0000010001001010000001002000' + '68040000' + '04000000', 'hex'), undefined],
    [Buffer.from('ff0a00', 'hex'), 'JPEG XL'],
    [Buffer.from('0000000c4a584c200d0a870a', 'hex'), 'JPEG XL'],
    [Buffer.from('0000000c6a5020200d0a870a00000014667479706a703220', 'hex'), 'JPEG 2000'],
    [Buffer.from('ff4fff51002f0000', 'hex'), 'JPEG 2000'],
    [Buffer.from('ff4fff', 'hex'), undefined],
    [Buffer.from('ff4f0000', 'hex'), undefined],
    [Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"/>'), 'SVG'],
    [Buffer.from('\uFEFF  <?xml version="1.0" encoding="UTF-8"?>\n<!-- Generator: a drawing tool -->\n<!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN" "svg11.dtd">\n<svg>'), 'SVG'],
    [Buffer.from('<?xml version="1.0"?><rss version="2.0"><channel/></rss>'), undefined],
    [Buffer.from('<!DOCTYPE html><html><svg/></html>'), undefined],
  ]
  for (const [head, format] of cases) assert.is(imageFormat(head), format, head.toString('latin1'))
  assert.equal(
    [box('avif'), box('heic'), Buffer.from('<svg/>'), Buffer.from('text')].map(sniffImage),
    ['image', 'refused', 'refused', 'other'],
  )
})

test.run()
