import {execFileSync, spawn, spawnSync} from 'node:child_process'
import {chmodSync, mkdirSync, readFileSync, symlinkSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import sharp from 'sharp'
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {MAX_FOLDER_DEPTH} from '../../src/cli/inputs.js'
import {BIN, runCli, runInProcess, solidPng, tempDir, TOY_MODEL, writeRednessPolicy} from '../helpers/cli.js'
import {colourClip, ffmpeg} from '../lib/video/helpers.js'
import {warmCacheDir} from '../helpers/warm-cache.js'

const dir = tempDir()
const env = {MOD_MODEL_DIR: TOY_MODEL, MOD_CACHE_DIR: warmCacheDir(join(dir.path, 'cache'))}
let policy = ''
let blue = ''
let tree = ''

test.before(async () => {
  policy = writeRednessPolicy(dir.path)
  blue = join(dir.path, 'blue.png')
  writeFileSync(blue, await solidPng(0, 0, 255))
  // a/ holds: an image without an extension, a JPEG named .txt, a text file named .png, a HEIF header,
  // a symlink to an image elsewhere, a broken symlink, and a symlink back to the top (a loop).
  tree = join(dir.path, 'tree')
  mkdirSync(join(tree, 'a', 'b'), {recursive: true})
  writeFileSync(join(tree, 'a', 'noext'), await solidPng(0, 0, 250))
  writeFileSync(join(tree, 'a', 'photo.txt'), await solidPng(255, 0, 0))
  writeFileSync(join(tree, 'a', 'fake.png'), 'not an image at all')
  const heif = Buffer.concat([Buffer.from([0, 0, 0, 24]), Buffer.from('ftypheic\0\0\0\0mif1heic', 'latin1')])
  writeFileSync(join(tree, 'a', 'b', 'phone.heic'), heif)
  symlinkSync(blue, join(tree, 'a', 'b', 'linked.png'))
  symlinkSync(join(dir.path, 'gone.png'), join(tree, 'a', 'broken.png'))
  symlinkSync(tree, join(tree, 'a', 'b', 'loop'))
})

test.after(() => dir.remove())

test('a folder is walked by content: extensionless and misnamed images are scanned, symlinks followed, loops skipped', async () => {
  const r = await runInProcess(['scan', tree, '--config', policy, '--json'], {env})
  assert.is(r.code, 1, r.stderr)
  const results = JSON.parse(r.stdout)
  assert.equal(
    results.map((x: {source: string; is_safe?: boolean; error?: {code: string}}) => [x.source, x.is_safe ?? x.error?.code]),
    [
      [join(tree, 'a', 'b', 'linked.png'), true],
      [join(tree, 'a', 'b', 'phone.heic'), 'unsupported_media'],
      [join(tree, 'a', 'noext'), true],
      [join(tree, 'a', 'photo.txt'), false],
    ],
  )
  assert.is(r.stderr, '4 scanned: 2 safe, 1 unsafe, 1 error; skipped 3 (1 broken symlink, 1 not an image, 1 symlink loop)\n')
})

test('a symlink to a folder the walk reaches another way is no loop: its images are scanned once and nothing is skipped', async () => {
  // a/link points at the sibling b/, which is walked through the link first and is then reached by name.
  const sib = join(dir.path, 'siblings')
  mkdirSync(join(sib, 'a'), {recursive: true})
  mkdirSync(join(sib, 'b'))
  writeFileSync(join(sib, 'b', 'x.png'), await solidPng(0, 0, 255))
  symlinkSync(join('..', 'b'), join(sib, 'a', 'link'))
  const r = await runInProcess(['scan', sib, '--config', policy, '--ndjson'], {env})
  assert.is(r.code, 0, r.stderr)
  assert.equal(r.stdout.trim().split('\n').map((l) => (JSON.parse(l) as {source: string}).source), [join(sib, 'a', 'link', 'x.png')])
  assert.is(r.stderr, '1 scanned: 1 safe, 0 unsafe, 0 errors\n')
})

test('the table summary names what was skipped and why', async () => {
  const r = await runInProcess(['scan', tree, '--config', policy], {env})
  assert.is(r.code, 1)
  assert.is(r.stderr, '4 scanned: 2 safe, 1 unsafe, 1 error; skipped 3 (1 broken symlink, 1 not an image, 1 symlink loop)\n')
})

test('a large folder keeps name order across the entries checked together, subfolders in their place', async () => {
  // 70 entries: more than one group of files checked at once; every seventh is not an image, n030 is a folder.
  const top = join(dir.path, 'many')
  mkdirSync(join(top, 'n030'), {recursive: true})
  const png = await solidPng(0, 0, 255)
  writeFileSync(join(top, 'n030', 'inner.png'), png)
  const expected: string[] = []
  for (let i = 0; i < 70; i++) {
    const name = `n${String(i).padStart(3, '0')}`
    if (i === 30) {
      expected.push(join(top, name, 'inner.png'))
      continue
    }
    writeFileSync(join(top, name), i % 7 === 3 ? 'notes' : png)
    if (i % 7 !== 3) expected.push(join(top, name))
  }
  const r = await runInProcess(['scan', top, '--config', policy, '--ndjson'], {env})
  assert.is(r.code, 0, r.stderr)
  const sources = r.stdout.trim().split('\n').map((l) => (JSON.parse(l) as {source: string}).source)
  assert.equal(sources, expected)
  assert.is(r.stderr, '60 scanned: 60 safe, 0 unsafe, 0 errors; skipped 10 (10 not images)\n')
})

test('an unreadable subfolder is an error entry and the walk goes on', async () => {
  const top = join(dir.path, 'locked-tree')
  mkdirSync(join(top, 'b-locked'), {recursive: true})
  writeFileSync(join(top, 'a.png'), await solidPng(0, 0, 255))
  writeFileSync(join(top, 'c.png'), await solidPng(0, 0, 255))
  writeFileSync(join(top, 'b-locked', 'x.png'), await solidPng(0, 0, 255))
  chmodSync(join(top, 'b-locked'), 0o000)
  // Root reads any folder: as root the scan runs without the two capabilities that allow it (util-linux setpriv),
  // still as root, so the clone stays readable wherever it lives (a folder only root may enter, such as /root).
  const asRoot = process.getuid?.() === 0
  const noOverride = ['--inh-caps=-dac_override,-dac_read_search', '--bounding-set=-dac_override,-dac_read_search', '--']
  const [command, ...args] = [...(asRoot ? ['setpriv', ...noOverride] : []), process.execPath, BIN, 'scan', top, '--config', policy, '--ndjson']
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('MOD_')))
  const r = spawnSync(command, args, {encoding: 'utf8', env: {...base, NO_COLOR: '1', ...env}})
  chmodSync(join(top, 'b-locked'), 0o755)
  assert.is(r.status, 2, r.stderr)
  const lines = r.stdout.trim().split('\n').map((l) => JSON.parse(l))
  assert.equal(lines.map((l: {source: string}) => l.source), [join(top, 'a.png'), join(top, 'b-locked'), join(top, 'c.png')])
  assert.equal(lines[1].error, {code: 'unreadable_image', message: `cannot read the folder ${join(top, 'b-locked')}: permission denied (EACCES)`})
})

test('a path that does not exist is a not_found entry in its place; the others are scanned', async () => {
  const missing = join(dir.path, 'missing.png')
  const url = 'https://example.com/photo.jpg'
  const r = await runInProcess(['scan', missing, blue, url, '--config', policy, '--ndjson'], {env})
  assert.is(r.code, 2)
  const lines = r.stdout.trim().split('\n').map((l) => JSON.parse(l))
  assert.equal(lines[0], {source: missing, error: {code: 'not_found', message: `${missing} does not exist`}})
  assert.is(lines[1].is_safe, true)
  // A URL is no path, and is never fetched: the entry says where URLs go.
  const notUrls = 'paths are files and folders, not URLs: download the image first, or have a mod serve fetch it, POST /v1/moderate/json'
  assert.equal(lines[2], {source: url, error: {code: 'not_found', message: `${url} does not exist (${notUrls})`}})
})

test('a symbolic link to nothing, named or listed, is a not_found entry naming the missing target', async () => {
  const link = join(dir.path, 'dangling.png')
  symlinkSync('../nowhere/gone.png', link)
  writeFileSync(join(dir.path, 'dangling-list.txt'), `${link}\0`)
  for (const args of [[link], ['--files-from', join(dir.path, 'dangling-list.txt'), '-0']]) {
    const r = await runInProcess(['scan', ...args, blue, '--config', policy, '--ndjson'], {env})
    assert.is(r.code, 2, args.join(' '))
    const rows = r.stdout.trim().split('\n').map((l) => JSON.parse(l) as {source: string})
    assert.equal(rows.find((row) => row.source === link), {source: link, error: {code: 'not_found', message: `${link} is a symbolic link to ../nowhere/gone.png, which does not exist`}}, args.join(' '))
  }
})

test('a symlink loop named on the command line is an error entry that says so in words', async () => {
  const loop = join(dir.path, 'self-loop.png')
  symlinkSync(loop, loop)
  const r = await runInProcess(['scan', loop, blue, '--config', policy, '--ndjson'], {env})
  assert.is(r.code, 2)
  const lines = r.stdout.trim().split('\n').map((l) => JSON.parse(l))
  assert.equal(lines[0], {source: loop, error: {code: 'unreadable_image', message: `cannot read ${loop}: a loop of symbolic links (ELOOP)`}})
  assert.is(lines[1].is_safe, true)
})

test('a folder nested too deep is an error entry where the walk stops; what came before and after is scanned', async () => {
  // A folder of its own: the other tests scan dir.path whole.
  const own = tempDir('mod-deep-')
  const top = join(own.path, 'deep')
  const levels = Array.from({length: MAX_FOLDER_DEPTH + 2}, () => 'd')
  mkdirSync(join(top, ...levels), {recursive: true})
  const png = await solidPng(0, 0, 255)
  writeFileSync(join(top, 'd', 'shallow.png'), png)
  writeFileSync(join(top, ...levels, 'bottom.png'), png)
  const r = await runInProcess(['scan', top, blue, '--config', policy, '--ndjson'], {env}).finally(() => own.remove())
  assert.is(r.code, 2)
  const lines = r.stdout.trim().split('\n').map((l) => JSON.parse(l) as {source: string; error?: {code: string; message: string}})
  const tooDeep = join(top, ...levels.slice(0, MAX_FOLDER_DEPTH + 1))
  assert.equal(lines.map((l) => l.source), [tooDeep, join(top, 'd', 'shallow.png'), blue])
  assert.equal(lines[0].error, {code: 'unreadable_image', message: `the folder ${tooDeep} is nested more than ${MAX_FOLDER_DEPTH} folders deep: not walked`})
})

test('a named pipe given by name is read whole as one image, as - is, whenever its writer comes; a device is refused without being read', async () => {
  const fifo = join(dir.path, 'pipe')
  execFileSync('mkfifo', [fifo])
  // The writer opens the pipe after the scan has: the scan waits for it without holding anything else up.
  const writer = spawn('sh', ['-c', 'sleep 0.3; cat "$1" > "$2"', 'sh', blue, fifo])
  const written = new Promise((done) => writer.on('close', done))
  const r = await runInProcess(['scan', fifo, '/dev/zero', blue, '--config', policy, '--json'], {env})
  await written
  assert.is(r.code, 2)
  const [a, b, c] = JSON.parse(r.stdout)
  assert.equal([a.source, a.is_safe, a.labels.find((l: {name: string}) => l.name === 'redness')?.score], [fifo, true, c.labels.find((l: {name: string}) => l.name === 'redness')?.score])
  assert.equal(b.error, {code: 'unsupported_media', message: '/dev/zero is a device, not a regular file: give a file, a named pipe, a folder or - for stdin'})
  assert.is(c.is_safe, true)
  // Flagged, with a report: the page lists it without a preview, where reading the pipe again waited for ever.
  const red = join(dir.path, 'red-piped.png')
  writeFileSync(red, await solidPng(255, 0, 0))
  const page = join(dir.path, 'pipe-report.html')
  const again = spawn('sh', ['-c', 'cat "$1" > "$2"', 'sh', red, fifo])
  const reported = await runInProcess(['scan', fifo, '--config', policy, '--report', page], {env})
  again.kill()
  assert.is(reported.code, 1, reported.stderr)
  const listed = /<script id="report-items" type="application\/json">(.*?)<\/script>/s.exec(readFileSync(page, 'utf8'))?.[1]
  const items = JSON.parse(listed ?? '[]') as {result: {source: string}; thumb?: string}[]
  assert.equal(items.map((i) => [i.result.source, i.thumb]), [[fifo, undefined]])
  // An image piped in by a shell, named /dev/stdin (as tools that take no - are given one).
  const piped = spawnSync('sh', ['-c', 'cat "$1" | "$2" "$3" scan /dev/stdin --config "$4" --json', 'sh', red, process.execPath, BIN, policy], {env: {...process.env, ...env}, encoding: 'utf8'})
  assert.is(piped.status, 1, piped.stderr)
  assert.equal(JSON.parse(piped.stdout).map((x: {source: string; is_safe: boolean}) => [x.source, x.is_safe]), [['/dev/stdin', false]])
})

test('stdin is read with the byte cap', async () => {
  const r = await runCli(['scan', '-', '--config', policy, '--json'], {env: {...env, MOD_MAX_BYTES: '1000'}, stdin: Buffer.alloc(5000)})
  assert.is(r.code, 2)
  assert.equal(JSON.parse(r.stdout)[0].error, {code: 'payload_too_large', message: 'stdin is larger than 1000 bytes'})
})

test('a HEIF/HEIC photo beside safe images, in a folder or a list, is an unsupported_media entry and exit 2: never skipped unchecked', async () => {
  const phone = join(dir.path, 'phone')
  mkdirSync(phone)
  writeFileSync(join(phone, 'a.png'), await solidPng(0, 0, 255))
  writeFileSync(join(phone, 'b.heic'), Buffer.concat([Buffer.from([0, 0, 0, 16]), Buffer.from('ftypheic\0\0\0\0', 'latin1')]))
  writeFileSync(join(dir.path, 'phone-list.txt'), `${join(phone, 'a.png')}\n${join(phone, 'b.heic')}\n`)
  for (const args of [[phone], ['--files-from', join(dir.path, 'phone-list.txt')]]) {
    const r = await runInProcess(['scan', ...args, '--config', policy], {env})
    assert.is(r.code, 2, args.join(' '))
    assert.match(r.stdout, /^SAFE\s+\S*a\.png/m)
    assert.match(r.stdout, /^ERROR\s+\S*b\.heic\s+unsupported_media: HEIF images are not supported; send JPEG, PNG, WebP, GIF, AVIF or TIFF/m)
    assert.is(r.stderr, '2 scanned: 1 safe, 0 unsafe, 1 error\n', args.join(' '))
  }
})

/** A 1x1 BMP (file header, BITMAPINFOHEADER, one 24-bit pixel and its row padding). */
function bmp(): Buffer {
  const b = Buffer.alloc(58)
  b.write('BM', 0, 'latin1')
  b.writeUInt32LE(58, 2)
  b.writeUInt32LE(54, 10)
  b.writeUInt32LE(40, 14)
  b.writeInt32LE(1, 18)
  b.writeInt32LE(1, 22)
  b.writeUInt16LE(1, 26)
  b.writeUInt16LE(24, 28)
  return b
}

/** An ICO directory of one 16x16 image whose data (a PNG) follows it. */
function ico(png: Buffer): Buffer {
  const dir = Buffer.alloc(22)
  dir.writeUInt16LE(1, 2)
  dir.writeUInt16LE(1, 4)
  dir.writeUInt8(16, 6)
  dir.writeUInt8(16, 7)
  dir.writeUInt16LE(1, 10)
  dir.writeUInt16LE(32, 12)
  dir.writeUInt32LE(png.length, 14)
  dir.writeUInt32LE(22, 18)
  return Buffer.concat([dir, png])
}

test('BMP (even named .jpg), ICO, SVG, JPEG XL and JPEG 2000 files in a folder or a list are unsupported_media entries naming the format, exit 2; other text is skipped', async () => {
  const shown = join(dir.path, 'browser-shown')
  mkdirSync(shown)
  writeFileSync(join(shown, 'a.png'), await solidPng(0, 0, 255))
  writeFileSync(join(shown, 'upload1.jpg'), bmp())
  writeFileSync(join(shown, 'favicon.ico'), ico(await solidPng(0, 0, 255)))
  writeFileSync(join(shown, 'logo.svg'), '<?xml version="1.0"?>\n<!-- drawn by hand -->\n<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"/>')
  writeFileSync(join(shown, 'photo.jxl'), Buffer.from('ff0a' + '00'.repeat(30), 'hex'))
  // A JP2 file's signature box and file type box, named as a JPEG.
  writeFileSync(join(shown, 'scan.jpg'), Buffer.from('0000000c6a5020200d0a870a00000014667479706a70322000000000' + '00'.repeat(30), 'hex'))
  writeFileSync(join(shown, 'page.html'), '<!DOCTYPE html>\n<html><body><svg width="4" height="4"/></body></html>')
  writeFileSync(join(dir.path, 'shown-list.txt'), ['a.png', 'upload1.jpg', 'favicon.ico', 'logo.svg', 'photo.jxl', 'scan.jpg', 'page.html'].map((f) => join(shown, f)).join('\n') + '\n')
  for (const args of [[shown], ['--files-from', join(dir.path, 'shown-list.txt')]]) {
    const r = await runInProcess(['scan', ...args, '--config', policy, '--json'], {env})
    assert.is(r.code, 2, args.join(' '))
    const rows = (JSON.parse(r.stdout) as {source: string; is_safe?: boolean; error?: {code: string; message: string}}[]).map((x) => [x.source.split('/').pop(), x.error ? `${x.error.code}: ${x.error.message}` : x.is_safe])
    const refused = (format: string) => `unsupported_media: ${format} images are not supported; send JPEG, PNG, WebP, GIF, AVIF or TIFF`
    assert.equal(
      rows.sort((a, b) => String(a[0]).localeCompare(String(b[0]))),
      [['a.png', true], ['favicon.ico', refused('ICO')], ['logo.svg', refused('SVG')], ['photo.jxl', refused('JPEG XL')], ['scan.jpg', refused('JPEG 2000')], ['upload1.jpg', refused('BMP')]],
      args.join(' '),
    )
    assert.match(r.stderr, /^6 scanned: 1 safe, 0 unsafe, 5 errors; skipped 1 \(1 not an image\)/, args.join(' '))
  }
})

test("a Git LFS pointer in an image's place, in a folder, a list or named (as the pre-commit hook names files), is an unsupported_media entry saying to fetch the LFS files, exit 2; never skipped as not an image", async () => {
  const lfs = join(dir.path, 'lfs-checkout')
  mkdirSync(lfs)
  writeFileSync(join(lfs, 'a.png'), await solidPng(0, 0, 255))
  writeFileSync(join(lfs, 'banner.jpg'), `version https://git-lfs.github.com/spec/v1\noid sha256:${'4d7a'.repeat(16)}\nsize 84977\n`)
  writeFileSync(join(dir.path, 'lfs-list.txt'), ['a.png', 'banner.jpg'].map((f) => join(lfs, f)).join('\n') + '\n')
  for (const args of [[lfs], ['--files-from', join(dir.path, 'lfs-list.txt')], [join(lfs, 'a.png'), join(lfs, 'banner.jpg')]]) {
    const r = await runInProcess(['scan', ...args, '--config', policy, '--json'], {env})
    assert.is(r.code, 2, args.join(' '))
    const rows = (JSON.parse(r.stdout) as {source: string; is_safe?: boolean; error?: {code: string; message: string}}[]).map((x) => [x.source, x.error ? `${x.error.code}: ${x.error.message}` : x.is_safe])
    const pointer = join(lfs, 'banner.jpg')
    assert.equal(rows, [
      [join(lfs, 'a.png'), true],
      [pointer, `unsupported_media: ${pointer} is a Git LFS pointer, not the file it stands for: fetch the LFS files before scanning (git lfs pull; actions/checkout with lfs: true)`],
    ], args.join(' '))
  }
})

test('a folder with nothing to scan is exit 2 with one line saying so', async () => {
  const only = join(dir.path, 'only-text')
  mkdirSync(only)
  writeFileSync(join(only, 'notes.txt'), 'not an image')
  const r = await runInProcess(['scan', only, '--config', policy], {env})
  assert.is(r.code, 2)
  assert.is(r.stderr, `mod: not_found: nothing was scanned in ${only}: skipped 1 (1 not an image)\n`)
  const empty = join(dir.path, 'empty')
  mkdirSync(empty)
  const json = await runInProcess(['scan', empty, '--config', policy, '--json'], {env})
  assert.is(json.code, 2)
  assert.equal(JSON.parse(json.stdout), [])
  assert.is(json.stderr, `mod: not_found: nothing was scanned in ${empty}: no images\n`)
})

test('a video named to scan points to scan-video; one error is "1 error"', async () => {
  const clip = await colourClip(join(dir.path, 'clip.mp4'), ['blue'], 1)
  const r = await runInProcess(['scan', clip, blue, '--config', policy], {env})
  assert.is(r.code, 2, r.stderr)
  assert.match(r.stdout, `ERROR   ${clip}  unsupported_media: ${clip} is a video: use mod scan-video ${clip}\n`)
  assert.is(r.stderr, '2 scanned: 1 safe, 0 unsafe, 1 error\n')
})

test("the scan-video command it points to can be copied into a shell: a name with a space or a quote is quoted, one starting with - is ./-", async () => {
  const folder = join(dir.path, 'odd names')
  mkdirSync(folder)
  for (const name of ["it's a clip.mp4", '-v.mp4']) await colourClip(join(folder, name), ['blue'], 1)
  const r = await runInProcess(['scan', '.', '--config', policy, '--json'], {env, cwd: folder})
  const messages = (JSON.parse(r.stdout) as {source: string; error: {message: string}}[]).map((e) => e.error.message).sort()
  assert.equal(messages, ["-v.mp4 is a video: use mod scan-video ./-v.mp4", "it's a clip.mp4 is a video: use mod scan-video 'it'\\''s a clip.mp4'"])
  // The shell reads the quoted name back as it is.
  const quoted = /use mod scan-video (.*)$/.exec(messages[1])?.[1] ?? ''
  assert.is(execFileSync('sh', ['-c', `printf %s ${quoted}`], {encoding: 'utf8'}), "it's a clip.mp4")
})

test('a video in a folder or a --files-from list is an error entry pointing to scan-video, exit 2, never skipped unchecked; mod hash still skips it', async () => {
  const mixed = join(dir.path, 'mixed')
  mkdirSync(mixed)
  writeFileSync(join(mixed, 'a.png'), await solidPng(0, 0, 255))
  const clip = await colourClip(join(mixed, 'b.mp4'), ['blue'], 1)
  writeFileSync(join(dir.path, 'mixed-list.txt'), `${join(mixed, 'a.png')}\n${clip}\n`)
  for (const args of [[mixed], ['--files-from', join(dir.path, 'mixed-list.txt')]]) {
    const r = await runInProcess(['scan', ...args, '--config', policy], {env})
    assert.is(r.code, 2, args.join(' '))
    assert.match(r.stdout, `ERROR   ${clip}  unsupported_media: ${clip} is a video: use mod scan-video ${clip}\n`)
    assert.is(r.stderr, '2 scanned: 1 safe, 0 unsafe, 1 error\n', args.join(' '))
  }
  const hashed = await runInProcess(['hash', mixed, '--json'], {env})
  assert.is(hashed.code, 0, hashed.stderr)
  assert.equal(JSON.parse(hashed.stdout).map((h: {source: string}) => h.source), [join(mixed, 'a.png')])
})

test('scan-video refuses a still image, a missing file and a folder before running ffmpeg', async () => {
  const png = await runInProcess(['scan-video', blue, '--config', policy], {env})
  assert.is(png.code, 2)
  assert.is(png.stderr, `mod: unsupported_media: ${blue} is a PNG image, not a video: use \`mod scan\` for images\n`)
  const missing = await runInProcess(['scan-video', join(dir.path, 'no.mp4')], {env})
  assert.is(missing.stderr, `mod: not_found: ${join(dir.path, 'no.mp4')} does not exist\n`)
  const folder = await runInProcess(['scan-video', dir.path], {env})
  assert.is(folder.stderr, `mod: unsupported_media: ${dir.path} is a folder, not a video: give one video file\n`)
  // An APNG is no video, and mod scan refuses it too: the advice is not to use mod scan.
  const apng = join(dir.path, 'anim.png')
  const chunk = (type: string, data: Buffer) => Buffer.concat([Buffer.from([0, 0, 0, data.length]), Buffer.from(type, 'latin1'), data, Buffer.alloc(4)])
  writeFileSync(apng, Buffer.concat([Buffer.from('89504e470d0a1a0a', 'hex'), chunk('IHDR', Buffer.from('00000010000000100806000000', 'hex')), chunk('acTL', Buffer.alloc(8))]))
  const animated = await runInProcess(['scan-video', apng], {env})
  assert.is(animated.stderr, `mod: unsupported_media: ${apng} is an animated PNG (APNG), which mod reads neither as a video nor as an image: convert it to a video, or to an animated GIF or WebP for \`mod scan\`\n`)
  // An AVIF image sequence is a video to ffmpeg, as an animated GIF is; a still AVIF is an image.
  const sequence = join(dir.path, 'anim.avif')
  await ffmpeg('-f', 'lavfi', '-i', 'color=c=blue:s=64x64:d=2:r=2', '-c:v', 'libaom-av1', '-cpu-used', '8', '-crf', '40', '-pix_fmt', 'yuv420p', sequence)
  const played = await runInProcess(['scan-video', sequence, '--config', policy, '--json'], {env})
  assert.is(played.code, 0, played.stderr)
  assert.equal(JSON.parse(played.stdout).frames_analyzed, 2)
  const still = join(dir.path, 'still.avif')
  writeFileSync(still, await sharp({create: {width: 16, height: 16, channels: 3, background: '#00f'}}).avif({effort: 0}).toBuffer())
  assert.is((await runInProcess(['scan-video', still], {env})).stderr, `mod: unsupported_media: ${still} is an AVIF image, not a video: use \`mod scan\` for images\n`)
  const stdin = await runCli(['scan-video', '-'], {env})
  assert.equal([stdin.code, stdin.stdout], [2, ''])
  assert.match(stdin.stderr, 'scan-video reads a video file, not stdin (-): save the video to a file first')
})

test.run()
