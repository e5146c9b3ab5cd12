/**
 * hostile-memory: peak memory and CPU of a real `mod serve --workers 1` (the serving process is the worker)
 * and of `mod scan` on inputs that are cheap to send and costly to decode or preprocess: every shape of the
 * sweep (1 to 10^7 px both ways), and each costly format at the largest size it is allowed with the default
 * limits (plain PNG at MOD_MAX_PIXELS, progressive and CMYK JPEG, interlaced 16-bit PNG, GIF, WebP, AVIF at
 * their share of it, a TIFF of 25 000 pages, GIFs of 8 000 and 1 000 000 tiny frames). Peak RSS is VmHWM
 * from /proc/<pid>/status, reset before each request by writing 5 to /proc/<pid>/clear_refs; CPU is
 * utime + stime from /proc/<pid>/stat. Figures are against the idle worker (ready, after a few requests) and
 * against `mod scan` of a small PNG. Target: every input within +300 MiB of peak and 1 s of CPU.
 * Uses MOD_MODEL_DIR when set, else the stand-in model when built, else the test suite's toy model; the
 * NSFW specialist runs as by default. The corpus is generated once into bench/out/hostile/.
 */
import './no-telemetry.js'

import {spawn} from 'node:child_process'
import {existsSync} from 'node:fs'
import {mkdir, readFile, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import sharp from 'sharp'

import {greyPng, manyFrameGif, sweepShapes} from '../test/helpers/hostile-images.js'
import {BIN, cliEnv, header, multipartBody, OUT, ROOT, saveResults, STANDIN_DIR, startServer, table, verdict} from './lib.js'

const TARGET_MIB = 300
const TARGET_CPU_S = 1
const CORPUS = join(OUT, 'hostile')
const TICKS_PER_S = 100
const MODEL_DIR = process.env.MOD_MODEL_DIR ?? (existsSync(STANDIN_DIR) ? STANDIN_DIR : join(ROOT, 'test', 'fixtures', 'models', 'toy'))
const ENV = {MOD_MODEL_DIR: MODEL_DIR}

header('hostile-memory', 'peak RSS and CPU of `mod serve` and `mod scan` on images built to exhaust them')
process.stdout.write(`model: ${MODEL_DIR}\n`)

const solid = (width: number, height: number, channels: 3 | 4 = 3) =>
  sharp({create: {width, height, channels, background: {r: 200, g: 60, b: 40, alpha: 0.5}}, limitInputPixels: false})

/** name → how to make it; each costly format at the largest size its share of the default 100 000 000 pixels allows. */
const FAMILY: Record<string, () => Promise<Buffer>> = {
  'plain-10000x10000.png': async () => greyPng(10_000, 10_000),
  'progressive-444-5000x5000.jpg': () => solid(5000, 5000).jpeg({progressive: true, chromaSubsampling: '4:4:4', quality: 100}).toBuffer(),
  'cmyk-3535x3535.jpg': () => solid(3535, 3535).toColourspace('cmyk').jpeg({quality: 100}).toBuffer(),
  'cmyk-progressive-3535x3535.jpg': () => solid(3535, 3535).toColourspace('cmyk').jpeg({progressive: true, quality: 100}).toBuffer(),
  'interlaced-rgba16-5000x5000.png': () => solid(5000, 5000, 4).toColourspace('rgb16').png({progressive: true}).toBuffer(),
  'palette-10000x10000.png': () => solid(10_000, 10_000).png({palette: true, colours: 2}).toBuffer(),
  'gif-5773x5773.gif': () => solid(5773, 5773).gif().toBuffer(),
  'webp-5000x5000.webp': () => solid(5000, 5000).webp({lossless: true}).toBuffer(),
  'avif-4082x4082.avif': () => solid(4082, 4082).avif({effort: 0}).toBuffer(),
  'tiff-25000-pages.tif': () => sharp(Buffer.alloc(25_000 * 3, 90), {raw: {width: 1, height: 25_000, channels: 3, pageHeight: 1}}).tiff().toBuffer(),
  'gif-8000-frames.gif': async () => manyFrameGif(8000),
  'gif-1000000-frames.gif': async () => manyFrameGif(1_000_000),
}

async function corpus(): Promise<string[]> {
  await mkdir(CORPUS, {recursive: true})
  const make: Record<string, () => Promise<Buffer>> = {...FAMILY}
  for (const {width, height} of sweepShapes()) make[`shape-${width}x${height}.png`] = async () => greyPng(width, height)
  for (const [name, build] of Object.entries(make)) {
    const path = join(CORPUS, name)
    if (!existsSync(path)) {
      process.stdout.write(`generating ${name}\n`)
      await writeFile(path, await build())
    }
  }
  return Object.keys(make)
}

async function status(pid: number): Promise<{rss: number; peak: number}> {
  const text = await readFile(`/proc/${pid}/status`, 'utf8')
  const kib = (key: string) => Number(new RegExp(`${key}:\\s+(\\d+)`).exec(text)?.[1] ?? Number.NaN)
  return {rss: kib('VmRSS') / 1024, peak: kib('VmHWM') / 1024}
}

/** utime + stime of a process, in seconds. */
async function cpuSeconds(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_S
}

/** What an answer was: the status and error code, or the status and whether it is safe. */
function outcome(status: number, body: {error?: {code: string}; is_safe?: boolean}): string {
  return body.error ? `${status} ${body.error.code}` : `${status} ${body.is_safe ? 'safe' : 'unsafe'}`
}

async function post(url: string, name: string): Promise<string> {
  const form = multipartBody(await readFile(join(CORPUS, name)), name, 'application/octet-stream')
  const res = await fetch(`${url}/v1/moderate`, {method: 'POST', headers: {'content-type': form.contentType}, body: new Uint8Array(form.body)})
  return outcome(res.status, (await res.json()) as never)
}

interface Row {
  name: string
  bytes: number
  answer: string
  /** Peak RSS above the idle (or baseline) figure, MiB. */
  extra: number
  ratio: number
  cpu: number
}

/**
 * Each name on a worker of its own (memory one request leaves allocated would count towards the next), or
 * all on one worker with `shared` (the tiny shapes): its idle RSS once ready and warm, then per request the
 * peak (VmHWM reset just before) and the CPU it took.
 */
async function serve(names: string[], shared: boolean): Promise<{idle: number; rows: Row[]}> {
  const rows: Row[] = []
  let idle = 0
  for (const group of shared ? [names] : names.map((n) => [n])) {
    const server = await startServer(['--workers', '1'], ENV)
    try {
      for (let i = 0; i < 3; i++) await post(server.url, 'shape-10x3.png')
      idle = (await status(server.pid)).rss
      for (const name of group) {
        await writeFile(`/proc/${server.pid}/clear_refs`, '5')
        const cpu = await cpuSeconds(server.pid)
        const answer = await post(server.url, name)
        const {peak} = await status(server.pid)
        const bytes = (await readFile(join(CORPUS, name))).length
        rows.push({name, bytes, answer, extra: peak - idle, ratio: peak / idle, cpu: (await cpuSeconds(server.pid)) - cpu})
      }
    } finally {
      await server.stop()
    }
  }
  return {idle, rows}
}

/** `mod scan FILE --ndjson`, polled every 10 ms: its last VmHWM and CPU before it exits, and its answer. */
function scanOne(path: string): Promise<{peak: number; cpu: number; answer: string}> {
  const child = spawn(process.execPath, [BIN, 'scan', path, '--ndjson'], {cwd: ROOT, env: cliEnv(ENV), stdio: ['ignore', 'pipe', 'ignore']})
  let stdout = ''
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()))
  let peak = 0
  let cpu = 0
  const timer = setInterval(() => {
    Promise.all([status(child.pid as number), cpuSeconds(child.pid as number)])
      .then(([s, c]) => {
        // An exiting process has no VmHWM line any more.
        if (Number.isFinite(s.peak)) peak = Math.max(peak, s.peak)
        if (Number.isFinite(c)) cpu = Math.max(cpu, c)
      })
      .catch(() => {})
  }, 10)
  return new Promise((done) =>
    child.once('close', (code) => {
      clearInterval(timer)
      const entry = stdout.trim() ? (JSON.parse(stdout.trim().split('\n')[0]) as {error?: {code: string}; is_safe?: boolean}) : {}
      done({peak, cpu, answer: `exit ${code} ${entry.error ? entry.error.code : entry.is_safe ? 'safe' : 'unsafe'}`})
    }),
  )
}

async function scan(names: string[]): Promise<{base: {peak: number; cpu: number}; rows: Row[]}> {
  const base = await scanOne(join(CORPUS, 'shape-10x3.png'))
  const rows: Row[] = []
  for (const name of names) {
    const path = join(CORPUS, name)
    const r = await scanOne(path)
    rows.push({name, bytes: (await readFile(path)).length, answer: r.answer, extra: r.peak - base.peak, ratio: r.peak / base.peak, cpu: r.cpu - base.cpu})
  }
  return {base, rows}
}

function print(title: string, rows: Row[]): void {
  process.stdout.write(`\n${title}\n`)
  table([
    ['input', 'bytes', 'answer', 'peak +MiB', 'peak / idle', 'CPU s'],
    ...rows.map((r) => [r.name, r.bytes, r.answer, r.extra.toFixed(0), r.ratio.toFixed(2), r.cpu.toFixed(2)]),
  ])
}

const names = await corpus()
const only = process.argv.slice(2)
const chosen = only.length > 0 ? names.filter((n) => only.some((o) => n.includes(o))) : names

const served = {rows: [...(await serve(chosen.filter((n) => !n.startsWith('shape-')), false)).rows]}
const shapes = await serve(chosen.filter((n) => n.startsWith('shape-')), true)
served.rows.push(...shapes.rows)
print(`mod serve --workers 1: each costly format on a fresh worker, the shapes on one (idle: ${shapes.idle.toFixed(0)} MiB)`, served.rows)
const scanned = await scan(chosen)
print(`mod scan FILE (baseline, a 10x3 PNG: peak ${scanned.base.peak.toFixed(0)} MiB, ${scanned.base.cpu.toFixed(2)} s CPU)`, scanned.rows)

const worst = (rows: Row[], key: 'extra' | 'cpu') => rows.reduce((a, b) => (b[key] > a[key] ? b : a))
const verdicts = [
  verdict('hostile-memory', worst(served.rows, 'extra').name, 'serve: largest peak above idle', worst(served.rows, 'extra').extra, 'max', TARGET_MIB, ' MiB', 0),
  verdict('hostile-memory', worst(served.rows, 'cpu').name, 'serve: most CPU for one request', worst(served.rows, 'cpu').cpu, 'max', TARGET_CPU_S, ' s', 2),
  verdict('hostile-memory', worst(scanned.rows, 'extra').name, 'scan: largest peak above baseline', worst(scanned.rows, 'extra').extra, 'max', TARGET_MIB, ' MiB', 0),
  verdict('hostile-memory', worst(scanned.rows, 'cpu').name, 'scan: most CPU above baseline', worst(scanned.rows, 'cpu').cpu, 'max', TARGET_CPU_S, ' s', 2),
]
await saveResults('hostile-memory', verdicts, {idle: shapes.idle, serve: served.rows, scan: scanned.rows, base: scanned.base})
