import {spawnSync} from 'node:child_process'
import {chmodSync, mkdirSync, readFileSync, symlinkSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import sharp from 'sharp'
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {hammingDistance, hashFromHex} from '../../src/lib/signals/pdq/hash256.js'
import {BIN, ROOT, runCli, runInProcess, tempDir} from '../helpers/cli.js'
import {ffmpeg} from '../lib/video/helpers.js'

const PHOTOS = join(ROOT, 'test', 'fixtures', 'photos')
const ASTRONAUT = join(PHOTOS, 'astronaut.jpg')
const REFERENCE = JSON.parse(readFileSync(join(ROOT, 'test', 'lib', 'signals', 'pdq', 'reference.json'), 'utf8')) as {images: {name: string; hash: string; quality: number}[]}
function reference(name: string): {hash: string; quality: number} {
  const {hash, quality} = REFERENCE.images.find((r) => r.name === `photo/${name}`) as {hash: string; quality: number}
  return {hash, quality}
}

const dir = tempDir('mod-hash-')
test.after(() => dir.remove())

test('prints hash, quality and source of an image, the hash of the reference implementation', async () => {
  const r = await runInProcess(['hash', ASTRONAUT])
  assert.is(r.code, 0, r.stderr)
  assert.is(r.stdout, `${reference('astronaut.jpg').hash}  100  ${ASTRONAUT}\n`)
  assert.is(r.stderr, '')
})

test('a hash under the quality floor is marked in the table as never matched (a flat image: quality 0)', async () => {
  const flat = join(dir.path, 'flat.png')
  writeFileSync(flat, await sharp({create: {width: 64, height: 64, channels: 3, background: '#808080'}}).png().toBuffer())
  const r = await runInProcess(['hash', flat])
  assert.is(r.code, 0, r.stderr)
  // The bits of a flat image are float rounding noise; its quality is what counts.
  assert.ok(r.stdout.endsWith(`    0  ${flat}  (quality under 50: never matched)\n`), r.stdout)
  const json = await runInProcess(['hash', flat, '--ndjson'])
  assert.equal(Object.keys(JSON.parse(json.stdout)), ['source', 'hash', 'quality'])
  assert.is(JSON.parse(json.stdout).quality, 0)
  const photo = await runInProcess(['hash', ASTRONAUT])
  assert.not.match(photo.stdout, 'never matched')
})

test('--ndjson walks folders like scan: one object per image, what was skipped on stderr', async () => {
  const r = await runInProcess(['hash', PHOTOS, '--ndjson'])
  assert.is(r.code, 0, r.stderr)
  const rows = r.stdout.trim().split('\n').map((l) => JSON.parse(l) as {source: string; hash: string; quality: number})
  assert.is(rows.length, 14)
  assert.equal(rows[1], {source: join(PHOTOS, 'brick.jpg'), ...reference('brick.jpg')})
  assert.is(r.stderr, 'skipped 1 (1 not an image)\n')
})

test('a file reached twice (a folder given twice, a file inside a folder given) is hashed once, as scan scans it once', async () => {
  const r = await runInProcess(['hash', PHOTOS, PHOTOS, join(PHOTOS, 'brick.jpg'), '--ndjson'])
  assert.is(r.code, 0, r.stderr)
  const sources = r.stdout.trim().split('\n').map((l) => (JSON.parse(l) as {source: string}).source)
  assert.is(sources.length, 14)
  assert.is(new Set(sources).size, 14)
})

test('--json prints one array; an input that cannot be hashed is an entry in its place and exit 2', async () => {
  const missing = join(dir.path, 'missing.jpg')
  const broken = join(dir.path, 'broken.png')
  writeFileSync(broken, readFileSync(ASTRONAUT).subarray(0, 2000))
  const r = await runInProcess(['hash', ASTRONAUT, missing, '--json'])
  assert.is(r.code, 2)
  assert.equal(JSON.parse(r.stdout), [
    {source: ASTRONAUT, ...reference('astronaut.jpg')},
    {source: missing, error: {code: 'not_found', message: `${missing} does not exist`}},
  ])
  const t = await runInProcess(['hash', broken])
  assert.is(t.code, 2)
  assert.match(t.stdout, new RegExp(`^ERROR  ${broken}  unreadable_image: `))
})

test('rows keep the order of the inputs while the next image is decoded during a hash, failures in their place', async () => {
  const folder = join(dir.path, 'ordered')
  mkdirSync(folder)
  const photo = readFileSync(ASTRONAUT)
  writeFileSync(join(folder, 'a.jpg'), photo)
  writeFileSync(join(folder, 'b.jpg'), photo.subarray(0, 2000))
  writeFileSync(join(folder, 'c.jpg'), photo)
  writeFileSync(join(folder, 'd.jpg'), photo.subarray(0, 2000))
  const missing = join(dir.path, 'missing.jpg')
  const r = await runInProcess(['hash', folder, missing, join(PHOTOS, 'brick.jpg'), '--ndjson'])
  assert.is(r.code, 2)
  const rows = r.stdout.trim().split('\n').map((l) => JSON.parse(l) as {source: string; hash?: string; error?: {code: string}})
  assert.equal(
    rows.map((row) => [row.source, row.hash ?? row.error?.code]),
    [
      [join(folder, 'a.jpg'), reference('astronaut.jpg').hash],
      [join(folder, 'b.jpg'), 'unreadable_image'],
      [join(folder, 'c.jpg'), reference('astronaut.jpg').hash],
      [join(folder, 'd.jpg'), 'unreadable_image'],
      [missing, 'not_found'],
      [join(PHOTOS, 'brick.jpg'), reference('brick.jpg').hash],
    ],
  )
})

test('an entry met while images are read ahead (an unreadable subfolder) keeps its place among the rows', async () => {
  const top = join(dir.path, 'locked-walk')
  mkdirSync(join(top, 'b-locked'), {recursive: true})
  writeFileSync(join(top, 'a.jpg'), readFileSync(ASTRONAUT))
  writeFileSync(join(top, 'c.jpg'), readFileSync(ASTRONAUT))
  chmodSync(join(top, 'b-locked'), 0o000)
  // As root, without the two capabilities that let root read any folder (util-linux setpriv).
  const noOverride = ['setpriv', '--inh-caps=-dac_override,-dac_read_search', '--bounding-set=-dac_override,-dac_read_search', '--']
  const [command, ...args] = [...(process.getuid?.() === 0 ? noOverride : []), process.execPath, BIN, 'hash', top, '--ndjson']
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('MOD_')))
  const r = spawnSync(command, args, {encoding: 'utf8', env: base})
  chmodSync(join(top, 'b-locked'), 0o755)
  assert.is(r.status, 2, r.stderr)
  const rows = r.stdout.trim().split('\n').map((l) => JSON.parse(l) as {source: string; hash?: string; error?: {code: string}})
  assert.equal(
    rows.map((row) => [row.source, row.hash ?? row.error?.code]),
    [
      [join(top, 'a.jpg'), reference('astronaut.jpg').hash],
      [join(top, 'b-locked'), 'unreadable_image'],
      [join(top, 'c.jpg'), reference('astronaut.jpg').hash],
    ],
  )
})

test('a video gives one hash per sampled frame, named twice or by a link too; frames of a clip of a photo hash near the photo', async () => {
  const clip = join(dir.path, 'astronaut.mp4')
  await ffmpeg('-loop', '1', '-i', ASTRONAUT, '-t', '2', '-r', '10', '-c:v', 'mpeg4', '-q:v', '2', '-pix_fmt', 'yuv420p', clip)
  const link = join(dir.path, 'astronaut-link.mp4')
  symlinkSync(clip, link)
  const r = await runInProcess(['hash', clip, clip, link, '--fps', '2', '--ndjson'])
  assert.is(r.code, 0, r.stderr)
  const rows = r.stdout.trim().split('\n').map((l) => JSON.parse(l) as {source: string; hash: string; quality: number; time: number})
  assert.equal(rows.map((row) => [row.source, row.time, row.quality]), [0, 0.5, 1, 1.5].map((t) => [clip, t, 100]))
  const photo = hashFromHex(reference('astronaut.jpg').hash)
  for (const row of rows) assert.ok(hammingDistance(hashFromHex(row.hash), photo) <= 31, `${row.time}: ${hammingDistance(hashFromHex(row.hash), photo)}`)
})

test('a multi-page TIFF gives a hash per page, as an animation gives one per frame', async () => {
  const tiff = join(dir.path, 'pages.tif')
  const photo = await sharp(ASTRONAUT).resize(64, 64, {fit: 'fill'}).raw().toBuffer()
  const pages = Buffer.concat([photo, Buffer.from(photo).reverse()])
  await sharp(pages, {raw: {width: 64, height: 128, channels: 3, pageHeight: 64}}).tiff().toFile(tiff)
  const r = await runInProcess(['hash', tiff, '--ndjson'])
  assert.is(r.code, 0, r.stderr)
  const rows = r.stdout.trim().split('\n').map((l) => JSON.parse(l) as {source: string; hash: string; frame: number})
  assert.equal(rows.map((row) => [row.source, row.frame]), [[tiff, 0], [tiff, 1]])
  assert.not.equal(rows[0].hash, rows[1].hash)
})

test('a file that is neither an image nor a video is an entry saying so, naming the formats of both', async () => {
  const notes = join(dir.path, 'notes.txt')
  writeFileSync(notes, 'not a picture\n')
  const r = await runInProcess(['hash', notes])
  assert.is(r.code, 2)
  assert.is(r.stdout, `ERROR  ${notes}  unsupported_media: neither an image nor a video in a supported format (images: JPEG, PNG, WebP, GIF, AVIF, TIFF; videos: MP4, MOV, WebM, MKV, AVI, GIF, MPEG-TS, MPEG, FLV, Ogg, ASF)\n`)
})

test('an image of a format that is refused (SVG) says so, as mod scan does, not that it is no video', async () => {
  const svg = join(dir.path, 'drawing.svg')
  writeFileSync(svg, '<svg xmlns="http://www.w3.org/2000/svg" width="8" height="8"><rect width="8" height="8"/></svg>')
  const r = await runInProcess(['hash', svg])
  assert.is(r.code, 2)
  assert.is(r.stdout, `ERROR  ${svg}  unsupported_media: SVG images are not supported; send JPEG, PNG, WebP, GIF, AVIF or TIFF\n`)
})

test('nothing to hash is an error; --fps out of range is a usage error', async () => {
  const empty = join(dir.path, 'empty')
  mkdirSync(empty)
  const r = await runInProcess(['hash', empty])
  assert.is(r.code, 2)
  assert.is(r.stdout, '')
  assert.is(r.stderr, `mod: not_found: nothing to hash in ${empty}: no images\n`)
  const u = await runInProcess(['hash', ASTRONAUT, '--fps', '0'])
  assert.is(u.code, 2)
  assert.match(u.stderr, /^mod: usage: --fps="0" is not valid: expected a number from 0\.01 to 10 in plain decimal \(2, 0\.5\)\n$/)
})

test('an ERROR row is coloured as mod scan colours it, unless --no-color', async () => {
  const missing = join(dir.path, 'missing.png')
  const coloured = await runCli(['hash', missing], {env: {NO_COLOR: '', FORCE_COLOR: '1'}})
  assert.is(coloured.code, 2)
  assert.is(coloured.stdout, `\x1b[33mERROR\x1b[39m  ${missing}  not_found: ${missing} does not exist\n`)
  const plain = await runCli(['hash', missing, '--no-color'], {env: {NO_COLOR: '', FORCE_COLOR: '1'}})
  assert.is(plain.stdout, `ERROR  ${missing}  not_found: ${missing} does not exist\n`)
})

test('--color typed wins over FORCE_COLOR=0 and NO_COLOR', async () => {
  const missing = join(dir.path, 'missing.png')
  for (const env of [{FORCE_COLOR: '0'}, {NO_COLOR: '1'}] as Record<string, string>[]) {
    const r = await runCli(['hash', missing, '--color'], {env})
    assert.is(r.stdout, `\x1b[33mERROR\x1b[39m  ${missing}  not_found: ${missing} does not exist\n`, JSON.stringify(env))
  }
})

test('--color and --no-color both typed: the last one wins, as for any flag given twice', async () => {
  const missing = join(dir.path, 'missing.png')
  const env = {NO_COLOR: '', FORCE_COLOR: '1'}
  const coloured = await runCli(['hash', missing, '--no-color', '--color'], {env})
  assert.is(coloured.code, 2)
  assert.is(coloured.stderr, '')
  assert.is(coloured.stdout, `\x1b[33mERROR\x1b[39m  ${missing}  not_found: ${missing} does not exist\n`)
  const plain = await runCli(['hash', '--color', missing, '--no-color'], {env})
  assert.is(plain.code, 2)
  assert.is(plain.stderr, '')
  assert.is(plain.stdout, `ERROR  ${missing}  not_found: ${missing} does not exist\n`)
})

test.run()
