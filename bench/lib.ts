/**
 * Shared by the bench scripts: where things live, generated test images, the stand-in model, timing
 * statistics and the one-line verdicts each script prints and records.
 */
import {execFileSync, spawn} from 'node:child_process'
import {existsSync, readFileSync} from 'node:fs'
import {Agent, request, type IncomingHttpHeaders} from 'node:http'
import {createRequire} from 'node:module'
import {mkdir, readFile, readdir, writeFile} from 'node:fs/promises'
import {cpus, loadavg, totalmem} from 'node:os'
import {join, resolve} from 'node:path'

import * as ort from 'onnxruntime-node'
import sharp from 'sharp'

import {buildPolicy} from '../src/lib/config/policy.js'
import {DEFAULT_LIMITS} from '../src/lib/config/settings.js'
import {createEngine, type Engine} from '../src/lib/engine.js'
import {decodeImage} from '../src/lib/image/decode.js'
import {nsfwPreprocess} from '../src/lib/signals/nsfw/preprocess.js'
import {preprocess} from '../src/lib/image/preprocess.js'
import {trimBorders} from '../src/lib/image/trim.js'
import {loadManifest} from '../src/lib/model/manifest.js'
import {chooseInt8Weights, signedModelFile} from '../src/lib/model/int8-weights.js'
import type {Int8Weights, Precision} from '../src/lib/model/manifest-types.js'
import {nsfwModelDir} from '../src/lib/signals/nsfw/model.js'
import {DEFAULT_NSFW_MODEL, NSFW_INPUT, NSFW_MODELS, NSFW_SIZE, type NsfwManifests} from '../src/lib/signals/nsfw/manifest.js'
import {openSession, sessionOptions, type ModelSession} from '../src/lib/model/session.js'
import {SIGNALS} from '../src/lib/signals/registry.js'
import {defaultThreads} from '../src/lib/model/threads.js'
import {random} from '../test/helpers/nsfw-images.js'

export const ROOT = resolve(import.meta.dirname, '..')
export const OUT = join(ROOT, 'bench', 'out')
export const BIN = join(ROOT, 'bin', 'run.js')
export const STANDIN_DIR = join(ROOT, 'bench', 'models', 'fast-standin')
/** Prompt-embedding cache of the bench runs (MOD_CACHE_DIR), apart from the user's. */
export const CACHE_DIR = join(OUT, 'cache')
export const HD_JPEG = join(OUT, 'images', 'hd-1280x720.jpg')
/** A phone camera's size: decoded reduced (shrink-on-load) on the default path. */
export const PHOTO_JPEG = join(OUT, 'images', 'photo-4032x3024.jpg')
export const FOLDER_DIR = join(OUT, 'folder')
const FOLDER_COUNT = 200
const RESULTS_DIR = join(OUT, 'results')

// ---------- statistics ----------

export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN
  const sorted = [...values].sort((a, b) => a - b)
  const rank = (p / 100) * (sorted.length - 1)
  const lo = Math.floor(rank)
  const hi = Math.ceil(rank)
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - lo)
}

export const median = (values: readonly number[]): number => percentile(values, 50)

export function ms(value: number): string {
  return `${value.toFixed(1)} ms`
}

/** Milliseconds taken by fn. */
export async function time(fn: () => Promise<unknown>): Promise<number> {
  const start = performance.now()
  await fn()
  return performance.now() - start
}

/**
 * The times of `block` - 1 calls of `measure` after one untimed call of `warm` (by default `measure` itself, timed
 * with time()): the first call of a turn pays for switching from another side's thread pools and caches.
 */
export async function afterFirst(block: number, measure: () => Promise<number>, warm: () => Promise<unknown> = measure): Promise<number[]> {
  await warm()
  const times: number[] = []
  for (let i = 1; i < block; i++) times.push(await measure())
  return times
}

/**
 * `clients` clients at once, each making `each` calls of `call` (which returns its latency) one after the other: the
 * wall time and every latency, in ms.
 */
export async function clientsRound(call: () => Promise<number>, clients: number, each: number): Promise<{wall: number; latencies: number[]}> {
  const latencies: number[] = []
  const wall = await time(() =>
    Promise.all(
      Array.from({length: clients}, async () => {
        for (let i = 0; i < each; i++) latencies.push(await call())
      }),
    ),
  )
  return {wall, latencies}
}

/**
 * Times each side in turns of `block` consecutive calls, the sides taking turns (and alternating which goes
 * first), so that load changes on the machine hit all of them. The first call of each turn is not kept: it
 * pays for switching from the other side's onnxruntime thread pool and caches, which a server repeating one
 * kind of request does not. Returns the kept times per side, in ms.
 */
export async function interleave(sides: Record<string, () => Promise<unknown>>, turns: number, block = 5): Promise<Record<string, number[]>> {
  const names = Object.keys(sides)
  const times: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]))
  for (let t = 0; t < turns; t++) {
    const order = t % 2 === 0 ? names : [...names].reverse()
    for (const name of order) {
      await sides[name]()
      for (let i = 1; i < block; i++) times[name].push(await time(sides[name]))
    }
  }
  return times
}

/**
 * The median over turns of (median of a's calls in the turn / median of b's), for times from interleave():
 * each turn's pair met the same load on the machine, so this moves less with the load than the ratio of
 * the overall medians.
 */
export function pairedRatio(a: number[], b: number[], block = 5): number {
  const perTurn = block - 1
  const ratios: number[] = []
  for (let i = 0; i + perTurn <= Math.min(a.length, b.length); i += perTurn) {
    ratios.push(median(a.slice(i, i + perTurn)) / median(b.slice(i, i + perTurn)))
  }
  return median(ratios)
}

/** Prints rows as an aligned table: the first row is the header. */
export function table(rows: (string | number)[][]): void {
  const cells = rows.map((r) => r.map(String))
  const widths = cells[0].map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)))
  const line = (r: string[]) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ')
  process.stdout.write(`${line(cells[0])}\n${widths.map((w) => '-'.repeat(w)).join('  ')}\n`)
  for (const r of cells.slice(1)) process.stdout.write(`${line(r)}\n`)
}

// ---------- verdicts ----------

export interface Verdict {
  /** "latency", "http", … */
  script: string
  /** What was compared, e.g. "engine / bare median". */
  what: string
  value: number
  target: number
  /** `max`: value must be <= target; `min`: value must be >= target. */
  kind: 'max' | 'min'
  pass: boolean
  /** The full sentence printed, figures included. */
  line: string
}

/**
 * Prints "script: detail, what value (target <= t) PASS|MISS" and returns it for the results file. A miss
 * carries `ceiling` when given: the measured limit that explains it (what the work that must be done costs).
 */
export function verdict(script: string, detail: string, what: string, value: number, kind: 'max' | 'min', target: number, unit = '', digits = 3, ceiling?: string): Verdict {
  const pass = kind === 'max' ? value <= target : value >= target
  const miss = ceiling ? `MISS; ${ceiling}` : 'MISS'
  const line = `${script}: ${detail ? `${detail}, ` : ''}${what} ${value.toFixed(digits)}${unit} (target ${kind === 'max' ? '<=' : '>='} ${target}${unit}) ${pass ? 'PASS' : miss}`
  process.stdout.write(`${line}\n`)
  return {script, what, value, target, kind, pass, line}
}

/** Writes bench/out/results/<script>.json: the verdicts, the figures and the conditions they were taken in. */
export async function saveResults(script: string, verdicts: Verdict[], figures: Record<string, unknown>): Promise<void> {
  await mkdir(RESULTS_DIR, {recursive: true})
  const record = {script, date: new Date().toISOString(), loadavg: loadavg(), verdicts, figures}
  await writeFile(join(RESULTS_DIR, `${script}.json`), `${JSON.stringify(record, null, 2)}\n`)
}

export async function readResults(): Promise<{script: string; verdicts: Verdict[]; loadavg: number[]}[]> {
  if (!existsSync(RESULTS_DIR)) return []
  const files = (await readdir(RESULTS_DIR)).filter((f) => f.endsWith('.json')).sort()
  return Promise.all(files.map(async (f) => JSON.parse(await readFile(join(RESULTS_DIR, f), 'utf8'))))
}

// ---------- the machine ----------

function firstLine(cmd: string, args: string[]): string {
  try {
    return execFileSync(cmd, args, {encoding: 'utf8'}).trim().split('\n')[0]
  } catch {
    return 'unknown'
  }
}

export function machine(): Record<string, string> {
  const ortVersion = (createRequire(import.meta.url)('onnxruntime-node/package.json') as {version: string}).version
  return {
    cpu: cpus()[0]?.model ?? 'unknown',
    cores: firstLine('nproc', []),
    ram: `${(totalmem() / 2 ** 30).toFixed(0)} GiB`,
    node: process.version,
    onnxruntime: ortVersion,
    sharp: sharp.versions.sharp ?? 'unknown',
    libvips: sharp.versions.vips,
  }
}

/** The CPU's instruction-set flags (/proc/cpuinfo's `flags`), none where the system lists none. */
export function cpuFlags(): string[] {
  const info = existsSync('/proc/cpuinfo') ? readFileSync('/proc/cpuinfo', 'utf8') : ''
  return /^flags\s*:(.*)$/m.exec(info)?.[1].trim().split(/\s+/) ?? []
}

/** The 1-minute load average: other work on the machine skews every figure, so each script prints it. */
export function load(): string {
  return loadavg()[0].toFixed(2)
}

export function header(script: string, about: string): void {
  const m = machine()
  process.stdout.write(`\n== ${script}: ${about}\n`)
  process.stdout.write(`   ${m.cpu}, ${m.cores} cores, ${m.ram}, node ${m.node}, onnxruntime-node ${m.onnxruntime}, load ${load()}\n\n`)
}

// ---------- images ----------

/**
 * A photo-like test picture: smooth gradients, a few dozen filled shapes with soft edges and per-pixel
 * noise, so that JPEG decoding and resizing cost what they cost on real photos (flat colour decodes far
 * faster than texture).
 */
export function texturedPixels(width: number, height: number, seed: number): Buffer {
  const rnd = random(seed)
  const data = Buffer.alloc(width * height * 3)
  const base = [rnd() * 255, rnd() * 255, rnd() * 255]
  const slope = [rnd() - 0.5, rnd() - 0.5, rnd() - 0.5]
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const o = 3 * (y * width + x)
      for (let c = 0; c < 3; c++) data[o + c] = base[c] + slope[c] * (x + y) * (255 / (width + height))
    }
  }
  const shapes = 20 + Math.floor(rnd() * 30)
  for (let s = 0; s < shapes; s++) {
    const cx = rnd() * width
    const cy = rnd() * height
    const r = (0.03 + rnd() * 0.2) * Math.min(width, height)
    const colour = [rnd() * 255, rnd() * 255, rnd() * 255]
    const round = rnd() < 0.5
    const x0 = Math.max(0, Math.floor(cx - r))
    const x1 = Math.min(width, Math.ceil(cx + r))
    const y0 = Math.max(0, Math.floor(cy - r))
    const y1 = Math.min(height, Math.ceil(cy + r))
    for (let y = y0; y < y1; y++) {
      for (let x = x0; x < x1; x++) {
        const d = round ? Math.hypot(x - cx, y - cy) / r : Math.max(Math.abs(x - cx), Math.abs(y - cy)) / r
        if (d >= 1) continue
        const alpha = Math.min(1, (1 - d) * 4)
        const o = 3 * (y * width + x)
        for (let c = 0; c < 3; c++) data[o + c] = data[o + c] * (1 - alpha) + colour[c] * alpha
      }
    }
  }
  for (let i = 0; i < data.length; i++) data[i] = Math.max(0, Math.min(255, data[i] + (rnd() - 0.5) * 40))
  return data
}

function texturedJpeg(width: number, height: number, seed: number, quality = 85): Promise<Buffer> {
  return sharp(texturedPixels(width, height, seed), {raw: {width, height, channels: 3}}).jpeg({quality}).toBuffer()
}

/** Sizes of the folder set: phone photos, screenshots, HD frames, portraits, squares. */
const FOLDER_SIZES: [number, number][] = [
  [1280, 720],
  [1024, 768],
  [800, 1200],
  [1920, 1080],
  [640, 480],
  [500, 500],
  [1600, 900],
  [720, 1280],
]

async function writeIfMissing(path: string, make: () => Promise<Buffer>): Promise<void> {
  if (existsSync(path)) return
  await writeFile(path, await make())
}

/** The 1280x720 JPEG of latency/http/peer/startup, and the 200 images of `folder` (every 10th a PNG, every 10th a WebP). */
export async function ensureImages(): Promise<void> {
  await mkdir(join(OUT, 'images'), {recursive: true})
  await mkdir(FOLDER_DIR, {recursive: true})
  await writeIfMissing(HD_JPEG, () => texturedJpeg(1280, 720, 1))
  await writeIfMissing(PHOTO_JPEG, () => texturedJpeg(4032, 3024, 2))
  for (let i = 0; i < FOLDER_COUNT; i++) {
    const [w, h] = FOLDER_SIZES[i % FOLDER_SIZES.length]
    const format = i % 10 === 3 ? 'png' : i % 10 === 7 ? 'webp' : 'jpg'
    await writeIfMissing(join(FOLDER_DIR, `${String(i).padStart(3, '0')}.${format}`), () => {
      const img = sharp(texturedPixels(w, h, 100 + i), {raw: {width: w, height: h, channels: 3}})
      return (format === 'png' ? img.png() : format === 'webp' ? img.webp({quality: 85}) : img.jpeg({quality: 85})).toBuffer()
    })
  }
}

export async function folderFiles(): Promise<string[]> {
  return (await readdir(FOLDER_DIR)).sort().map((f) => join(FOLDER_DIR, f))
}

// ---------- the model ----------

export type Variant = Precision

/** ONNX file of the image encoder of each precision in the stand-in folder (transformers.js names). */
export const VISION_FILES: Record<Variant, string> = {
  fp32: 'onnx/vision_model.onnx',
  int8: 'onnx/vision_model_quantized.onnx',
  fp16: 'onnx/vision_model_fp16.onnx',
}

export function requireStandin(): void {
  if (!existsSync(join(STANDIN_DIR, 'manifest.json'))) {
    throw new Error(`no stand-in model in ${STANDIN_DIR}: run \`npm run bench\` (it writes it) or \`npx tsx scripts/standin.ts --variants\``)
  }
}

/**
 * An engine over the stand-in with the default policy (MOD_PRECISION: `precision`). CLIP alone unless `nsfw`:
 * with it, the embedded NSFW specialist too, as `mod scan` and `mod serve` build it by default.
 */
export function benchEngine(precision: Variant = 'fp32', options: {nsfw?: boolean; everyPixel?: boolean} = {}): Engine {
  return createEngine({
    preset: 'fast',
    modelDir: STANDIN_DIR,
    precision,
    cacheDir: CACHE_DIR,
    policy: buildPolicy(),
    limits: DEFAULT_LIMITS,
    signals: options.nsfw ? SIGNALS : SIGNALS.filter((s) => s.name !== 'nsfw'),
    everyPixel: options.everyPixel,
  })
}

/** Images in `BareEncoder.runBatch`: as many as the clients of `http.ts`. */
export const BATCH_OF = 4

export interface BareEncoder {
  /** One `session.run` on the ready tensor of the 1280x720 JPEG. */
  run(): Promise<unknown>
  /** One `session.run` on BATCH_OF copies of it: what inference of a full batch costs by itself. */
  runBatch(): Promise<unknown>
  release(): Promise<void>
}

export interface BareImageEncoder extends BareEncoder {
  /** The image embedding of one preprocessed image (1 x 3 x crop x crop), as the model gives it. */
  embed(pixels: Float32Array): Promise<Float32Array>
}

/**
 * A bare onnxruntime session of the stand-in's image encoder with the engine's session options and thread count,
 * fed the 1280x720 JPEG already decoded, trimmed and preprocessed: what inference of one image costs by itself.
 * The int8 encoder runs with the weights the engine picks for this CPU unless `o.int8Weights` names them.
 */
export async function bareEncoder(precision: Variant = 'fp32', o: BareOptions = {}): Promise<BareImageEncoder> {
  const manifest = await loadManifest(STANDIN_DIR)
  const {crop} = manifest.preprocess
  const [frame] = await decodeImage(await readFile(HD_JPEG), DEFAULT_LIMITS)
  const ready = new ort.Tensor('float32', await preprocess(trimBorders(frame), manifest.preprocess), [1, 3, crop, crop])
  const feeds = {[manifest.image.input]: ready}
  const data = ready.data as Float32Array
  const batch = new Float32Array(data.length * BATCH_OF)
  for (let i = 0; i < BATCH_OF; i++) batch.set(data, i * data.length)
  const batchFeeds = {[manifest.image.input]: new ort.Tensor('float32', batch, [BATCH_OF, 3, crop, crop])}
  const file = join(STANDIN_DIR, VISION_FILES[precision])
  const signed = precision === 'int8' && (await chooseInt8Weights(o.int8Weights ?? 'auto')) === 'signed'
  const session = await bareSession(o.file ?? (signed ? await signedModelFile(file, CACHE_DIR) : file), o)
  return {run: () => session.run(feeds), runBatch: () => session.run(batchFeeds), release: () => session.release(), embed: (pixels: Float32Array) => session.run({[manifest.image.input]: new ort.Tensor('float32', pixels, [1, 3, crop, crop])}).then((out) => out[manifest.image.output].data as Float32Array)}
}

export interface BareOptions {
  /** Open the session from the model file with onnxruntime's thread spinning on (its default; mod turns it off). */
  spinning?: boolean
  /** Open the session from the model file, not the graph cache: weights prepacked in the process's own memory. */
  fromFile?: boolean
  /** int8: the weights the engine would run (auto, as MOD_INT8_WEIGHTS), or signed / unsigned. */
  int8Weights?: Int8Weights
  /** Another image encoder file of the stand-in's (a variant a bench makes), instead of the precision's. */
  file?: string
}

/** A session with the engine's options and threads (from the bench's graph cache), or as `o` asks. */
async function bareSession(path: string, o: BareOptions): Promise<ModelSession | ort.InferenceSession> {
  const threads = await defaultThreads()
  if (o.spinning) return ort.InferenceSession.create(path, {...sessionOptions({threads, keepArena: true}), extra: {session: {intra_op: {allow_spinning: '1'}}}})
  return openSession(path, {threads, keepArena: true, cacheDir: o.fromFile ? undefined : CACHE_DIR})
}

/**
 * A bare session of the embedded NSFW specialist as the engine opens it, fed the 1280x720 JPEG's first view
 * (the one every image gets; the other views only when it could flag something) already decoded, trimmed and
 * preprocessed; runBatch classifies BATCH_OF copies of it.
 */
export async function bareSpecialist(o: BareOptions = {}): Promise<BareEncoder> {
  const [frame] = await decodeImage(await readFile(HD_JPEG), DEFAULT_LIMITS)
  const view = nsfwPreprocess(trimBorders(frame))
  const batch = new Float32Array(view.length * BATCH_OF)
  for (let i = 0; i < BATCH_OF; i++) batch.set(view, i * view.length)
  const {models} = JSON.parse(await readFile(join(nsfwModelDir(), 'manifest.json'), 'utf8')) as NsfwManifests
  const manifest = models.find((m) => m.id === NSFW_MODELS[DEFAULT_NSFW_MODEL].id)
  if (!manifest) throw new Error(`models/nsfw/manifest.json lists no ${NSFW_MODELS[DEFAULT_NSFW_MODEL].id}`)
  const session = await bareSession(join(nsfwModelDir(), manifest.file), o)
  const feeds = {[NSFW_INPUT]: new ort.Tensor('float32', view, [1, NSFW_SIZE, NSFW_SIZE, 3])}
  const batchFeeds = {[NSFW_INPUT]: new ort.Tensor('float32', batch, [BATCH_OF, NSFW_SIZE, NSFW_SIZE, 3])}
  return {run: () => session.run(feeds), runBatch: () => session.run(batchFeeds), release: () => session.release()}
}

/** What the default path's inference costs by itself: CLIP's encoder then the specialist, one after the other. */
export async function barePair(o: BareOptions = {}): Promise<BareEncoder> {
  const clip = await bareEncoder('fp32', o)
  const nsfw = await bareSpecialist(o)
  return {
    run: async () => {
      await clip.run()
      await nsfw.run()
    },
    runBatch: async () => {
      await clip.runBatch()
      await nsfw.runBatch()
    },
    release: async () => {
      await clip.release()
      await nsfw.release()
    },
  }
}

/** Writes a policy file under bench/out for `--config`, and returns its path. */
export async function policyFile(name: string, yaml: string): Promise<string> {
  await mkdir(OUT, {recursive: true})
  const path = join(OUT, name)
  await writeFile(path, yaml)
  return path
}

/** A MOD_* free environment with the stand-in and the bench's prompt cache, for the CLI and the server. */
export function cliEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('MOD_')))
  return {...base, NO_COLOR: '1', MOD_MODEL_DIR: STANDIN_DIR, MOD_CACHE_DIR: CACHE_DIR, ...extra}
}

// ---------- the built CLI and server ----------

export interface Served {
  url: string
  /** The serving process: the only worker with --workers 1, the cluster primary otherwise. */
  pid: number
  /** What it has written to stderr so far (its log: one JSON line a request, with the worker's number). */
  log(): string
  stop(): Promise<void>
}

/** Starts `node bin/run.js serve --port 0 …` and resolves once it logs its address. */
export function startServer(args: string[] = [], env: Record<string, string> = {}): Promise<Served> {
  const child = spawn(process.execPath, [BIN, 'serve', '--port', '0', ...args], {cwd: ROOT, env: cliEnv(env), stdio: ['ignore', 'ignore', 'pipe']})
  let log = ''
  const exited = new Promise<void>((done) => child.once('exit', () => done()))
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM')
    await exited
  }
  return new Promise((resolveServed, reject) => {
    const timer = setTimeout(() => {
      void stop()
      reject(new Error(`server did not start in 120 s:\n${log}`))
    }, 120_000)
    child.stderr.on('data', (d: Buffer) => {
      log += d.toString()
      const m = /listening on (http:\/\/[^\s"]+)/.exec(log)
      if (m) {
        clearTimeout(timer)
        resolveServed({url: m[1], pid: child.pid as number, log: () => log, stop})
      }
    })
    child.once('exit', (code) => {
      clearTimeout(timer)
      reject(new Error(`server exited with ${code} before listening:\n${log}`))
    })
  })
}

/** A multipart/form-data body with one `file` field, built once so the load generator only replays bytes. */
export function multipartBody(file: Buffer, filename: string, type = 'image/jpeg'): {body: Buffer; contentType: string} {
  const boundary = `----modbench${Date.now().toString(16)}`
  const head = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\nContent-Type: ${type}\r\n\r\n`
  return {
    body: Buffer.concat([Buffer.from(head), file, Buffer.from(`\r\n--${boundary}--\r\n`)]),
    contentType: `multipart/form-data; boundary=${boundary}`,
  }
}

/**
 * The benches' HTTP client: node:http on connections kept open between requests, as a client that sends many keeps
 * them. Not fetch: undici added about 0.9 ms a request on Node 20, and 3-9 ms, unevenly, on Node 24, to what the
 * server itself takes. Idle connections do not keep the process alive.
 */
const keptAlive = new Agent({keepAlive: true})

/** POSTs one image to /v1/moderate and reads the whole answer: its status and headers. */
export function moderate(url: string, body: {body: Buffer; contentType: string}): Promise<{status: number; headers: IncomingHttpHeaders}> {
  return new Promise((done, fail) => {
    const headers = {'content-type': body.contentType, 'content-length': body.body.length}
    const req = request(`${url}/v1/moderate`, {method: 'POST', agent: keptAlive, headers}, (res) => {
      res.resume()
      res.once('end', () => done({status: res.statusCode ?? 0, headers: res.headers}))
      res.once('error', fail)
    })
    req.once('error', fail)
    req.end(body.body)
  })
}

/** POSTs one image to /v1/moderate and returns the status. */
export async function moderateOnce(url: string, body: {body: Buffer; contentType: string}): Promise<number> {
  return (await moderate(url, body)).status
}

/** Resident memory of a process, in MiB, from /proc/<pid>/status (VmRSS, and VmHWM: the peak). */
export async function residentMiB(pid: number): Promise<{rss: number; peak: number; anon: number}> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8')
  const kib = (key: string) => Number(new RegExp(`${key}:\\s+(\\d+)`).exec(status)?.[1] ?? Number.NaN)
  return {rss: kib('VmRSS') / 1024, peak: kib('VmHWM') / 1024, anon: kib('RssAnon') / 1024}
}

/** Proportional memory of a process, in MiB, from /proc/<pid>/smaps_rollup: shared pages count a share each. */
export interface Pss {
  pss: number
  /** Of it, anonymous memory (the process's own) and file pages (mapped weights, libraries). */
  anon: number
  file: number
}

export async function pssOf(pid: number): Promise<Pss> {
  const rollup = await readFile(`/proc/${pid}/smaps_rollup`, 'utf8')
  const kib = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+)`, 'm').exec(rollup)?.[1] ?? Number.NaN)
  return {pss: kib('Pss') / 1024, anon: kib('Pss_Anon') / 1024, file: kib('Pss_File') / 1024}
}

/** The pids of a process's children (a cluster primary's workers). */
export async function childrenOf(pid: number): Promise<number[]> {
  const tasks = await readdir(`/proc/${pid}/task`)
  const lists = await Promise.all(tasks.map((t) => readFile(`/proc/${pid}/task/${t}/children`, 'utf8').catch(() => '')))
  return lists.flatMap((l) => l.split(/\s+/).filter(Boolean).map(Number))
}

/** PSS of a process and its children, summed: what a cluster of workers costs the machine. */
export async function treePss(pid: number): Promise<Pss & {processes: number}> {
  const all = await Promise.all([pid, ...(await childrenOf(pid))].map(pssOf))
  const sum = (k: keyof Pss) => all.reduce((a, p) => a + p[k], 0)
  return {pss: sum('pss'), anon: sum('anon'), file: sum('file'), processes: all.length}
}

/** Memory of one kind of mapping, in MiB: resident, proportional, and private copies (`Anonymous`). */
export interface Mapped {
  rss: number
  pss: number
  anonymous: number
}

/**
 * A process's memory by mapping name, from /proc/<pid>/smaps: a mapped file's path, `[heap]` (glibc's main heap),
 * `[stack]`, or '' for anonymous mappings (V8's heap, the other threads' malloc arenas and their large blocks:
 * onnxruntime's arenas; thread stacks).
 */
export async function memoryByMapping(pid: number): Promise<Map<string, Mapped>> {
  const smaps = await readFile(`/proc/${pid}/smaps`, 'utf8')
  const byName = new Map<string, Mapped>()
  let current: Mapped = {rss: 0, pss: 0, anonymous: 0}
  for (const line of smaps.split('\n')) {
    const mapping = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(line)
    if (mapping) {
      const name = mapping[1]
      current = byName.get(name) ?? {rss: 0, pss: 0, anonymous: 0}
      byName.set(name, current)
      continue
    }
    const field = /^(Rss|Pss|Anonymous):\s+(\d+) kB/.exec(line)
    if (field) current[field[1].toLowerCase() as keyof Mapped] += Number(field[2]) / 1024
  }
  return byName
}

/** A process's own (anonymous) PSS by kind, in MiB: glibc's main heap, and the other anonymous mappings. */
export async function anonymousPss(pid: number): Promise<{mallocHeap: number; otherAnon: number}> {
  let mallocHeap = 0
  let otherAnon = 0
  for (const [name, m] of await memoryByMapping(pid)) {
    if (name === '[heap]') mallocHeap += m.pss
    else if (name === '' || name === '[stack]') otherAnon += m.pss
  }
  return {mallocHeap, otherAnon}
}

/** Runs the built CLI to completion; resolves with its wall time and output. */
export function runCli(args: string[], env: Record<string, string> = {}): Promise<{ms: number; code: number; stdout: string; stderr: string}> {
  const started = performance.now()
  const child = spawn(process.execPath, [BIN, ...args], {cwd: ROOT, env: cliEnv(env), stdio: ['ignore', 'pipe', 'pipe']})
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()))
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
  return new Promise((done, fail) => {
    child.once('error', fail)
    child.once('close', (code) => done({ms: performance.now() - started, code: code ?? -1, stdout, stderr}))
  })
}
