/**
 * pdq-orientation: how far a photo's stored-pixel PDQ hash (the one Meta's tools give, as they do not apply EXIF
 * orientation) is from what `mod` hashes, the image as displayed, and from the nearest of its eight rotations and
 * mirrors; and what the second hash costs. Run by hand (not part of `npm run bench`):
 *
 *   npx tsx bench/pdq-orientation.ts                         # test/fixtures/photos
 *   npx tsx bench/pdq-orientation.ts --photos /work/shared/data/ordinary-photos --limit 100
 *
 * Each photo is re-encoded (JPEG q90) with EXIF orientation 2-8; the stored pixels are decoded by sharp without
 * turning them. Per orientation it prints the distances' range and how many photos the variants alone would miss
 * (nearest over 31), then the median ms of the displayed hashes and of the stored-pixel hash over the oriented files.
 */
import {readdir, readFile} from 'node:fs/promises'
import {loadavg} from 'node:os'
import {join} from 'node:path'

import sharp from 'sharp'

import {DEFAULT_LIMITS} from '../src/lib/config/settings.js'
import {decodeImage} from '../src/lib/image/decode.js'
import {DIHEDRAL} from '../src/lib/signals/pdq/dct.js'
import {hammingDistance} from '../src/lib/signals/pdq/hash256.js'
import {DEFAULT_DISTANCE_THRESHOLD} from '../src/lib/signals/pdq/match.js'
import {pdqDihedralHashes, pdqHash, pdqStoredHash} from '../src/lib/signals/pdq/pdq.js'

const arg = (name: string, fallback: string): string => {
  const i = process.argv.indexOf(`--${name}`)
  return i === -1 ? fallback : process.argv[i + 1]
}
const DIR = arg('photos', join(import.meta.dirname, '..', 'test', 'fixtures', 'photos'))
const LIMIT = Number(arg('limit', '1000'))

const names = (await readdir(DIR)).filter((n) => /\.(jpe?g|png|webp)$/i.test(n)).sort().slice(0, LIMIT)
const rows = new Map<number, {displayed: number[]; nearest: number[]}>()
const displayedMs: number[] = []
const storedMs: number[] = []
const timed = <T>(into: number[], f: () => T): T => {
  const started = performance.now()
  const value = f()
  into.push(performance.now() - started)
  return value
}

for (const name of names) {
  const photo = await readFile(join(DIR, name))
  for (let o = 2; o <= 8; o++) {
    const file = await sharp(photo).jpeg({quality: 90}).withMetadata({orientation: o}).toBuffer()
    const {data, info} = await sharp(file, {autoOrient: false}).flatten({background: '#ffffff'}).toColourspace('srgb').raw().toBuffer({resolveWithObject: true})
    const expected = pdqHash({data, width: info.width, height: info.height}).hash
    const [image] = await decodeImage(file, DEFAULT_LIMITS)
    const {hashes} = timed(displayedMs, () => pdqDihedralHashes(image))
    const stored = timed(storedMs, () => pdqStoredHash(image))
    if (!stored || hammingDistance(stored.hash, expected) !== 0) throw new Error(`${name}, orientation ${o}: the stored-pixel hash is not the unturned file's`)
    const row = rows.get(o) ?? {displayed: [], nearest: []}
    row.displayed.push(hammingDistance(hashes.original, expected))
    row.nearest.push(Math.min(...DIHEDRAL.map((d) => hammingDistance(hashes[d], expected))))
    rows.set(o, row)
  }
}

const range = (xs: number[]) => `${Math.min(...xs)}-${Math.max(...xs)}`
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)].toFixed(2)
console.log(`${names.length} photos from ${DIR}, load ${loadavg()[0].toFixed(1)}; the stored-pixel hash equals the unturned file's on all of them`)
console.log('orientation  displayed vs stored  nearest of 8 variants vs stored  variants miss (> 31)')
for (const [o, r] of rows) {
  const misses = r.nearest.filter((d) => d > DEFAULT_DISTANCE_THRESHOLD).length
  console.log(`${String(o).padEnd(11)}  ${range(r.displayed).padEnd(19)}  ${range(r.nearest).padEnd(31)}  ${misses} of ${r.nearest.length}`)
}
console.log(`ms per image (median): displayed hash and its 7 variants ${median(displayedMs)}, stored-pixel hash ${median(storedMs)} (only images with an orientation)`)
