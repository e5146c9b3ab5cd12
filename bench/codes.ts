/**
 * `npx tsx bench/codes.ts [--rounds N] [--photos DIR] [--expected DIR]`: the codes signal's reader (src/lib/signals/codes/read.ts)
 * measured. Run by hand; not part of `npm run bench`.
 * - speed: the test photos (test/fixtures/photos) resized to cover 1280x720, plain and with four codes printed on
 *   them (a QR code at 4 px a module, a 60 px QR code, an EAN-13 and a Code 128 turned a quarter), read in turns
 *   (plain, then with codes, photo by photo) for --rounds rounds (default 5): wall and CPU time per image (reading
 *   runs on the calling thread alone, so its CPU time is steadier than wall time on a shared machine, though a
 *   busy host inflates it too), and the codes found, with the reader's options as the codes signal opens it
 *   (CODES_READER_OPTIONS: light-on-dark codes looked for too). Then the reader's opening and its first reads (the
 *   WebAssembly compiler tiers up on the first frames); the same photos with dark-on-light codes only
 *   (`inverted: false`), without linear barcodes turned a quarter (`quarterTurns: false`: the Code 128 is then missed)
 *   and with QR codes only; larger frames (1920x1080, and a 12-megapixel photo read scaled down to
 *   DEFAULT_MAX_PIXELS); frames of random noise (the costliest input seen: the bound for a hostile frame); and the
 *   module's WebAssembly memory. Target: at most 20 ms of CPU per 1280x720 image, plain and with codes.
 * - photos (--photos DIR, e.g. ../shared/data/ordinary-photos): every image of DIR decoded as the engine decodes
 *   (decodeImage, default limits) and read; prints each code found (file, format, payload, box) and the time per
 *   photo.
 * - expected payloads (--expected DIR, e.g. ../shared/data/codes-photos): see `expected` below.
 */
import './no-telemetry.js'

import {readdir, readFile} from 'node:fs/promises'
import {join} from 'node:path'
import {parseArgs} from 'node:util'

import {DEFAULT_LIMITS} from '../src/lib/config/settings.js'
import {decodeImage} from '../src/lib/image/decode.js'
import {scoredBox} from '../src/lib/image/prepare.js'
import {crop} from '../src/lib/image/trim.js'
import {DEFAULT_MAX_PIXELS, openCodeReader, type CodeReader, type CodeReaderOptions, type FoundCode} from '../src/lib/signals/codes/read.js'
import {CODES_READER_OPTIONS} from '../src/lib/signals/codes/signal.js'
import type {RgbImage} from '../src/lib/types.js'
import {drawCode, printOnPhoto, resizeCode} from '../test/lib/signals/codes/draw.js'
import {header, load, median, percentile, ROOT, table, verdict} from './lib.js'

const {values} = parseArgs({options: {rounds: {type: 'string', default: '5'}, photos: {type: 'string'}, expected: {type: 'string'}}})
const ROUNDS = Number(values.rounds)
const TARGET_MS = 20

const cpuMs = () => {
  const u = process.cpuUsage()
  return (u.user + u.system) / 1000
}

/** Wall and CPU milliseconds of one read, and the codes it found. */
function timed(reader: CodeReader, image: RgbImage): {wall: number; cpu: number; codes: FoundCode[]} {
  const c = cpuMs()
  const t = performance.now()
  const codes = reader.read(image)
  return {wall: performance.now() - t, cpu: cpuMs() - c, codes}
}

const fmt = (v: number) => v.toFixed(1)

async function testImages(width: number, height: number, count = Infinity): Promise<{plain: RgbImage[]; codes: RgbImage[]}> {
  const names = (await readdir(join(ROOT, 'test', 'fixtures', 'photos'))).filter((f) => f.endsWith('.jpg')).sort().slice(0, count)
  const qr = await drawCode('QRCode', 'https://example.com/promo?campaign=spring', 4)
  const small = await resizeCode(await drawCode('QRCode', 'https://t.me/x', 3), 60)
  const ean = await drawCode('EAN13', '4006381333931', 2)
  const code128 = await drawCode('Code128', 'PARCEL-0042', 2)
  const plain: RgbImage[] = []
  const codes: RgbImage[] = []
  for (const [i, name] of names.entries()) {
    plain.push((await printOnPhoto(name, width, height, [])).image)
    const shift = (i * 37) % 200
    const placed = [
      {code: qr, left: 60 + shift, top: 60},
      {code: small, left: width - 200, top: 80 + shift},
      {code: ean, left: 420, top: height - 300 + (shift % 60)},
      {code: code128, left: width - 400 - shift, top: height - 420, angle: 90},
    ]
    codes.push((await printOnPhoto(name, width, height, placed)).image)
  }
  return {plain, codes}
}

/** Pixels of random noise: edges everywhere, the costliest frame seen for zxing's detectors. */
function noiseFrame(width: number, height: number, seed: number): RgbImage {
  const data = Buffer.alloc(width * height * 3)
  let x = seed
  for (let i = 0; i < data.length; i++) {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0
    data[i] = x >>> 24
  }
  return {data, width, height}
}

/** Rounds of reads in turns over the two sets; per-image times of each. */
function measure(reader: CodeReader, sets: Record<string, RgbImage[]>, rounds: number) {
  const times: Record<string, {wall: number[]; cpu: number[]; found: number[]}> = {}
  for (const name of Object.keys(sets)) times[name] = {wall: [], cpu: [], found: []}
  for (let r = 0; r < rounds; r++) {
    const count = Math.max(...Object.values(sets).map((s) => s.length))
    for (let i = 0; i < count; i++) {
      for (const [name, images] of Object.entries(sets)) {
        if (i >= images.length) continue
        const t = timed(reader, images[i])
        times[name].wall.push(t.wall)
        times[name].cpu.push(t.cpu)
        times[name].found.push(t.codes.length)
      }
    }
  }
  return times
}

function row(label: string, t: {wall: number[]; cpu: number[]; found: number[]}): string[] {
  return [label, fmt(median(t.wall)), fmt(percentile(t.wall, 90)), fmt(median(t.cpu)), fmt(percentile(t.cpu, 90)), `${Math.min(...t.found)}-${Math.max(...t.found)}`]
}

async function speed(): Promise<void> {
  header('codes', `the codes reader on 1280x720 photos, ${ROUNDS} rounds`)
  const hd = await testImages(1280, 720)

  const opened = performance.now()
  const reader = await openCodeReader(CODES_READER_OPTIONS)
  const openMs = performance.now() - opened
  const first = [hd.codes[0], hd.plain[1], hd.codes[2]].map((image) => timed(reader, image))
  process.stdout.write(`open ${fmt(openMs)} ms; first reads (wall ms): ${first.map((t) => fmt(t.wall)).join(', ')}\n\n`)

  // Warm: the first reads above ran the compiler's tiers up.
  for (let i = 0; i < 3; i++) measure(reader, {plain: hd.plain.slice(0, 4), codes: hd.codes.slice(0, 4)}, 1)
  const main = measure(reader, hd, ROUNDS)

  const variants: [string, CodeReaderOptions][] = [
    ['dark-on-light only', {...CODES_READER_OPTIONS, inverted: false}],
    ['no quarter turns', {...CODES_READER_OPTIONS, quarterTurns: false}],
    ['QR codes only', {...CODES_READER_OPTIONS, formats: ['qr_code']}],
  ]
  const rows = [['1280x720, ms per image', 'wall median', 'wall p90', 'CPU median', 'CPU p90', 'codes found'], row('plain photos', main.plain), row('with 4 codes', main.codes)]
  for (const [label, options] of variants) {
    const other = await openCodeReader(options)
    measure(other, {plain: hd.plain.slice(0, 4), codes: hd.codes.slice(0, 4)}, 2)
    const t = measure(other, hd, Math.max(1, Math.ceil(ROUNDS / 2)))
    rows.push(row(`${label}: plain`, t.plain), row(`${label}: with 4 codes`, t.codes))
    await other.close()
  }

  const full = await testImages(1920, 1080, 6)
  const t1080 = measure(reader, full, 2)
  rows.push(row('1920x1080: plain', t1080.plain), row('1920x1080: with 4 codes', t1080.codes))
  const big = await testImages(4032, 3024, 3)
  const t12 = measure(reader, big, 1)
  rows.push(row(`4032x3024 (read at 1/3): plain`, t12.plain), row(`4032x3024 (read at 1/3): with 4 codes`, t12.codes))
  const noise = [noiseFrame(1280, 720, 1), noiseFrame(1280, 720, 2), noiseFrame(1920, 1080, 3), noiseFrame(1920, 1080, 4)]
  const tNoise = measure(reader, {'1280x720': noise.slice(0, 2), '1920x1080': noise.slice(2)}, 2)
  rows.push(row('random noise 1280x720 (the worst seen)', tNoise['1280x720']), row('random noise 1920x1080', tNoise['1920x1080']))
  table(rows)

  const memory = reader.memoryBytes() / 2 ** 20
  process.stdout.write(`\nWebAssembly memory of the reader: ${fmt(memory)} MiB (frames read at up to ${DEFAULT_MAX_PIXELS} pixels); load ${load()}\n`)
  verdict('codes', '1280x720 photos', 'CPU ms per image without codes', median(main.plain.cpu), 'max', TARGET_MS, ' ms', 1)
  verdict('codes', '1280x720 photos', 'CPU ms per image with 4 codes', median(main.codes.cpu), 'max', TARGET_MS, ' ms', 1)
  await reader.close()
}

async function photos(dir: string): Promise<void> {
  header('codes', `codes in every image of ${dir}`)
  const files = (await readdir(dir)).filter((f) => /\.(jpe?g|png|webp|gif|avif|tiff?)$/i.test(f)).sort()
  const reader = await openCodeReader(CODES_READER_OPTIONS)
  const found: string[][] = [['file', 'format', 'payload', 'box']]
  const times: number[] = []
  let withCodes = 0
  for (const file of files) {
    const [frame] = await decodeImage(await readFile(join(dir, file)), DEFAULT_LIMITS)
    const {wall, codes} = timed(reader, frame)
    times.push(wall)
    if (codes.length > 0) withCodes++
    for (const c of codes) found.push([file, c.format, JSON.stringify(c.payload), JSON.stringify(c.box)])
  }
  await reader.close()
  if (found.length > 1) table(found)
  process.stdout.write(
    `${files.length} images, ${found.length - 1} codes in ${withCodes} of them; reading ${fmt(median(times))} ms median, ${fmt(percentile(times, 90))} ms p90 a photo (wall, at its decoded size); load ${load()}\n`,
  )
}

/** A UPC-E's 8 digits as the UPC-A's 12 it stands for (the number system digit and check digit kept). */
function expandUpcE(upcE: string): string {
  const [s, d, c] = [upcE[0], upcE.slice(1, 7), upcE[7]]
  const last = Number(d[5])
  if (last <= 2) return `${s}${d.slice(0, 2)}${d[5]}0000${d.slice(2, 5)}${c}`
  if (last === 3) return `${s}${d.slice(0, 3)}00000${d.slice(3, 5)}${c}`
  if (last === 4) return `${s}${d.slice(0, 4)}00000${d[4]}${c}`
  return `${s}${d.slice(0, 5)}0000${d[5]}${c}`
}

/** Whether a code read is the expected payload, as zxing's test files write it (UPC-A in 12 digits, UPC-E in 8; `mod` gives both as GTIN-13). */
function isExpected(code: FoundCode, expected: string): boolean {
  // The files end with a line break or not, whatever the payload.
  if (code.payload === expected || code.payload.trim() === expected.trim()) return true
  expected = expected.trim()
  if (code.format === 'upc_a') return code.payload === `0${expected}`
  if (code.format === 'upc_e') return /^\d{8}$/.test(expected) && code.payload === `0${expandUpcE(expected)}`
  return false
}

/**
 * Every image under DIR (subfolders too) that has its payload in a `.txt` beside it, as zxing's black-box test
 * folders have: how many are read, on the whole decoded frame (what the codes signal reads) and on the
 * border-trimmed frame the other signals score (what it read before), folder by folder.
 */
async function expected(dir: string): Promise<void> {
  header('codes', `expected payloads under ${dir}: the whole frame against the border-trimmed one`)
  const reader = await openCodeReader(CODES_READER_OPTIONS)
  const rows: string[][] = [['folder', 'images', 'read whole', 'read trimmed']]
  const sum = [0, 0, 0]
  for (const folder of ['.', ...(await readdir(dir, {withFileTypes: true})).filter((d) => d.isDirectory()).map((d) => d.name).sort()]) {
    const counts = [0, 0, 0]
    for (const file of (await readdir(join(dir, folder))).filter((f) => /\.(jpe?g|png|gif|webp|tiff?)$/i.test(f)).sort()) {
      const want = await readFile(join(dir, folder, file.replace(/\.[^.]+$/, '.txt')), 'utf8').catch(() => undefined)
      if (want === undefined) continue
      const [frame] = await decodeImage(await readFile(join(dir, folder, file)), DEFAULT_LIMITS)
      const read = (image: RgbImage) => reader.read(image).some((c) => isExpected(c, want))
      counts[0]++
      if (read(frame)) counts[1]++
      if (read(crop(frame, scoredBox(frame, true)))) counts[2]++
    }
    if (counts[0] === 0) continue
    rows.push([folder, ...counts.map(String)])
    counts.forEach((n, i) => (sum[i] += n))
  }
  await reader.close()
  rows.push(['all', ...sum.map(String)])
  table(rows)
  const pct = (n: number) => ((100 * n) / sum[0]).toFixed(1)
  process.stdout.write(`read whole ${pct(sum[1])}%, trimmed ${pct(sum[2])}% of ${sum[0]} images; load ${load()}\n`)
}

if (values.expected !== undefined) await expected(values.expected)
else if (values.photos !== undefined) await photos(values.photos)
else await speed()
