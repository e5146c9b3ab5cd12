/**
 * pdq-speed: `mod hash` against the reference PDQ (PyPI pdqhash, Meta's C++, with Pillow decoding) on the same
 * folder of photos, decode included on both sides. Run by hand (not part of `npm run bench`), after `npm run build`:
 *
 *   python3 -m venv bench/.venv && bench/.venv/bin/pip install pdqhash numpy pillow
 *   npx tsx bench/pdq-speed.ts                    # /work/shared/data/ordinary-photos, or MOD_BENCH_PHOTOS
 *   npx tsx bench/pdq-speed.ts --rounds 5 --python /path/to/python
 *
 * 1. Alternating runs of `node bin/run.js hash DIR --ndjson` and bench/pdq_reference_speed.py: images per second
 *    of each whole process (start-up included), the ratio of the medians, PASS when mod is at least as fast, and
 *    the CPU seconds of each (on a busy machine wall time mostly measures the others; CPU time does not).
 * 2. The hashes both print for the same files: how many differ, and by how many bits. mod converts a photo
 *    with an embedded ICC profile other than sRGB to sRGB, Pillow hands over the stored values: on the 500
 *    ordinary photos every hash that differs is one of those (decoded without the conversion, all 500 agree).
 * 3. What the hash-list signal adds to a scan: per image, the decode, then the PDQ hash with its seven
 *    rotations and mirrors and the lookup in a list of 100 000 hashes (target: at most 3 ms on top of the decode).
 */
import {spawn} from 'node:child_process'
import {existsSync} from 'node:fs'
import {mkdir, readdir, readFile, writeFile} from 'node:fs/promises'
import {cpus, loadavg} from 'node:os'
import {join} from 'node:path'


import {decodeImage, probeImage} from '../src/lib/image/decode.js'
import {loadHashList} from '../src/lib/signals/pdq/list-load.js'
import {matchHash} from '../src/lib/signals/pdq/match.js'
import {pdqDihedralHashes} from '../src/lib/signals/pdq/pdq.js'
import {BIN, cpuFlags, median, OUT, ROOT, table} from './lib.js'
import {random} from '../test/helpers/nsfw-images.js'

const arg = (name: string, fallback: string): string => {
  const i = process.argv.indexOf(`--${name}`)
  return i === -1 ? fallback : process.argv[i + 1]
}
const DIR = process.env.MOD_BENCH_PHOTOS ?? '/work/shared/data/ordinary-photos'
const ROUNDS = Number(arg('rounds', '3'))
const PYTHON = arg('python', join(ROOT, 'bench', '.venv', 'bin', 'python'))
const LIST_SIZE = 100_000
const SIGNAL_TARGET_MS = 3

interface Run {
  wall: number
  cpu: number
  hashes: Map<string, {hash: string; quality: number}>
}

/** Runs a command under bash, whose `times` gives the CPU seconds its child used (user + system). */
function run(command: string[]): Promise<Run> {
  const started = performance.now()
  const child = spawn('bash', ['-c', '"$@"; status=$?; times >&2; exit $status', 'bash', ...command], {cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe']})
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()))
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
  return new Promise((done, fail) => {
    child.once('error', fail)
    child.once('close', (code) => {
      const wall = (performance.now() - started) / 1000
      if (code !== 0) return fail(new Error(`${command.join(' ')} exited with ${code}: ${stderr}`))
      // The last line of `times`: the children's user and system time, as 0m4.930s 0m0.340s.
      const seconds = (stderr.trim().split('\n').at(-1) ?? '').split(/\s+/).map((t) => {
        const m = /(\d+)m([\d.]+)s/.exec(t)
        return m ? Number(m[1]) * 60 + Number(m[2]) : 0
      })
      const hashes = new Map<string, {hash: string; quality: number}>()
      for (const line of stdout.trim().split('\n')) {
        const row = JSON.parse(line) as {source?: string; hash?: string; quality?: number}
        if (row.source && row.hash !== undefined) hashes.set(row.source, {hash: row.hash, quality: row.quality ?? 0})
      }
      done({wall, cpu: seconds[0] + (seconds[1] ?? 0), hashes})
    })
  })
}

function bitsApart(a: string, b: string): number {
  let n = 0
  for (let i = 0; i < a.length; i += 8) {
    let x = (parseInt(a.slice(i, i + 8), 16) ^ parseInt(b.slice(i, i + 8), 16)) >>> 0
    for (; x; x &= x - 1) n++
  }
  return n
}

function vectorFlags(): string {
  const flags = cpuFlags()
  return ['avx2', 'avx512f', 'avx512_vnni', 'avx_vnni'].filter((f) => flags.includes(f)).join(' ') || 'none of avx2/avx512'
}

async function speed(): Promise<void> {
  if (!existsSync(PYTHON)) throw new Error(`no ${PYTHON}: python3 -m venv bench/.venv && bench/.venv/bin/pip install pdqhash numpy pillow`)
  const mod: Run[] = []
  const ref: Run[] = []
  for (let round = 0; round < ROUNDS; round++) {
    // Alternating, so that both sides meet the same moments of a busy machine.
    mod.push(await run([process.execPath, BIN, 'hash', DIR, '--ndjson']))
    ref.push(await run([PYTHON, join(ROOT, 'bench', 'pdq_reference_speed.py'), DIR]))
    process.stdout.write(`   round ${round + 1}: mod ${mod[round].wall.toFixed(1)} s, pdqhash ${ref[round].wall.toFixed(1)} s, load ${loadavg()[0].toFixed(1)}\n`)
  }
  const images = mod[0].hashes.size
  const rate = (runs: Run[]): number => images / median(runs.map((r) => r.wall))
  const cpuMs = (runs: Run[]): number => (1000 * median(runs.map((r) => r.cpu))) / images
  const ratio = rate(mod) / rate(ref)
  table([
    ['', 'images/s (wall, median)', 'CPU ms per image (median)'],
    ['mod hash (sharp decode, 2 images of lookahead, 2 read ahead)', rate(mod).toFixed(1), cpuMs(mod).toFixed(2)],
    ['pdqhash + Pillow (one thread)', rate(ref).toFixed(1), cpuMs(ref).toFixed(2)],
  ])
  process.stdout.write(`\n   ratio mod / pdqhash, images/s: ${ratio.toFixed(2)} x (target >= 1): ${ratio >= 1 ? 'PASS' : 'MISS'}\n`)
  process.stdout.write(`   CPU per image, pdqhash / mod: ${(cpuMs(ref) / cpuMs(mod)).toFixed(2)} x\n`)
  if (ratio < 1) {
    // Decoding (libuv's and libvips' threads) and hashing (the main thread) overlap, so mod's ceiling is its CPU
    // time spread over every core; a miss under that ceiling means other work had the cores (see the load).
    const ceiling = (1000 * cpus().length) / cpuMs(mod)
    process.stdout.write(`   floor: ${cpuMs(mod).toFixed(2)} ms of CPU an image over ${cpus().length} cores allows ${ceiling.toFixed(1)} images/s, `)
    process.stdout.write(`${(ceiling / rate(ref)).toFixed(2)} x pdqhash${ceiling < rate(ref) ? '' : `: the cores were shared (load ${loadavg()[0].toFixed(1)})`}\n`)
  }

  const distances: number[] = []
  let missing = 0
  for (const [source, h] of mod[0].hashes) {
    const other = ref[0].hashes.get(source)
    if (!other) missing++
    else distances.push(bitsApart(h.hash, other.hash))
  }
  const differ = distances.filter((d) => d > 0)
  process.stdout.write(`   hashes: ${images} by mod, ${ref[0].hashes.size} by pdqhash; ${differ.length} of ${distances.length} differ`)
  process.stdout.write(differ.length ? ` (by ${Math.min(...differ)} to ${Math.max(...differ)} bits, median ${median(differ)}: mod converts embedded ICC profiles other than sRGB to sRGB, Pillow does not)` : '')
  process.stdout.write(missing ? `; ${missing} only in mod's output\n` : '\n')
}

async function signalCost(): Promise<void> {
  const dir = join(OUT, 'pdq-speed')
  await mkdir(dir, {recursive: true})
  const file = join(dir, `list-${LIST_SIZE}.txt`)
  if (!existsSync(file)) {
    const next = random(3)
    const lines: string[] = []
    for (let i = 0; i < LIST_SIZE; i++) {
      let hex = ''
      for (let w = 0; w < 8; w++) hex += ((next() * 4294967296) >>> 0).toString(16).padStart(8, '0')
      lines.push(`${hex},case-${i % 100}`)
    }
    await writeFile(file, `${lines.join('\n')}\n`)
  }
  // As a scan loads it: a list of this size stays in the process's memory (shared lists are measured by pdq.ts).
  const lists = [await loadHashList(file, 'bench', {cacheDir: join(dir, 'cache')})]
  const thresholds = {bench: 31}
  const names = (await readdir(DIR)).sort()
  const decodeMs: number[] = []
  const signalMs: number[] = []
  const hashMs: number[] = []
  // Decoding a photo with an embedded ICC profile other than sRGB includes its conversion to sRGB (libvips builds
  // a colour transform for each image): the part of mod's decode that Pillow's does not do.
  const byProfile: Record<'none' | 'srgb' | 'other', number[]> = {none: [], srgb: [], other: []}
  const limits = {maxBytes: 100 * 1024 * 1024, maxPixels: 100_000_000}
  for (let pass = 0; pass < 2; pass++) {
    for (const name of names) {
      const bytes = await readFile(join(DIR, name))
      const t0 = performance.now()
      const frames = await decodeImage(bytes, limits).catch(() => undefined)
      if (!frames) continue
      const t1 = performance.now()
      const {hashes, quality} = pdqDihedralHashes(frames[0])
      const tHash = performance.now()
      await matchHash(lists, {hash: hashes.original, quality, dihedral: hashes}, {thresholds})
      const t2 = performance.now()
      // The first pass warms the JIT and the page cache.
      if (pass === 1) {
        decodeMs.push(t1 - t0)
        signalMs.push(t2 - t1)
        hashMs.push(tHash - t1)
        byProfile[(await probeImage(bytes)).profile ?? 'none'].push(t1 - t0)
      }
    }
  }
  const added = median(signalMs)
  process.stdout.write(`\n   a scan with a hash list of ${LIST_SIZE} hashes, per image (median of ${signalMs.length}): decode ${median(decodeMs).toFixed(2)} ms, `)
  process.stdout.write(`then PDQ with its 8 variants + lookup ${added.toFixed(2)} ms (target <= ${SIGNAL_TARGET_MS} ms): ${added <= SIGNAL_TARGET_MS ? 'PASS' : 'MISS'}\n`)
  const {none, srgb, other} = byProfile
  process.stdout.write(`   of which PDQ ${median(hashMs).toFixed(2)} ms; the decode of the ${none.length} photos without an ICC profile ${median(none).toFixed(2)} ms, `)
  process.stdout.write(`of the ${srgb.length} with an sRGB one (kept) ${median(srgb).toFixed(2)} ms, of the ${other.length} with another (converted to sRGB) ${median(other).toFixed(2)} ms (medians)\n`)
}

process.stdout.write(`\n== pdq-speed: mod hash against pdqhash + Pillow on ${DIR}\n`)
process.stdout.write(`   ${cpus()[0]?.model ?? 'unknown CPU'} (${vectorFlags()}), ${cpus().length} cores, node ${process.version}, load ${loadavg().map((l) => l.toFixed(2)).join(' ')}\n\n`)
await speed()
await signalCost()
process.stdout.write(`   load at the end ${loadavg().map((l) => l.toFixed(2)).join(' ')}: on a busy machine every figure is noisy; compare the ratios.\n`)
