/**
 * decode-memory: how much one image within the default limits (MOD_MAX_BYTES, MOD_MAX_PIXELS) grows a process
 * over idle, across formats, bit depths, bands, every EXIF orientation, multi-page TIFF and animations, on
 * three paths: `mod scan FILE` (the engine, with a hash list so that PDQ runs too), `mod hash FILE`, and a
 * `mod serve --workers 1` worker (a fresh one per input, so that nothing one request leaves counts towards the
 * next). Peak RSS is VmHWM from /proc/<pid>/status (the CLI polled every 10 ms; the worker's reset by writing 5
 * to clear_refs before its request); idle is the same path on a 16x16 PNG. Prints a table, PASS/MISS against
 * 600 MiB, and the bound docs/operations.md states, computed from the same constants as the decoder.
 *
 *   npx tsx bench/decode-memory.ts [name-substring ...] [--no-speed]
 *
 * Last, the speed of decoding ordinary JPEGs (1280x720 and 12 megapixels, upright and EXIF-turned) against
 * the earlier one-pipeline decode (orientation applied by libvips before the cast to 8 bits), the two taking
 * turns; printed, no target.
 *
 * The inputs are generated with sharp (and, for float and CMYK TIFFs, which sharp does not write, a small TIFF
 * writer here) into a temporary folder, removed at the end; or, with DECODE_MEMORY_INPUTS=DIR, into DIR, kept,
 * where a second run (another build) finds them made.
 */
import './no-telemetry.js'

import {spawn} from 'node:child_process'
import {existsSync} from 'node:fs'
import {mkdir, mkdtemp, readFile, rm, stat, writeFile} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {deflateSync} from 'node:zlib'

import sharp, {type Sharp} from 'sharp'

import {DEFAULT_LIMITS} from '../src/lib/config/settings.js'
import {decodeBound, decodeImage, probeImage} from '../src/lib/image/decode.js'
import {BIN, cliEnv, header, interleave, median, multipartBody, pairedRatio, ROOT, startServer, STANDIN_DIR, table} from './lib.js'

const TARGET_MIB = 600
const MIB = 1024 * 1024
const MODEL_DIR = process.env.MOD_MODEL_DIR ?? (existsSync(STANDIN_DIR) ? STANDIN_DIR : join(ROOT, 'test', 'fixtures', 'models', 'toy'))
/** A white band on the left, so that border trimming crops (the costlier path). */
const BORDER = 16
const SIDE = 10_000

header('decode-memory', 'RSS growth over idle of `mod scan`, `mod hash` and a `mod serve` worker per image')
process.stdout.write(`model: ${MODEL_DIR}\n`)

// ---------- inputs ----------

type Space = 'grey' | 'rgb' | 'rgba' | 'cmyk'
const BANDS: Record<Space, number> = {grey: 1, rgb: 3, rgba: 4, cmyk: 4}

/** Side of the squares of the pictures: a multiple of the TIFF strips' rows. */
const BLOCK = 512
const COLOURS = [
  {r: 200, g: 60, b: 40},
  {r: 30, g: 90, b: 160},
]

/**
 * Squares of two colours with a white band on the left, `width` x `height`, in sharp's 8-bit RGB(A): border
 * trimming cuts the band, so the scored part is a copy (the costliest path), and the file stays small.
 */
function picture(width: number, height: number, alpha = false): Sharp {
  const columns = Math.ceil((width - BORDER) / BLOCK)
  const rows = Math.ceil(height / BLOCK)
  const channels = alpha ? 4 : 3
  const cells = Buffer.alloc(columns * rows * channels)
  for (let i = 0; i < columns * rows; i++) {
    const {r, g, b} = COLOURS[((i % columns) + Math.floor(i / columns)) % 2]
    cells.set([r, g, b, 153].slice(0, channels), channels * i)
  }
  return sharp(cells, {raw: {width: columns, height: rows, channels}})
    .resize(width - BORDER, height, {kernel: 'nearest', fit: 'fill'})
    .extend({left: BORDER, background: {r: 255, g: 255, b: 255, alpha: 1}})
}

/**
 * A TIFF whose every strip is the same compressed bytes (so 10 000 x 10 000 float pixels take a few KB), `pages`
 * pages, with the given orientation. Sharp writes only 8 and 16-bit TIFFs and no CMYK with alpha, hence this.
 */
function tiff(o: {space: Space; bits: 8 | 16 | 32; orientation: number; pages?: number; width?: number; height?: number}): Buffer {
  const width = o.width ?? SIDE
  const height = o.height ?? SIDE
  const bands = BANDS[o.space]
  const bytes = o.bits / 8
  const rowsPerStrip = 16
  // The picture's two colours and white, per band, as 0-1 (CMYK as ink).
  const colour = (kind: 'white' | 0 | 1, band: number): number => {
    if (o.space === 'cmyk') return kind === 'white' ? 0 : [[0.1, 0.7, 0.8, 0.1], [0.8, 0.5, 0.1, 0.2]][kind][band]
    if (kind === 'white' || band === 3) return kind === 'white' ? 1 : 0.6
    const {r, g, b} = COLOURS[kind]
    return [r, g, b][o.space === 'grey' ? 1 : band] / 255
  }
  /** A row of the squares whose first square has colour `parity`. */
  const row = (parity: number): Buffer => {
    const out = Buffer.alloc(width * bands * bytes)
    for (let x = 0; x < width; x++) {
      const kind = x < BORDER ? 'white' : ((Math.floor((x - BORDER) / BLOCK) + parity) % 2 as 0 | 1)
      for (let b = 0; b < bands; b++) {
        const v = colour(kind, b)
        const at = (x * bands + b) * bytes
        if (o.bits === 8) out[at] = Math.round(v * 255)
        else if (o.bits === 16) out.writeUInt16LE(Math.round(v * 65535), at)
        // libvips flattens and casts float samples on the 0-255 scale.
        else out.writeFloatLE(255 * v, at)
      }
    }
    return out
  }
  const rowsOf = [row(0), row(1)]
  const strips = Math.ceil(height / rowsPerStrip)
  // Layout: header, each distinct strip once (its parity and row count), then per page its IFD and its arrays.
  const headerBytes = Buffer.from([0x49, 0x49, 42, 0, 0, 0, 0, 0])
  const parts: Buffer[] = [headerBytes]
  let offset = headerBytes.length
  const stored = new Map<string, {at: number; length: number}>()
  const stripOf = Array.from({length: strips}, (_, k) => {
    const parity = Math.floor((k * rowsPerStrip) / BLOCK) % 2
    const count = Math.min(rowsPerStrip, height - k * rowsPerStrip)
    const key = `${parity}x${count}`
    let entry = stored.get(key)
    if (!entry) {
      const data = deflateSync(Buffer.concat(Array.from({length: count}, () => rowsOf[parity])))
      entry = {at: offset, length: data.length}
      parts.push(data)
      offset += data.length
      stored.set(key, entry)
    }
    return entry
  })
  const pages = o.pages ?? 1
  const photometric = {grey: 1, rgb: 2, rgba: 2, cmyk: 5}[o.space]
  let previousNext = 4
  const chunks: {at: number; data: Buffer}[] = []
  // Where each IFD's offset is written: the header's first-IFD field, then each IFD's next-IFD field.
  const links: {at: number; value: number}[] = []
  for (let p = 0; p < pages; p++) {
    const tags: [number, number, number, number | Buffer][] = []
    const short = (tag: number, v: number) => tags.push([tag, 3, 1, v])
    const long = (tag: number, v: number) => tags.push([tag, 4, 1, v])
    const shorts = (tag: number, vs: number[]) => {
      const b = Buffer.alloc(2 * vs.length)
      vs.forEach((v, i) => b.writeUInt16LE(v, 2 * i))
      tags.push([tag, 3, vs.length, vs.length <= 2 ? vs[0] | ((vs[1] ?? 0) << 16) : b])
    }
    const longs = (tag: number, vs: number[]) => {
      const b = Buffer.alloc(4 * vs.length)
      vs.forEach((v, i) => b.writeUInt32LE(v, 4 * i))
      tags.push([tag, 4, vs.length, vs.length === 1 ? vs[0] : b])
    }
    if (pages > 1) long(254, 2)
    long(256, width)
    long(257, height)
    shorts(258, Array(bands).fill(o.bits))
    short(259, 8)
    short(262, photometric)
    longs(273, stripOf.map((e) => e.at))
    short(274, o.orientation)
    short(277, bands)
    long(278, rowsPerStrip)
    longs(279, stripOf.map((e) => e.length))
    short(284, 1)
    if (o.space === 'rgba') short(338, 2)
    shorts(339, Array(bands).fill(o.bits === 32 ? 3 : 1))
    tags.sort((a, b) => a[0] - b[0])
    const ifdAt = offset
    const ifd = Buffer.alloc(2 + 12 * tags.length + 4)
    offset += ifd.length
    ifd.writeUInt16LE(tags.length, 0)
    tags.forEach(([tag, type, count, value], i) => {
      const at = 2 + 12 * i
      ifd.writeUInt16LE(tag, at)
      ifd.writeUInt16LE(type, at + 2)
      ifd.writeUInt32LE(count, at + 4)
      if (Buffer.isBuffer(value)) {
        ifd.writeUInt32LE(offset, at + 8)
        chunks.push({at: offset, data: value})
        offset += value.length + (value.length % 2)
      } else ifd.writeUInt32LE(value >>> 0, at + 8)
    })
    chunks.push({at: ifdAt, data: ifd})
    links.push({at: previousNext, value: ifdAt})
    previousNext = ifdAt + ifd.length - 4
  }
  const out = Buffer.alloc(offset)
  Buffer.concat(parts).copy(out, 0)
  for (const c of chunks) c.data.copy(out, c.at)
  for (const l of links) out.writeUInt32LE(l.value, l.at)
  return out
}

const withOrientation = (s: Sharp, orientation: number) => (orientation === 1 ? s : s.withMetadata({orientation}))
const ALL = [1, 2, 3, 4, 5, 6, 7, 8]

/** An animation of `frames` flat frames of `side` x `side`, each a different shade. */
function animation(frames: number, side: number): Sharp {
  const data = Buffer.alloc(side * side * frames * 3)
  for (let f = 0; f < frames; f++) data.fill(Buffer.from([20 * f, 100, 200]), f * side * side * 3, (f + 1) * side * side * 3)
  return sharp(data, {raw: {width: side, height: side * frames, channels: 3, pageHeight: side}, limitInputPixels: false})
}

/** name → how to make it. Each format at the most pixels its share of the default limits allows. */
const INPUTS: Record<string, () => Promise<Buffer>> = {}
for (const o of ALL) INPUTS[`jpeg-rgb-10000-o${o}.jpg`] = () => withOrientation(picture(SIDE, SIDE).jpeg({quality: 90}), o).toBuffer()
for (const o of [1, 6]) INPUTS[`jpeg-progressive-5000-o${o}.jpg`] = () => withOrientation(picture(5000, 5000).jpeg({progressive: true, quality: 95, chromaSubsampling: '4:4:4'}), o).toBuffer()
INPUTS['jpeg-grey-10000-o6.jpg'] = () => withOrientation(picture(SIDE, SIDE).toColourspace('b-w').jpeg(), 6).toBuffer()
INPUTS['jpeg-cmyk-3535-o6.jpg'] = () => withOrientation(picture(3535, 3535).toColourspace('cmyk').jpeg({quality: 100}), 6).toBuffer()
INPUTS['png-rgb8-10000-o6.png'] = () => withOrientation(picture(SIDE, SIDE).png(), 6).toBuffer()
for (const o of ALL) INPUTS[`png-rgba16-10000-o${o}.png`] = () => withOrientation(picture(SIDE, SIDE, true).toColourspace('rgb16').png(), o).toBuffer()
INPUTS['png-grey16-10000-o6.png'] = () => withOrientation(picture(SIDE, SIDE).toColourspace('grey16').png(), 6).toBuffer()
INPUTS['png-interlaced-rgba16-5000-o6.png'] = () => withOrientation(picture(5000, 5000, true).toColourspace('rgb16').png({progressive: true}), 6).toBuffer()
for (const o of ALL) INPUTS[`tiff-rgba-float-10000-o${o}.tif`] = async () => tiff({space: 'rgba', bits: 32, orientation: o})
INPUTS['tiff-rgba16-10000-o6.tif'] = async () => tiff({space: 'rgba', bits: 16, orientation: 6})
INPUTS['tiff-rgb8-10000-o6.tif'] = async () => tiff({space: 'rgb', bits: 8, orientation: 6})
INPUTS['tiff-grey-float-10000-o6.tif'] = async () => tiff({space: 'grey', bits: 32, orientation: 6})
INPUTS['tiff-cmyk8-10000-o6.tif'] = async () => tiff({space: 'cmyk', bits: 8, orientation: 6})
INPUTS['tiff-cmyk16-10000-o6.tif'] = async () => tiff({space: 'cmyk', bits: 16, orientation: 6})
INPUTS['tiff-rgba-float-3-pages-o6.tif'] = async () => tiff({space: 'rgba', bits: 32, orientation: 6, pages: 3})
INPUTS['gif-8-frames-2041.gif'] = () => animation(8, 2041).gif().toBuffer()
INPUTS['webp-8-frames-1767.webp'] = () => animation(8, 1767).webp({lossless: true}).toBuffer()
INPUTS['tiny-16.png'] = () => picture(BORDER + 16, 16).png().toBuffer()

// ---------- measuring ----------

async function status(pid: number): Promise<{rss: number; peak: number}> {
  const text = await readFile(`/proc/${pid}/status`, 'utf8')
  const kib = (key: string) => Number(new RegExp(`${key}:\\s+(\\d+)`).exec(text)?.[1] ?? Number.NaN)
  return {rss: kib('VmRSS') / 1024, peak: kib('VmHWM') / 1024}
}

/** A CLI run's peak RSS (MiB) and how it ended: `exit N` and, for an error, its code. */
function cliPeak(args: string[], env: Record<string, string>): Promise<{peak: number; answer: string}> {
  const child = spawn(process.execPath, [BIN, ...args], {cwd: ROOT, env: cliEnv(env), stdio: ['ignore', 'pipe', 'ignore']})
  let stdout = ''
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()))
  let peak = 0
  const timer = setInterval(() => {
    status(child.pid as number)
      .then((s) => {
        // An exiting process has no VmHWM line any more.
        if (Number.isFinite(s.peak)) peak = Math.max(peak, s.peak)
      })
      .catch(() => {})
  }, 10)
  return new Promise((done) =>
    child.once('close', (code) => {
      clearInterval(timer)
      const error = /"code":"([a-z_]+)"/.exec(stdout)?.[1]
      done({peak, answer: `exit ${code}${error ? ` ${error}` : ''}`})
    }),
  )
}

async function post(url: string, file: Buffer, name: string): Promise<string> {
  const form = multipartBody(file, name, 'application/octet-stream')
  const res = await fetch(`${url}/v1/moderate`, {method: 'POST', headers: {'content-type': form.contentType}, body: new Uint8Array(form.body)})
  const body = (await res.json()) as {error?: {code: string}}
  return `${res.status}${body.error ? ` ${body.error.code}` : ''}`
}

/** A fresh worker: idle RSS after three tiny requests, then the peak of one request for `name` above it. */
async function servePeak(dir: string, name: string, env: Record<string, string>): Promise<{extra: number; answer: string}> {
  const server = await startServer(['--workers', '1'], env)
  try {
    const tiny = await readFile(join(dir, 'tiny-16.png'))
    for (let i = 0; i < 3; i++) await post(server.url, tiny, 'tiny-16.png')
    const idle = (await status(server.pid)).rss
    await writeFile(`/proc/${server.pid}/clear_refs`, '5')
    const answer = await post(server.url, await readFile(join(dir, name)), name)
    return {extra: (await status(server.pid)).peak - idle, answer}
  } finally {
    await server.stop()
  }
}

/** The earlier decode of a still, for the speed comparison: the header read, then orientation, flattening and the cast in one libvips pipeline. */
async function onePipeline(file: Buffer): Promise<Buffer> {
  await probeImage(file)
  return sharp(file, {failOn: 'error', autoOrient: true}).flatten({background: '#ffffff'}).toColourspace('srgb').raw({depth: 'uchar'}).toBuffer()
}

async function speed(): Promise<void> {
  const textured = (width: number, height: number) =>
    sharp(Buffer.from(Array.from({length: 64 * 48 * 3}, (_, i) => (i * 7919) % 251)), {raw: {width: 64, height: 48, channels: 3}}).resize(width, height, {kernel: 'cubic'})
  const files: Record<string, Buffer> = {
    'jpeg 1280x720': await textured(1280, 720).jpeg({quality: 85}).toBuffer(),
    'jpeg 1280x720, orientation 6': await textured(1280, 720).jpeg({quality: 85}).withMetadata({orientation: 6}).toBuffer(),
    'jpeg 4000x3000': await textured(4000, 3000).jpeg({quality: 85}).toBuffer(),
    'jpeg 4000x3000, orientation 6': await textured(4000, 3000).jpeg({quality: 85}).withMetadata({orientation: 6}).toBuffer(),
  }
  const rows: (string | number)[][] = []
  for (const [name, file] of Object.entries(files)) {
    const times = await interleave({now: () => decodeImage(file, DEFAULT_LIMITS), before: () => onePipeline(file)}, 8)
    rows.push([name, median(times.now).toFixed(1), median(times.before).toFixed(1), pairedRatio(times.now, times.before).toFixed(2)])
  }
  process.stdout.write('\ndecode time of ordinary JPEGs (noisy on a busy machine)\n')
  table([['image', 'now ms', 'one pipeline ms', 'now / before (paired)'], ...rows])
}

const kept = process.env.DECODE_MEMORY_INPUTS
const dir = kept ?? (await mkdtemp(join(tmpdir(), 'mod-decode-memory-')))
try {
  const only = process.argv.slice(2).filter((a) => a !== '--no-speed')
  const names = Object.keys(INPUTS).filter((n) => n !== 'tiny-16.png' && (only.length === 0 || only.some((o) => n.includes(o))))
  await mkdir(dir, {recursive: true})
  for (const name of ['tiny-16.png', ...names]) if (!existsSync(join(dir, name))) await writeFile(join(dir, name), await INPUTS[name]())
  // A hash list, so that the engine path runs PDQ too (its one hash matches nothing).
  await writeFile(join(dir, 'list.txt'), `${'0'.repeat(64)}\n`)
  await writeFile(join(dir, 'policy.yaml'), 'hash_lists:\n  bench:\n    file: list.txt\n')
  const env = {MOD_MODEL_DIR: MODEL_DIR, MOD_CONFIG: join(dir, 'policy.yaml')}
  const tiny = join(dir, 'tiny-16.png')
  const scanIdle = (await cliPeak(['scan', tiny, '--ndjson', '--config', join(dir, 'policy.yaml')], env)).peak
  const hashIdle = (await cliPeak(['hash', tiny, '--ndjson'], env)).peak
  process.stdout.write(`idle: mod scan ${scanIdle.toFixed(0)} MiB, mod hash ${hashIdle.toFixed(0)} MiB (peak on a 16x16 PNG)\n`)

  const rows: (string | number)[][] = []
  let worst = {name: '', extra: 0}
  for (const name of names) {
    const path = join(dir, name)
    const meta = await sharp(path, {limitInputPixels: false}).metadata()
    const {size: bytes} = await stat(path)
    const scanned = await cliPeak(['scan', path, '--ndjson', '--config', join(dir, 'policy.yaml')], env)
    const hashed = await cliPeak(['hash', path, '--ndjson'], env)
    const served = await servePeak(dir, name, env)
    const extras = [scanned.peak - scanIdle, hashed.peak - hashIdle, served.extra]
    const top = Math.max(...extras)
    if (top > worst.extra) worst = {name, extra: top}
    const size = `${meta.width}x${meta.pageHeight ?? meta.height}${(meta.pages ?? 1) > 1 ? `x${meta.pages}` : ''}`
    rows.push([name, size, `${meta.depth} ${meta.channels}b`, bytes > MIB ? `${(bytes / MIB).toFixed(1)}M` : `${Math.ceil(bytes / 1024)}K`, ...extras.map((e) => e.toFixed(0)), `${scanned.answer}/${hashed.answer}/${served.answer}`, top <= TARGET_MIB ? 'PASS' : 'MISS'])
    process.stdout.write(`${rows.at(-1)?.join('  ')}\n`)
  }
  process.stdout.write('\n')
  table([['input', 'size', 'depth bands', 'file', 'scan +MiB', 'hash +MiB', 'serve +MiB', 'scan/hash/serve', `<= ${TARGET_MIB}`], ...rows])
  const bound = decodeBound(DEFAULT_LIMITS)
  process.stdout.write(`\nworst: ${worst.name} +${worst.extra.toFixed(0)} MiB (target ${TARGET_MIB} MiB: ${worst.extra <= TARGET_MIB ? 'PASS' : 'MISS'})\n`)
  process.stdout.write(`documented bound (docs/operations.md), from the decoder's constants: ${(bound.bytes / MIB).toFixed(0)} MiB = ${bound.formula}\n`)
  if (!process.argv.includes('--no-speed')) await speed()
} finally {
  if (!kept) await rm(dir, {recursive: true, force: true})
}
