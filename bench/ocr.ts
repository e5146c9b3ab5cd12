/**
 * `npx tsx bench/ocr.ts [PHOTOS] [--samples N] [--side PX] [--models DIR] [--turns N] [--budget COLUMNS] [--only speed|accuracy|photos|budget]`:
 * the text signal measured, the detector at its default bound or at --side, the shipped models or those in --models
 * (det.onnx, rec.onnx, keys.txt; the reader alone: the engine's part always uses the shipped ones).
 * - accuracy: lines rendered (ground truth by construction) onto plain backgrounds and onto photos from PHOTOS
 *   (e.g. ../shared/data/ordinary-photos), in six Debian fonts, 12 to 40 px, turned up to 15 degrees, with
 *   noise, saved as JPEG quality 40 and read back. Prints character and word accuracy by text size and the hit
 *   rate of the rules (hits found in what is read / hits in the rendered text).
 * - speed: time per 1280x720 image with three lines on a photo (from PHOTOS, else photo-like texture; detector
 *   at its default bound), beside the load average: the reader alone, then through the engine (`moderateImage`
 *   of the same photos as JPEG: CLIP, the NSFW specialist and the text signal) with a policy with text rules
 *   against the same engine without, taking --turns turns (default 6) of 5 images each, with each signal's own
 *   wall and CPU time per image. The engine uses MOD_MODEL_DIR, else the stand-in model when built
 *   (bench/README.md), else the test suite's toy model (then CLIP's share means nothing).
 * - budget: the longest reading an image can ask for, within its budget (ReadOptions.budget): a page of 200 short
 *   words, a page of 39 long lines (the budget spent first), and an animation of 8 pages of words read as the
 *   engine reads one (ANIMATION_FRAMES_READ frames sharing the budget); wall and CPU time, lines read, and the
 *   longest the event loop waited meanwhile (what delays GET /health in the server).
 * - photos: the contact rules and a small word list over every photo in PHOTOS; each hit is printed with the
 *   line it was read in, to check by eye that the text is really there.
 * Not part of `npm run bench`: it needs a folder of photos this repository does not ship.
 */
import './no-telemetry.js'

import {existsSync} from 'node:fs'
import {loadavg} from 'node:os'
import {monitorEventLoopDelay} from 'node:perf_hooks'
import {readdir} from 'node:fs/promises'
import {join} from 'node:path'

import sharp from 'sharp'

import {buildPolicy, loadPolicyFile} from '../src/lib/config/policy.js'
import {DEFAULT_LIMITS} from '../src/lib/config/settings.js'
import {createEngine, type Engine} from '../src/lib/engine.js'
import type {Policy} from '../src/lib/policy/types.js'
import {SIGNALS} from '../src/lib/signals/registry.js'
import type {Signal} from '../src/lib/signals/signal.js'
import {openTextModel} from '../src/lib/signals/text/model.js'
import {ANIMATION_FRAMES_READ} from '../src/lib/signals/text/engine-signal.js'
import {DEFAULT_READ_OPTIONS, frameBudget, readText as readWith, type ReadOptions} from '../src/lib/signals/text/read.js'
import {applyRules, compileRules} from '../src/lib/rules/match.js'
import {distance} from '../src/lib/suggest.js'
import type {RgbImage} from '../src/lib/types.js'
import {CACHE_DIR, interleave, median, pairedRatio, policyFile, ROOT, STANDIN_DIR, texturedPixels} from './lib.js'

const args = process.argv.slice(2)
const flag = (name: string) => {
  const i = args.indexOf(name)
  return i < 0 ? undefined : args.splice(i, 2)[1]
}
const samples = Number(flag('--samples') ?? 120)
const only = flag('--only')
const side = flag('--side')
const turns = Number(flag('--turns') ?? 6)
const modelsDir = flag('--models')
const budget = flag('--budget')
const options: ReadOptions = {...DEFAULT_READ_OPTIONS, ...(side ? {detectorSide: Number(side)} : {}), ...(budget ? {budget: {columns: Number(budget)}} : {})}
const photosDir = args[0]
const photos = photosDir ? (await readdir(photosDir)).filter((f) => /\.(jpe?g|png|webp)$/i.test(f)).sort() : []

const FONTS = ['DejaVu Sans', 'DejaVu Serif', 'DejaVu Sans Mono', 'Liberation Sans', 'Liberation Serif', 'Liberation Mono']
const SIZES = [12, 14, 16, 20, 28, 40]
const TEXTS = [
  'Limited offer buy now',
  'write to sales@example.com',
  'Call +44 20 7946 0958 today',
  'follow us at www.example.org',
  'DM @cheap_deals on t.me/cheap_deals',
  'the quick brown fox jumps over the lazy dog',
  'Fresh bread and coffee',
  'Open daily from 9 to 5',
  'WHEN YOU SEE IT',
  'Main Street Station',
  'Free shipping on all orders',
  'Grand opening this weekend',
  'Keep calm and carry on',
  'No parking at any time',
  'Happy birthday Anna',
]
const RULES = compileRules([
  {name: 'contacts', category: 'contact_info', detect: ['email', 'phone', 'url', 'handle']},
  {name: 'spam', category: 'spam', words: ['free shipping', 'buy now', 'limited offer']},
])

/** A seeded generator, so that every run renders the same samples. */
function random(seed: number): () => number {
  let s = seed
  return () => {
    s = (s * 1103515245 + 12345) % 2147483648
    return s / 2147483648
  }
}
const rnd = random(21)
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]
const escape = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')

async function background(width: number, height: number, photo: string | undefined): Promise<Buffer> {
  if (photo) return sharp(join(photosDir!, photo)).rotate().resize(width, height, {fit: 'cover'}).removeAlpha().png().toBuffer()
  const grey = 200 + Math.floor(rnd() * 55)
  return sharp({create: {width, height, channels: 3, background: {r: grey, g: grey - Math.floor(rnd() * 30), b: grey}}}).png().toBuffer()
}

interface Sample {
  truth: string
  size: number
  img: RgbImage
}

async function render(text: string, size: number, font: string, angle: number, photo: string | undefined): Promise<RgbImage> {
  // Room for the whole line, turned: glyphs are at most ~0.65 em wide in these fonts.
  const span = Math.ceil(text.length * size * 0.65)
  const width = Math.max(640, span + 80)
  const height = Math.max(360, Math.ceil(span * Math.sin((15 * Math.PI) / 180)) + size * 4)
  const bg = await background(width, height, photo)
  const x = 40
  const y = Math.round(height / 2 + size / 3)
  const paint = photo ? `fill="white" stroke="black" stroke-width="${Math.max(1, size / 12)}" paint-order="stroke"` : 'fill="#202020"'
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}"><text x="${x}" y="${y}" font-family="${font}" font-size="${size}" ${paint} transform="rotate(${angle} ${x + span / 2} ${y})">${escape(text)}</text></svg>`
  const composed = await sharp(bg).composite([{input: Buffer.from(svg)}]).removeAlpha().raw().toBuffer()
  // Noise of ±12 levels, then JPEG quality 40.
  for (let i = 0; i < composed.length; i++) composed[i] = Math.max(0, Math.min(255, composed[i] + Math.round((rnd() - 0.5) * 24)))
  const jpeg = await sharp(composed, {raw: {width, height, channels: 3}}).jpeg({quality: 40}).toBuffer()
  const {data, info} = await sharp(jpeg).raw().toBuffer({resolveWithObject: true})
  return {data, width: info.width, height: info.height}
}

const model = await openTextModel({threads: 2, dir: modelsDir})
const readText = (m: typeof model, frames: RgbImage[]) => readWith(m, frames, options)
const pct = (x: number) => `${(100 * x).toFixed(1)}%`

if (!only || only === 'accuracy') {
  const set: Sample[] = []
  for (let i = 0; i < samples; i++) {
    const size = SIZES[i % SIZES.length]
    const onPhoto = photos.length > 0 && i % 2 === 1
    const truth = pick(TEXTS)
    set.push({truth, size, img: await render(truth, size, pick(FONTS), Math.round((rnd() * 2 - 1) * 15), onPhoto ? pick(photos) : undefined)})
  }
  const buckets = new Map<string, {chars: number; charErr: number; words: number; wordOk: number; n: number; hits: number; found: number}>()
  const misses: string[] = []
  for (const s of set) {
    const [{lines}] = await readText(model, [s.img])
    const read = lines.map((l) => l.text).join(' ')
    const key = s.size >= 16 ? '>= 16 px' : '12-14 px'
    const b = buckets.get(key) ?? {chars: 0, charErr: 0, words: 0, wordOk: 0, n: 0, hits: 0, found: 0}
    b.n++
    b.chars += s.truth.length
    b.charErr += Math.min(s.truth.length, distance(s.truth, read))
    const got = read.split(/\s+/)
    for (const w of s.truth.split(' ')) {
      b.words++
      const k = got.indexOf(w)
      if (k >= 0) {
        b.wordOk++
        got.splice(k, 1)
      }
    }
    buckets.set(key, b)
    const want = applyRules(RULES, [{text: s.truth, box: {x: 0, y: 0, width: 0, height: 0}}]).map((h) => `${h.rule}:${h.detector ?? ''}:${h.text}`)
    const have = new Set(applyRules(RULES, lines).map((h) => `${h.rule}:${h.detector ?? ''}:${h.text}`))
    b.hits += want.length
    b.found += want.filter((w) => have.has(w)).length
    if (s.size >= 16 && read !== s.truth) misses.push(`${s.size}px  ${JSON.stringify(s.truth)} → ${JSON.stringify(read)}`)
  }
  console.log(`accuracy over ${samples} rendered lines (${photos.length > 0 ? 'half on photos' : 'plain backgrounds'}, JPEG 40, noise, ±15°):`)
  for (const [k, b] of [...buckets].sort()) {
    console.log(`  ${k}: ${b.n} lines, characters ${pct(1 - b.charErr / b.chars)}, words ${pct(b.wordOk / b.words)}, rule hits ${b.found}/${b.hits} (${pct(b.found / Math.max(1, b.hits))})`)
  }
  console.log('  (characters: edit distance to all the text read, so text of the photo itself counts against it; a rule hit counts when the same rule finds the same text)')
  console.log(`  lines >= 16 px not read exactly (${misses.length}):`)
  for (const m of misses.slice(0, 25)) console.log(`    ${m}`)
}

/** Each signal's wall and CPU time per image (prepare and infer), kept per signal name while `timing` is set. */
const spent = new Map<string, {wall: number[]; cpu: number[]}>()
let timing: Map<string, {wall: number; cpu: number}> | undefined

async function measure<T>(name: string, fn: () => Promise<T>): Promise<T> {
  const c = process.cpuUsage()
  const t = performance.now()
  const out = await fn()
  const d = process.cpuUsage(c)
  const was = timing?.get(name) ?? {wall: 0, cpu: 0}
  timing?.set(name, {wall: was.wall + performance.now() - t, cpu: was.cpu + (d.user + d.system) / 1000})
  return out
}

function timed(signal: Signal): Signal {
  return {
    ...signal,
    async open(setup, opened) {
      const o = await signal.open(setup, opened)
      return {
        ...o,
        ...(o.prepare && {prepare: (...a: Parameters<NonNullable<typeof o.prepare>>) => measure(signal.name, async () => o.prepare!(...a))}),
        ...(o.infer && {infer: (inputs: unknown[]) => measure(signal.name, () => o.infer!(inputs))}),
      }
    },
  }
}

/** The same photos through the engine, with and without text rules, taking turns; each signal's share printed. */
async function enginePath(imgs: RgbImage[]): Promise<void> {
  const modelDir = process.env.MOD_MODEL_DIR ?? (existsSync(join(STANDIN_DIR, 'manifest.json')) ? STANDIN_DIR : join(ROOT, 'test', 'fixtures', 'models', 'toy'))
  const jpegs = await Promise.all(imgs.map((i) => sharp(i.data, {raw: {width: i.width, height: i.height, channels: 3}}).jpeg({quality: 90}).toBuffer()))
  const rules = await policyFile(
    'ocr-policy.yaml',
    ['text:', '  rules:', '    contacts:', '      category: contact_info', '      detect: [email, phone, url, handle]', '    spam:', '      category: hate_symbols', '      words: [buy now, limited offer]', ''].join('\n'),
  )
  const open = (policy: Policy): Engine =>
    createEngine({
      preset: 'fast',
      modelDir,
      cacheDir: CACHE_DIR,
      policy,
      limits: DEFAULT_LIMITS,
      signals: SIGNALS.map(timed),
    })
  const withText = open((await loadPolicyFile(rules)).policy)
  const without = open(buildPolicy())
  await withText.load()
  await without.load()
  const cpu = {with: 0, without: 0}
  let next = 0
  const side = (engine: Engine, name: 'with' | 'without') => async () => {
    const jpeg = jpegs[next++ % jpegs.length]
    const c = process.cpuUsage()
    timing = new Map()
    await engine.moderateImage(jpeg, 'photo.jpg')
    for (const [signal, t] of timing) {
      const kept = spent.get(`${name} ${signal}`) ?? {wall: [], cpu: []}
      kept.wall.push(t.wall)
      kept.cpu.push(t.cpu)
      spent.set(`${name} ${signal}`, kept)
    }
    timing = undefined
    const d = process.cpuUsage(c)
    cpu[name] += (d.user + d.system) / 1000
  }
  spent.clear()
  const times = await interleave({with: side(withText, 'with'), without: side(without, 'without')}, turns)
  const n = times.with.length + turns
  const a = median(times.with)
  const b = median(times.without)
  const per = (name: string) => [...spent.entries()].filter(([k]) => k.startsWith(`${name} `)).map(([k, v]) => `${k.slice(name.length + 1)} ${median(v.wall).toFixed(0)} ms (CPU ${median(v.cpu).toFixed(0)})`).join(', ')
  console.log(`engine (${modelDir === STANDIN_DIR ? 'stand-in' : modelDir}), moderateImage of the same photos as JPEG, taking turns; load average ${loadavg().map((l) => l.toFixed(1)).join(' ')}:`)
  console.log(`  without text rules: median ${b.toFixed(0)} ms, CPU ${(cpu.without / n).toFixed(0)} ms per image; by signal: ${per('without')}`)
  console.log(`  with text rules:    median ${a.toFixed(0)} ms, CPU ${(cpu.with / n).toFixed(0)} ms per image; by signal: ${per('with')}`)
  console.log(`  the text signal adds ${(a - b).toFixed(0)} ms (median per-turn ratio ${pairedRatio(times.with, times.without).toFixed(2)}x; target 150 ms: ${((a - b) / 150).toFixed(2)}x) and ${((cpu.with - cpu.without) / n).toFixed(0)} ms of CPU per image`)
  await withText.close()
  await without.close()
}

if (!only || only === 'speed') {
  const imgs: RgbImage[] = []
  for (let i = 0; i < 6; i++) {
    // Photo-like texture rather than a plain background, which the engine's border trim would crop to the text.
    const bg = photos.length > 0 ? await background(1280, 720, photos[i * 7]) : await sharp(texturedPixels(1280, 720, 40 + i), {raw: {width: 1280, height: 720, channels: 3}}).png().toBuffer()
    const lines = [0, 1, 2].map(
      (k) => `<text x="${60 + k * 40}" y="${160 + k * 200}" font-family="${FONTS[(i + k) % FONTS.length]}" font-size="${28 + k * 8}" fill="white" stroke="black" stroke-width="2" paint-order="stroke">${escape(TEXTS[(i * 3 + k) % TEXTS.length])}</text>`,
    )
    const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="1280" height="720">${lines.join('')}</svg>`
    const data = await sharp(bg).composite([{input: Buffer.from(svg)}]).removeAlpha().raw().toBuffer()
    imgs.push({data, width: 1280, height: 720})
  }
  await readText(model, [imgs[0]])
  const times: number[] = []
  const cpu0 = process.cpuUsage()
  for (let round = 0; round < 3; round++) {
    for (const img of imgs) {
      const t = performance.now()
      await readText(model, [img])
      times.push(performance.now() - t)
    }
  }
  // CPU time tells what a quiet machine would see when the wall clock is stretched by other processes.
  const cpu = process.cpuUsage(cpu0)
  const cpuMs = (cpu.user + cpu.system) / 1000 / times.length
  times.sort((a, b) => a - b)
  const median = times[Math.floor(times.length / 2)]
  console.log(`speed: 1280x720 with three lines, detector at ${options.detectorSide} px, 2 threads: median ${median.toFixed(0)} ms, best ${times[0].toFixed(0)} ms (target 150 ms: ${(median / 150).toFixed(2)}x); CPU ${cpuMs.toFixed(0)} ms per image (${(cpuMs / 2).toFixed(0)} ms on 2 idle cores at best); load average ${loadavg().map((l) => l.toFixed(1)).join(' ')}`)
  await enginePath(imgs)
}

if (!only || only === 'budget') {
  const page = async (lines: string[], size: number, width: number, height: number) => {
    const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}"><rect width="100%" height="100%" fill="white"/>${lines.join('')}</svg>`
    const {data, info} = await sharp(Buffer.from(svg)).removeAlpha().raw().toBuffer({resolveWithObject: true})
    return {data, width: info.width, height: info.height}
  }
  const words = (shift: number) =>
    page(Array.from({length: 200}, (_, k) => `<text x="${20 + (k % 8) * 120}" y="${30 + Math.floor(k / 8) * 32}" font-family="DejaVu Sans" font-size="20">${TEXTS[(k + shift) % TEXTS.length].split(' ')[0]}</text>`), 20, 1000, 820)
  const long = await page(Array.from({length: 39}, (_, k) => `<text x="10" y="${30 + k * 32}" font-family="DejaVu Sans" font-size="22">${escape(`${TEXTS[k % TEXTS.length]} ${TEXTS[(k + 5) % TEXTS.length]} ${TEXTS[(k + 9) % TEXTS.length]}`)}</text>`), 22, 1280, 1280)
  const frames: RgbImage[] = []
  for (let f = 0; f < ANIMATION_FRAMES_READ; f++) frames.push(await words(f))
  const cases: [string, RgbImage[]][] = [
    ['200 short words, 1000x820', [await words(0)]],
    ['39 long lines, 1280x1280', [long]],
    [`an animation of 200-word pages (${ANIMATION_FRAMES_READ} frames read)`, frames],
  ]
  await readText(model, [long])
  for (const [name, imgs] of cases) {
    const budgets = imgs.map(() => frameBudget(options.budget, imgs.length))
    const delay = monitorEventLoopDelay({resolution: 5})
    delay.enable()
    const cpu0 = process.cpuUsage()
    const t = performance.now()
    const read = await readWith(model, imgs, options, budgets)
    const wall = performance.now() - t
    const cpu = process.cpuUsage(cpu0)
    delay.disable()
    const lines = read.reduce((n, f) => n + f.lines.length, 0)
    console.log(`budget: ${name}: ${wall.toFixed(0)} ms, CPU ${((cpu.user + cpu.system) / 1000).toFixed(0)} ms, ${lines} lines kept, truncated ${read.some((f) => f.truncated)}; event loop held at most ${(delay.max / 1e6).toFixed(0)} ms`)
  }
  console.log(`budget: ${options.budget.columns} columns, 2 threads; load average ${loadavg().map((l) => l.toFixed(1)).join(' ')}`)
}

if ((!only || only === 'photos') && photos.length > 0) {
  let withText = 0
  let hits = 0
  for (const f of photos) {
    const {data, info} = await sharp(join(photosDir!, f)).rotate().removeAlpha().raw().toBuffer({resolveWithObject: true})
    const [{lines}] = await readText(model, [{data, width: info.width, height: info.height}])
    if (lines.length > 0) withText++
    for (const h of applyRules(RULES, lines)) {
      hits++
      const line = lines.find((l) => l.box === h.box)
      console.log(`  hit ${f}: ${h.rule}${h.detector ? `/${h.detector}` : ''} ${JSON.stringify(h.text)} in ${JSON.stringify(line?.text)} at ${JSON.stringify(h.box)}`)
    }
  }
  console.log(`photos: ${photos.length} read, ${withText} with some text read, ${hits} rule hits`)
}

await model.close()
