/**
 * pdq: hash lists at scale, and what PDQ survives. Run by hand (not part of `npm run bench`):
 *
 *   npx tsx bench/pdq.ts                       # 10 million hashes, 500 ordinary photos
 *   npx tsx bench/pdq.ts --count 1000000 --photos 100
 *
 * 1. A generated list of --count random hashes (bench/out/pdq/, labels "case-<n>" of 1000 kinds): load time
 *    from the text (parse + index, writing the binary cache) and from the cache, memory per hash, lookup
 *    time at threshold 31 (one hash, and the 8 dihedral variants), and recall of planted near-duplicates
 *    (distances 0-31) against a brute-force scan of the whole list.
 * 2. On ordinary photos (/work/shared/data/ordinary-photos, or MOD_BENCH_PHOTOS): the distance between a
 *    photo and its edited copy (JPEG quality 30-95, resize to 50%, 10% crop, small text overlay, colour shift,
 *    mirror and quarter turn matched with the dihedral variants), and the smallest distance between any two
 *    different photos (with and without the variants).
 */
import {createWriteStream, existsSync} from 'node:fs'
import {mkdir, readdir, readFile, rm} from 'node:fs/promises'
import {availableParallelism, loadavg} from 'node:os'
import {join} from 'node:path'

import sharp, {type Sharp} from 'sharp'

import {decodeImage} from '../src/lib/image/decode.js'
import {DIHEDRAL} from '../src/lib/signals/pdq/dct.js'
import {hammingDistance, hashToHex, popcount32, type Hash256} from '../src/lib/signals/pdq/hash256.js'
import {cachePath} from '../src/lib/signals/pdq/list-cache.js'
import {loadHashList} from '../src/lib/signals/pdq/list-load.js'
import {matchHash} from '../src/lib/signals/pdq/match.js'
import {indexArrays, searchMultiIndex} from '../src/lib/signals/pdq/multi-index.js'
import {pdqDihedralHashes, pdqHash} from '../src/lib/signals/pdq/pdq.js'
import {median, OUT, percentile, table} from './lib.js'
import {random} from '../test/helpers/nsfw-images.js'
import {flip, randomHash} from '../test/helpers/pdq-hashes.js'

const arg = (name: string, fallback: number): number => {
  const i = process.argv.indexOf(`--${name}`)
  return i === -1 ? fallback : Number(process.argv[i + 1])
}
const COUNT = arg('count', 10_000_000)
const PHOTOS = arg('photos', 500)
const PHOTO_DIR = process.env.MOD_BENCH_PHOTOS ?? '/work/shared/data/ordinary-photos'
const THRESHOLD = 31
const LIMITS = {maxBytes: 100 * 1024 * 1024, maxPixels: 100_000_000}
const MiB = 1024 * 1024

/** Writes the list once: line i is a hash made from seed i (so planted queries can be rebuilt without the file). */
async function writeList(file: string, count: number): Promise<void> {
  const out = createWriteStream(file)
  const next = random(1)
  let chunk = ''
  for (let i = 0; i < count; i++) {
    let hex = ''
    for (let w = 0; w < 8; w++) hex += ((next() * 4294967296) >>> 0).toString(16).padStart(8, '0')
    chunk += `${hex},case-${i % 1000}\n`
    if (chunk.length > 1 << 20) {
      if (!out.write(chunk)) await new Promise<void>((done) => out.once('drain', () => done()))
      chunk = ''
    }
  }
  out.end(chunk)
  await new Promise<void>((done) => out.once('finish', () => done()))
}

/** Wall and CPU seconds of one step (CPU is what counts on a shared machine). */
async function timed<T>(fn: () => Promise<T>): Promise<{value: T; wall: number; cpu: number}> {
  const cpu0 = process.cpuUsage()
  const t0 = performance.now()
  const value = await fn()
  const cpu = process.cpuUsage(cpu0)
  return {value, wall: (performance.now() - t0) / 1000, cpu: (cpu.user + cpu.system) / 1e6}
}

function memory(): {rss: number; external: number; heap: number} {
  const m = process.memoryUsage()
  return {rss: m.rss, external: m.external + m.arrayBuffers, heap: m.heapUsed}
}

async function listBench(): Promise<void> {
  const dir = join(OUT, 'pdq')
  await mkdir(dir, {recursive: true})
  const file = join(dir, `list-${COUNT}.txt`)
  if (!existsSync(file)) {
    const t = performance.now()
    await writeList(file, COUNT)
    console.log(`generated ${file} in ${((performance.now() - t) / 1000).toFixed(1)} s`)
  }
  await rm(cachePath(file), {force: true})
  globalThis.gc?.()
  const before = memory()
  const text = await timed(() => loadHashList(file, 'bench'))
  const after = memory()
  const fromText = text.value
  const cache = await timed(() => loadHashList(file, 'bench'))
  const loaded = cache.value
  if (loaded.from !== 'cache' || fromText.list.count !== COUNT) throw new Error('the cache was not used')
  const perHash = (after.rss - before.rss) / COUNT
  const arrays = [loaded.list.hashes, loaded.list.records, ...indexArrays(loaded.index)].reduce((n, a) => n + a.byteLength, 0)
  console.log(`\nlist of ${COUNT.toLocaleString('en')} hashes`)
  table([
    ['step', 'wall', 'CPU'],
    ['load from text (parse, index, write cache)', `${text.wall.toFixed(2)} s`, `${text.cpu.toFixed(2)} s`],
    ['load from the binary cache (SHA-256 check, index)', `${cache.wall.toFixed(2)} s`, `${cache.cpu.toFixed(2)} s`],
    ['RSS growth per hash (first load, text buffer included)', `${perHash.toFixed(1)} B`, ''],
    ['arrays per hash (hashes, records, index tables)', `${(arrays / COUNT).toFixed(1)} B`, ''],
    ['RSS now (both loads alive)', `${(process.memoryUsage().rss / MiB).toFixed(0)} MiB`, ''],
  ])

  // Planted near-duplicates: entries rebuilt from the generator, each moved by 0-31 bits; plus random queries.
  const next = random(99)
  const planted: {query: Uint8Array; id: number; distance: number}[] = []
  for (let k = 0; k < 1000; k++) {
    const id = Math.floor(next() * COUNT)
    const distance = k % (THRESHOLD + 1)
    planted.push({query: flip(loaded.list.hashes.subarray(id * 32, id * 32 + 32), distance, next), id, distance})
  }
  const randoms = Array.from({length: 1000}, () => randomHash(next))
  const times: number[] = []
  let found = 0
  const cpu0 = process.cpuUsage()
  for (const p of planted) {
    const t0 = performance.now()
    const hits = searchMultiIndex(loaded.index, p.query, THRESHOLD)
    times.push(performance.now() - t0)
    if (hits.some((h) => h.id === p.id)) found++
  }
  const cpu = process.cpuUsage(cpu0)
  const cpuPerLookup = (cpu.user + cpu.system) / 1000 / planted.length
  const randomTimes = randoms.map((q) => {
    const t0 = performance.now()
    searchMultiIndex(loaded.index, q, THRESHOLD)
    return performance.now() - t0
  })
  // The seven other variants of each query are random hashes not searched just before (a repeated query would
  // find its buckets in the CPU caches).
  const dihedralTimes = planted.slice(0, 125).map((p, k) => {
    const variants = Object.fromEntries(DIHEDRAL.map((d, i) => [d, d === 'original' ? p.query : randoms[(k * 8 + i) % randoms.length]]))
    const t0 = performance.now()
    matchHash([loaded], {hash: p.query, quality: 100, dihedral: variants as Record<(typeof DIHEDRAL)[number], Hash256>})
    return performance.now() - t0
  })
  // Brute force over the whole list for some queries: the index must find exactly the same entries.
  const bruteQueries = [...planted.slice(0, 16), ...randoms.slice(0, 4).map((query) => ({query, id: -1, distance: -1}))]
  let agree = 0
  const bruteTimes: number[] = []
  for (const q of bruteQueries) {
    const t0 = performance.now()
    const brute: number[] = []
    const words = loaded.index.words
    const qw = new Uint32Array(Uint8Array.from(q.query).buffer)
    for (let i = 0; i < COUNT; i++) {
      let d = 0
      for (let k = 0; k < 8; k++) d += popcount32(words[i * 8 + k] ^ qw[k])
      if (d <= THRESHOLD) brute.push(i)
    }
    bruteTimes.push(performance.now() - t0)
    const indexed = searchMultiIndex(loaded.index, q.query, THRESHOLD).map((h) => h.id).sort((a, b) => a - b)
    if (JSON.stringify(indexed) === JSON.stringify(brute)) agree++
  }
  console.log(`CPU per lookup (1000 planted queries, one hash each): ${cpuPerLookup.toFixed(3)} ms`)
  table([
    ['lookup at threshold 31 (wall)', 'median', 'p99'],
    ['planted near-duplicate, one hash', `${median(times).toFixed(3)} ms`, `${percentile(times, 99).toFixed(3)} ms`],
    ['random hash (no match), one hash', `${median(randomTimes).toFixed(3)} ms`, `${percentile(randomTimes, 99).toFixed(3)} ms`],
    ['8 dihedral variants (matchHash)', `${median(dihedralTimes).toFixed(3)} ms`, `${percentile(dihedralTimes, 99).toFixed(3)} ms`],
    ['brute-force scan of the list, one hash', `${median(bruteTimes).toFixed(1)} ms`, ''],
  ])
  console.log(`recall of planted near-duplicates (distance 0-31): ${found}/${planted.length}`)
  // Lookups are bound by memory latency: on a shared machine the other processes' load shows in the times.
  console.log(`load average (1, 5, 15 min): ${loadavg().map((x) => x.toFixed(2)).join(', ')} on a machine of ${availableParallelism()} cores`)
  console.log(`index results equal to brute force: ${agree}/${bruteQueries.length} queries`)
}

/** The edits a re-upload typically goes through. `mirror` and `rotate` are matched with dihedral variants. */
const EDITS: [string, (s: Sharp, w: number, h: number) => Sharp][] = [
  ['jpeg q95', (s) => s.jpeg({quality: 95})],
  ['jpeg q75', (s) => s.jpeg({quality: 75})],
  ['jpeg q50', (s) => s.jpeg({quality: 50})],
  ['jpeg q30', (s) => s.jpeg({quality: 30})],
  ['resize 50%', (s, w) => s.resize(Math.round(w / 2)).jpeg({quality: 85})],
  ['crop 10% (5% a side)', (s, w, h) => s.extract({left: Math.round(w * 0.05), top: Math.round(h * 0.05), width: Math.round(w * 0.9), height: Math.round(h * 0.9)}).jpeg({quality: 85})],
  ['crop 10% (one side)', (s, w, h) => s.extract({left: 0, top: 0, width: Math.round(w * 0.9), height: h}).jpeg({quality: 85})],
  ['text overlay', (s, w, h) => s.composite([{input: textOverlay(w, h), top: 0, left: 0}]).jpeg({quality: 85})],
  ['colour shift (hue +30, brightness 1.1)', (s) => s.modulate({hue: 30, brightness: 1.1}).jpeg({quality: 85})],
  ['greyscale', (s) => s.greyscale().jpeg({quality: 85})],
  ['mirror', (s) => s.flop().jpeg({quality: 85})],
  ['rotate 90', (s) => s.rotate(90).jpeg({quality: 85})],
]

function textOverlay(w: number, h: number): Buffer {
  const size = Math.max(10, Math.round(h / 14))
  return Buffer.from(`<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${h}"><text x="${Math.round(w * 0.04)}" y="${h - size}" font-family="sans-serif" font-weight="bold" font-size="${size}" fill="white" stroke="black" stroke-width="1">@someone reposted this</text></svg>`)
}

async function photoBench(): Promise<void> {
  if (PHOTOS === 0) return
  if (!existsSync(PHOTO_DIR)) {
    console.log(`\nno photos in ${PHOTO_DIR}: robustness skipped`)
    return
  }
  const names = (await readdir(PHOTO_DIR)).filter((n) => /\.(jpe?g|png|webp)$/i.test(n)).sort().slice(0, PHOTOS)
  const originals: {name: string; hash: Hash256; quality: number; dihedral: Hash256[]}[] = []
  const distances = new Map<string, number[]>(EDITS.map(([e]) => [e, []]))
  const started = performance.now()
  for (const name of names) {
    const bytes = await readFile(join(PHOTO_DIR, name))
    const [image] = await decodeImage(bytes, LIMITS)
    const d = pdqDihedralHashes(image)
    originals.push({name, hash: d.hashes.original, quality: d.quality, dihedral: DIHEDRAL.map((k) => d.hashes[k])})
    for (const [edit, apply] of EDITS) {
      const [edited] = await decodeImage(await apply(sharp(image.data, {raw: {width: image.width, height: image.height, channels: 3}}), image.width, image.height).toBuffer(), LIMITS)
      const h = pdqHash(edited).hash
      // Like matching with variants on: the nearest of the original's eight hashes.
      distances.get(edit)?.push(Math.min(...DIHEDRAL.map((_, i) => hammingDistance(h, originals[originals.length - 1].dihedral[i]))))
    }
  }
  const seconds = (performance.now() - started) / 1000
  console.log(`\n${names.length} ordinary photos x ${EDITS.length} edits (${seconds.toFixed(0)} s); distance to the original, variants on`)
  table([
    ['edit', 'median', 'p95', 'max', `within ${THRESHOLD}`],
    ...EDITS.map(([edit]) => {
      const d = distances.get(edit) as number[]
      return [edit, median(d), percentile(d, 95), Math.max(...d), `${((100 * d.filter((x) => x <= THRESHOLD).length) / d.length).toFixed(1)}%`]
    }),
  ])
  let smallest = {distance: 256, a: '', b: ''}
  let smallestVariants = {distance: 256, a: '', b: ''}
  let within = 0
  for (let i = 0; i < originals.length; i++) {
    for (let j = i + 1; j < originals.length; j++) {
      const d = hammingDistance(originals[i].hash, originals[j].hash)
      if (d <= THRESHOLD) within++
      if (d < smallest.distance) smallest = {distance: d, a: originals[i].name, b: originals[j].name}
      const dv = Math.min(...originals[j].dihedral.map((h) => hammingDistance(originals[i].hash, h)))
      if (dv < smallestVariants.distance) smallestVariants = {distance: dv, a: originals[i].name, b: originals[j].name}
    }
  }
  const low = originals.filter((o) => o.quality < 50).length
  console.log(`pairs of different photos: ${(originals.length * (originals.length - 1)) / 2}; within ${THRESHOLD}: ${within}`)
  console.log(`smallest distance: ${smallest.distance} (${smallest.a}, ${smallest.b}); with dihedral variants: ${smallestVariants.distance} (${smallestVariants.a}, ${smallestVariants.b})`)
  console.log(`photos below the quality floor of 50: ${low}; example hash ${hashToHex(originals[0].hash)}`)
}

await listBench()
await photoBench()
