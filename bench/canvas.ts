/**
 * `npm run bench -- canvas` (or `npx tsx bench/canvas.ts [DATA_DIR]`): does a photo keep its verdict when it is put
 * on a canvas, as story editors, letterboxing and padding tools do? Both sides of the scale, on the photo sets of
 * `verdicts.ts` (DATA_DIR as there): for the photos the specialist flags as they are, the share still flagged on
 * each canvas (recall kept); for the photos it finds safe, the share a canvas makes flagged (false alarms).
 *
 * Each photo goes the engine's way with the default policy, the embedded specialist alone (`mod scan --only
 * nsfw`), as it is and on six canvases, each written as a JPEG of quality 90: bars of 20% of its height above and
 * below (white, black), the middle of a canvas of 4 times its area (white, black, light noise), and the middle of
 * a grey 9:16 story canvas as wide as the photo, two-tone bars (a light status bar over a black band); and, for
 * comparison, re-encoded alike with no canvas (photos near a threshold cross it on re-encoding alone). Bars end at the picture's sharp edge, which the specialist's
 * frame cuts (`findBars` in src/lib/image/trim.ts); the noise canvas has no bars to cut and shows the models' own
 * limit (the flagged content must fill the frame). Then three PNGs with transparency, which the engine scores as a
 * light and a dark page show them: the photo in the middle of a transparent canvas of 4 times its area, an oval
 * cutout of it with a soft edge, and the photo drawn in the alpha of white pixels (blank on white, the photo in grey
 * on black), with the photo in grey as a JPEG for comparison. `BENCH_VARIANTS=name,name` runs only those columns.
 */
import './no-telemetry.js'

import {existsSync} from 'node:fs'
import {readdir, readFile} from 'node:fs/promises'
import {join} from 'node:path'

import sharp, {type Sharp} from 'sharp'

import {buildPolicy} from '../src/lib/config/policy.js'
import {DEFAULT_LIMITS} from '../src/lib/config/settings.js'
import {createEngine} from '../src/lib/engine.js'
import type {ModerationResult} from '../src/lib/types.js'
import {CACHE_DIR, header, ROOT, saveResults, table, verdict, type Verdict} from './lib.js'

const FAMILY = ['nudity', 'sexual_activity', 'suggestive']
const KINDS = ['ordinary-photos', 'people-fashion', 'skin-closeups', 'art', 'swimwear', 'nude-art']
const IMAGE = /\.(jpe?g|png|webp|gif|tiff?|avif)$/i

const dataDir = process.argv[2] ?? process.env.BENCH_DATA ?? join(ROOT, '..', 'shared', 'data')
const kinds = KINDS.filter((k) => existsSync(join(dataDir, k)))
if (kinds.length === 0) {
  process.stderr.write(`canvas: no photo folders (${KINDS.join(', ')}) in ${dataDir}; give the folder that holds them as the first argument or BENCH_DATA\n`)
  process.exit(2)
}

type Rgb = {r: number; g: number; b: number}
const WHITE = {r: 255, g: 255, b: 255}
const BLACK = {r: 0, g: 0, b: 0}
const GREY = {r: 128, g: 128, b: 128}

/** The photo (upright) in the middle of a canvas of `background`, `x` and `y` pixels added on each side. */
async function onCanvas(photo: Sharp, width: number, height: number, x: number, y: number, background: Rgb | 'noise'): Promise<Buffer> {
  if (background !== 'noise') return photo.extend({top: y, bottom: y, left: x, right: x, background}).jpeg({quality: 90}).toBuffer()
  const [w, h] = [width + 2 * x, height + 2 * y]
  // Light noise, seeded: grey levels 200 to 255.
  const noise = Buffer.alloc(w * h * 3)
  let s = 12345
  for (let i = 0; i < noise.length; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0
    noise[i] = 200 + ((s >>> 24) % 56)
  }
  const picture = await photo.toBuffer()
  return sharp(noise, {raw: {width: w, height: h, channels: 3}}).composite([{input: picture, left: x, top: y}]).jpeg({quality: 90}).toBuffer()
}

/** A phone viewer's bars: a light status bar of 8% of the height over a black band of 12%, and black 20% below. */
async function twoTone(photo: Sharp, width: number, height: number): Promise<Buffer> {
  const [light, dark] = [Math.round(0.08 * height), Math.round(0.12 * height)]
  const framed = await photo.extend({top: dark, bottom: Math.round(0.2 * height), left: 0, right: 0, background: BLACK}).toBuffer()
  return sharp(framed).extend({top: light, bottom: 0, left: 0, right: 0, background: {r: 235, g: 235, b: 240}}).jpeg({quality: 90}).toBuffer()
}

/** The photo's pixels with an alpha channel made from them, as a PNG: `alpha(r, g, b, x, y)` gives each pixel's. */
async function withAlpha(photo: Sharp, width: number, height: number, alpha: (rgb: Buffer, i: number, x: number, y: number) => [number, number, number, number]): Promise<Buffer> {
  const rgb = await photo.removeAlpha().raw().toBuffer()
  const rgba = Buffer.alloc(width * height * 4)
  for (let y = 0, i = 0; y < height; y++) for (let x = 0; x < width; x++, i++) rgba.set(alpha(rgb, i * 3, x, y), i * 4)
  return sharp(rgba, {raw: {width, height, channels: 4}}).png().toBuffer()
}

/** A portrait cutout: an oval of the photo with a soft edge, transparent around it. */
function oval(rgb: Buffer, i: number, x: number, y: number, w: number, h: number): [number, number, number, number] {
  const d = Math.hypot((x - w / 2) / (0.45 * w), (y - h / 2) / (0.48 * h))
  return [rgb[i], rgb[i + 1], rgb[i + 2], Math.round(255 * Math.min(1, Math.max(0, (1 - d) * 20)))]
}

/** White pixels whose alpha is the photo's luminance: blank on a white page, the photo in grey on a black one. */
function drawnInAlpha(rgb: Buffer, i: number): [number, number, number, number] {
  return [255, 255, 255, Math.round(0.299 * rgb[i] + 0.587 * rgb[i + 1] + 0.114 * rgb[i + 2])]
}

const VARIANTS: {name: string; make: (photo: Sharp, w: number, h: number) => Promise<Buffer>}[] = [
  // The control: re-encoding alone moves a photo near a threshold across it, canvas or not.
  {name: 're-encoded', make: (p, w, h) => onCanvas(p, w, h, 0, 0, WHITE)},
  {name: 'white bars 20%', make: (p, w, h) => onCanvas(p, w, h, 0, Math.round(0.2 * h), WHITE)},
  {name: 'black bars 20%', make: (p, w, h) => onCanvas(p, w, h, 0, Math.round(0.2 * h), BLACK)},
  {name: 'white canvas 4x', make: (p, w, h) => onCanvas(p, w, h, Math.round(w / 2), Math.round(h / 2), WHITE)},
  {name: 'black canvas 4x', make: (p, w, h) => onCanvas(p, w, h, Math.round(w / 2), Math.round(h / 2), BLACK)},
  {name: 'grey story 9:16', make: (p, w, h) => onCanvas(p, w, h, Math.max(0, Math.round(((h * 9) / 16 - w) / 2)), Math.max(0, Math.round(((w * 16) / 9 - h) / 2)), GREY)},
  {name: 'two-tone bars', make: (p, w, h) => twoTone(p, w, h)},
  {name: 'noise canvas 4x', make: (p, w, h) => onCanvas(p, w, h, Math.round(w / 2), Math.round(h / 2), 'noise')},
  // The control of 'drawn in alpha', whose dark view is the photo in grey.
  {name: 'greyscale', make: (p) => p.greyscale().jpeg({quality: 90}).toBuffer()},
  // PNGs with transparency, which a light page shows flattened onto white and a dark page onto black.
  {name: 'transparent canvas 4x', make: (p, w, h) => p.ensureAlpha().extend({top: Math.round(h / 2), bottom: Math.round(h / 2), left: Math.round(w / 2), right: Math.round(w / 2), background: {r: 0, g: 0, b: 0, alpha: 0}}).png().toBuffer()},
  {name: 'oval cutout', make: (p, w, h) => withAlpha(p, w, h, (rgb, i, x, y) => oval(rgb, i, x, y, w, h))},
  {name: 'drawn in alpha', make: (p, w, h) => withAlpha(p, w, h, drawnInAlpha)},
]
/** `BENCH_VARIANTS=name,name`: only these canvases (the photos as they are are always scored). */
const chosen = process.env.BENCH_VARIANTS?.split(',').map((n) => n.trim())
const variants = chosen ? VARIANTS.filter((v) => chosen.includes(v.name)) : VARIANTS

const engine = createEngine({preset: 'fast', modelDir: join(dataDir, 'no-clip-model'), cacheDir: CACHE_DIR, policy: buildPolicy(), limits: DEFAULT_LIMITS, only: 'nsfw'})
const flagged = async (bytes: Buffer, name: string) => ((await engine.moderateImage(bytes, name)) as ModerationResult).labels.some((l) => FAMILY.includes(l.name) && l.score >= 0.5)
const pct = (n: number, of: number) => (of === 0 ? '-' : `${((100 * n) / of).toFixed(1)}%`)

header('canvas', `photos on canvases, the embedded specialist alone, on ${kinds.join(', ')} in ${dataDir}`)
await engine.load()
const verdicts: Verdict[] = []
const figures: Record<string, unknown> = {}
const rows: string[][] = []
for (const kind of kinds) {
  const dir = join(dataDir, kind)
  const files = (await readdir(dir)).filter((f) => IMAGE.test(f)).sort()
  const kept = variants.map(() => 0)
  const raised = variants.map(() => 0)
  let unsafe = 0
  for (const file of files) {
    const bytes = await readFile(join(dir, file))
    const was = await flagged(bytes, file)
    if (was) unsafe++
    const upright = await sharp(bytes).rotate().toBuffer({resolveWithObject: true})
    for (const [i, v] of variants.entries()) {
      const now = await flagged(await v.make(sharp(upright.data), upright.info.width, upright.info.height), `${file} (${v.name})`)
      if (was && now) kept[i]++
      if (!was && now) raised[i]++
    }
  }
  const safe = files.length - unsafe
  rows.push([`${kind} (${files.length}): recall kept, of ${unsafe} flagged`, ...kept.map((k) => pct(k, unsafe))])
  rows.push([`${kind}: false alarms, of ${safe} safe`, ...raised.map((k) => pct(k, safe))])
  figures[kind] = {images: files.length, flagged: unsafe, kept: Object.fromEntries(variants.map((v, i) => [v.name, kept[i]])), raised: Object.fromEntries(variants.map((v, i) => [v.name, raised[i]]))}
  // Bars and plain canvases must keep what the photo alone shows, and add no flag; noise is the models' limit.
  for (const [i, v] of variants.entries()) {
    // Noise and greyscale are the models' limits (greyscale keeps fewer verdicts), drawn in alpha a greyscale one.
    if (v.name.startsWith('noise') || ['re-encoded', 'greyscale', 'drawn in alpha'].includes(v.name)) continue
    if (unsafe >= 10) verdicts.push(verdict('canvas', `${kind}, ${v.name}`, 'recall kept', (100 * kept[i]) / unsafe, 'min', 90, '%', 1))
    if (safe >= 10) verdicts.push(verdict('canvas', `${kind}, ${v.name}`, 'false alarms', (100 * raised[i]) / safe, 'max', 1, '%', 1))
  }
}
process.stdout.write('\n')
table([['', ...variants.map((v) => v.name)], ...rows])
await engine.close()
await saveResults('canvas', verdicts, figures)
