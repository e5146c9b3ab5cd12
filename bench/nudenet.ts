/**
 * `npx tsx bench/nudenet.ts DIR [NUDENET_DIR]` (e.g. ../shared/data/ordinary-photos): what the nudity family is
 * flagged on in a folder of ordinary photos with the NudeNet detector installed beside the embedded specialist,
 * under the rule of src/lib/signals/nudenet/rule.ts, against the specialist alone. NUDENET_DIR is an installed
 * nudenet folder (default: <MOD_CACHE_DIR or ~/.cache/mod>/nudenet, as `mod models pull nudenet` leaves it).
 *
 * Each image goes the engine's way (decode, border trim, the specialist's views and rule, the detector on the
 * same trimmed frame). Prints per category and for the family the images flagged by the specialist alone and
 * with the detector, for the whole folder and its two halves (even and odd positions of the sorted list), the
 * detector's own flag rate (an exposed part at 0.25, its package's default, and at 0.5), and the images flagged
 * either way with the evidence. Not part of `npm run bench`: it needs photos this repository does not ship.
 */
import './no-telemetry.js'

import {homedir} from 'node:os'
import {readdir, readFile} from 'node:fs/promises'
import {join, resolve} from 'node:path'

import {buildPolicy} from '../src/lib/config/policy.js'
import {DEFAULT_LIMITS} from '../src/lib/config/settings.js'
import {decodeImage} from '../src/lib/image/decode.js'
import {prepareFrames} from '../src/lib/image/prepare.js'
import {classifyViews, openNsfwRunner} from '../src/lib/signals/nsfw/runner.js'
import {nsfwCategoryScores, type NsfwCategoryScores} from '../src/lib/signals/nsfw/rule.js'
import type {Detection} from '../src/lib/signals/nudenet/decode.js'
import {openNudenet} from '../src/lib/signals/nudenet/detector.js'
import {combineNudenet, EXPOSED_PARTS} from '../src/lib/signals/nudenet/rule.js'
import {header, table} from './lib.js'

const IMAGE = /\.(jpe?g|png|webp|gif|tiff?|avif)$/i
const FAMILY = ['nudity', 'sexual_activity', 'suggestive'] as const

const dir = process.argv[2]
if (dir === undefined) {
  process.stderr.write('usage: npx tsx bench/nudenet.ts DIR [NUDENET_DIR]\n')
  process.exit(2)
}
const nudenetDir = process.argv[3] ?? join(process.env.MOD_CACHE_DIR ?? join(homedir(), '.cache', 'mod'), 'nudenet')
const files = (await readdir(dir)).filter((f) => IMAGE.test(f)).sort()
const policy = buildPolicy()
const threshold = Object.fromEntries(policy.categories.map((c) => [c.name, c.threshold]))

const specialist = await openNsfwRunner({threads: 1})
const detector = await openNudenet({dir: nudenetDir, threads: 1})
if (!detector) {
  process.stderr.write(`no NudeNet detector installed in ${nudenetDir}: run mod models pull nudenet, or name the folder\n`)
  process.exit(2)
}

header('nudenet', `the nudity family on ${files.length} images of ${resolve(dir)}: the specialist alone, and with NudeNet (${nudenetDir})`)

interface Row {
  file: string
  half: 0 | 1
  alone: NsfwCategoryScores
  both: NsfwCategoryScores
  detections: Detection[]
}
const rows: Row[] = []
for (const [i, file] of files.entries()) {
  const decoded = await decodeImage(await readFile(join(dir, file)), {maxBytes: DEFAULT_LIMITS.maxBytes, maxPixels: DEFAULT_LIMITS.maxPixels})
  const {frames} = await prepareFrames(decoded, {trimBorders: policy.trim_borders})
  const [probabilities] = await classifyViews(specialist, [specialist.views(frames[0])])
  const [detections] = await detector.detect([detector.prepare(frames[0])])
  const alone = nsfwCategoryScores(probabilities)
  rows.push({file, half: (i % 2) as 0 | 1, alone, both: combineNudenet(alone, detections), detections})
}
await Promise.all([specialist.close(), detector.close()])

const pct = (n: number, of: number) => `${((100 * n) / of).toFixed(1)}%`
const flagged = (s: NsfwCategoryScores, c: (typeof FAMILY)[number]) => s[c] >= threshold[c]
const family = (s: NsfwCategoryScores) => FAMILY.some((c) => flagged(s, c))
const exposedAt = (bar: number) => (r: Row) => r.detections.some((d) => EXPOSED_PARTS.has(d.label) && d.score >= bar)
const halves = [rows.filter((r) => r.half === 0), rows.filter((r) => r.half === 1)]
const line = (name: string, f: (r: Row) => boolean) => {
  const n = rows.filter(f).length
  return [name, n, pct(n, rows.length), ...halves.map((h) => `${h.filter(f).length} (${pct(h.filter(f).length, h.length)})`)]
}
table([
  ['flagged for', 'images', 'rate', 'even half', 'odd half'],
  ...FAMILY.flatMap((c) => [line(`${c}, specialist alone`, (r) => flagged(r.alone, c)), line(`${c}, with NudeNet`, (r) => flagged(r.both, c))]),
  line('the family, specialist alone', (r) => family(r.alone)),
  line('the family, with NudeNet', (r) => family(r.both)),
  line('NudeNet alone: an exposed part >= 0.25', exposedAt(0.25)),
  line('NudeNet alone: an exposed part >= 0.5', exposedAt(0.5)),
])

const shown = rows.filter((r) => family(r.alone) || family(r.both) || exposedAt(0.25)(r))
process.stdout.write('\nimages flagged by either, or with an exposed part >= 0.25 (scores: nudity/sexual/suggestive):\n')
table([
  ['image', 'alone', 'with NudeNet', 'detections >= 0.25'],
  ...shown.map((r) => [
    r.file,
    FAMILY.map((c) => r.alone[c].toFixed(2)).join('/'),
    FAMILY.map((c) => r.both[c].toFixed(2)).join('/'),
    r.detections.map((d) => `${d.label} ${d.score.toFixed(2)}`).join(', ') || '-',
  ]),
])
