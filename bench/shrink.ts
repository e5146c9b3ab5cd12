/**
 * shrink: reduced decoding (decode.ts planDecode) against decoding every pixel, on the default path (CLIP and the
 * NSFW specialist). A JPEG or WebP whose shorter side is at least 1 344 pixels is read at a reduced scale
 * (libvips' shrink-on-load) and resized to a shorter side of 448; every other image is decoded whole, as before.
 *
 * Per image set: how many images were decoded reduced; the cosine between the stand-in's CLIP image embeddings of
 * both paths (target >= 0.9995 on every image); the largest change of a category score (CLIP's and the NSFW
 * specialist's combined); verdicts that changed (target: none); and on the large images the CPU time of decode +
 * trim + preprocess and of the engine end to end, both ways.
 *
 * A miss of the cosine target carries its floor: how far the every-pixel path moves against itself when the image
 * is cropped by one pixel on each side and saved again as a JPEG of quality 95 (a change no one sees), and the
 * reduced path under the same change. CLIP's resize filters as Pillow's bicubic does (its kernel widens with the
 * reduction), so a one-pixel crop moves it little; when this bench was first run it sampled without a filter (as
 * transformers.js does), and at 10 or 18 times smaller it read single pixels, which ones shifting with the crop.
 *
 * Sets: the 1280x720 JPEG and the folder set (bench/out), the 500 ordinary photos (MOD_BENCH_PHOTOS, default
 * /work/shared/data/ordinary-photos), and large photos (`--large DIR` or MOD_BENCH_LARGE). The large set used for
 * the figures in README is the 40 JPEG and WebP photos and images of at least 1344 pixels a side from Debian's
 * plasma-workspace-wallpapers, gnome-backgrounds and mate-backgrounds packages (`apt-get download` them,
 * `dpkg-deb -x`, keep the largest file of each wallpaper).
 */
import './no-telemetry.js'
import {existsSync} from 'node:fs'
import {readdir, readFile} from 'node:fs/promises'
import {basename, join} from 'node:path'

import sharp from 'sharp'

import {DEFAULT_LIMITS} from '../src/lib/config/settings.js'
import {decodeImage} from '../src/lib/image/decode.js'
import {prepareFrames} from '../src/lib/image/prepare.js'
import {NSFW_SIZE} from '../src/lib/signals/nsfw/manifest.js'
import {loadManifest} from '../src/lib/model/manifest.js'
import {openClip} from '../src/lib/signals/clip/model.js'
import {cosine} from '../src/lib/signals/clip/zero-shot.js'
import type {ModerationResult} from '../src/lib/types.js'
import {benchEngine, ensureImages, folderFiles, HD_JPEG, header, median, ms, requireStandin, saveResults, STANDIN_DIR, table, verdict, type Verdict} from './lib.js'

const COSINE_TARGET = 0.9995
const ROUNDS = 5
const arg = (name: string): string | undefined => {
  const i = process.argv.indexOf(`--${name}`)
  return i === -1 ? undefined : process.argv[i + 1]
}
const PHOTOS = process.env.MOD_BENCH_PHOTOS ?? '/work/shared/data/ordinary-photos'
const LARGE = arg('large') ?? process.env.MOD_BENCH_LARGE

header('shrink', 'reduced decoding of large JPEG/WebP (shrink-on-load) vs every pixel: embeddings, scores, verdicts, time')
requireStandin()
await ensureImages()
const manifest = await loadManifest(STANDIN_DIR)
const clip = await openClip(STANDIN_DIR, manifest)
const side = Math.max(manifest.preprocess.resize, manifest.preprocess.crop, NSFW_SIZE)
const prepareOpts = {preprocess: manifest.preprocess, trimBorders: true}
const reduced = benchEngine('fp32', {nsfw: true})
const whole = benchEngine('fp32', {nsfw: true, everyPixel: true})
await reduced.load()
await whole.load()

const images = async (dir: string) => (existsSync(dir) ? (await readdir(dir)).filter((f) => /\.(jpe?g|webp|png|gif|avif|tiff?)$/i.test(f)).sort().map((f) => join(dir, f)) : [])
const sets: [string, string[]][] = [
  ['1280x720 JPEG + folder set', [HD_JPEG, ...(await folderFiles())]],
  ['ordinary photos', await images(PHOTOS)],
  ...(LARGE ? [['large photos', await images(LARGE)] as [string, string[]]] : []),
]

async function embedding(data: Buffer, frameSide?: number): Promise<{embedding: Float32Array; reduced: boolean}> {
  const frames = await decodeImage(data, DEFAULT_LIMITS, undefined, frameSide)
  const {tensors} = await prepareFrames(frames, prepareOpts)
  return {embedding: (await clip.embedImages(tensors[0], 1))[0], reduced: frames[0].scale !== undefined}
}

/** The image cropped by a pixel on each side and saved again as a JPEG of quality 95. */
async function nudged(data: Buffer): Promise<Buffer> {
  const {width, height} = await sharp(data).metadata()
  return sharp(data).extract({left: 1, top: 1, width: width - 2, height: height - 2}).jpeg({quality: 95}).toBuffer()
}

const scores = (r: ModerationResult) => new Map(r.labels.map((l) => [l.name, l.score]))
const flagged = (r: ModerationResult) => r.violations.map((v) => v.name).sort().join(',')

const rows: (string | number)[][] = [['set', 'images', 'decoded reduced', 'worst cosine', 'median cosine (reduced)', 'largest score change', 'verdicts changed']]
const verdicts: Verdict[] = []
const figures: Record<string, unknown> = {side}
for (const [name, files] of sets) {
  if (files.length === 0) continue
  const cosines: {file: string; cos: number}[] = []
  const selfWhole: number[] = []
  const selfReduced: number[] = []
  let shrunk = 0
  let scoreChange = 0
  const changed: string[] = []
  for (const file of files) {
    const data = await readFile(file)
    const a = await embedding(data)
    const b = await embedding(data, side)
    if (b.reduced) {
      shrunk++
      cosines.push({file: basename(file), cos: cosine(a.embedding, b.embedding)})
      const other = await nudged(data)
      selfWhole.push(cosine(a.embedding, (await embedding(other)).embedding))
      selfReduced.push(cosine(b.embedding, (await embedding(other, side)).embedding))
    }
    const [ra, rb] = [await whole.moderateImage(data, file), await reduced.moderateImage(data, file)]
    const sa = scores(ra)
    for (const [label, score] of scores(rb)) scoreChange = Math.max(scoreChange, Math.abs(score - (sa.get(label) ?? 0)))
    if (ra.is_safe !== rb.is_safe || flagged(ra) !== flagged(rb)) changed.push(basename(file))
  }
  const worst = cosines.reduce((w, c) => (c.cos < w.cos ? c : w), {file: '-', cos: 1})
  const med = cosines.length ? median(cosines.map((c) => c.cos)) : 1
  const below = (v: number[]) => v.filter((c) => c < COSINE_TARGET).length
  const floor = shrunk
    ? `floor: every pixel against itself after a 1-pixel crop and a q95 re-encode: worst ${Math.min(...selfWhole).toFixed(5)}, median ${median(selfWhole).toFixed(5)}, ` +
      `${below(selfWhole)} of ${shrunk} below ${COSINE_TARGET} (reduced against itself: worst ${Math.min(...selfReduced).toFixed(5)}, ${below(selfReduced)} below)`
    : undefined
  rows.push([name, files.length, shrunk, shrunk ? `${worst.cos.toFixed(5)} (${worst.file})` : '-', shrunk ? med.toFixed(5) : '-', scoreChange.toFixed(4), changed.length ? `${changed.length}: ${changed.slice(0, 5).join(' ')}` : '0'])
  figures[name] = {images: files.length, reduced: shrunk, worstCosine: worst.cos, worstImage: worst.file, medianCosine: med, belowTarget: below(cosines.map((c) => c.cos)), largestScoreChange: scoreChange, verdictsChanged: changed, selfWhole, selfReduced}
  if (shrunk) {
    const detail = `${name}: ${shrunk} of ${files.length} decoded reduced, ${below(cosines.map((c) => c.cos))} below the target, median ${med.toFixed(5)}, worst ${worst.file}`
    verdicts.push(verdict('shrink', detail, 'cosine', worst.cos, 'min', COSINE_TARGET, '', 5, floor))
  }
  verdicts.push(verdict('shrink', `${name}: verdicts changed of ${files.length}`, 'changed', changed.length, 'max', 0, '', 0))
}
table(rows)
process.stdout.write('\n')

// CPU time on the large images (or the folder's 1920x1080 ones without a large set), both paths, interleaved.
const timed = sets[sets.length - 1][1].slice(0, 20)
const cpu = async (fn: () => Promise<unknown>) => {
  const start = process.cpuUsage()
  await fn()
  const used = process.cpuUsage(start)
  return (used.user + used.system) / 1000
}
const t: Record<string, number[]> = {prepareWhole: [], prepareReduced: [], engineWhole: [], engineReduced: []}
for (let round = 0; round < ROUNDS; round++) {
  for (const file of timed) {
    const data = await readFile(file)
    t.prepareWhole.push(await cpu(async () => prepareFrames(await decodeImage(data, DEFAULT_LIMITS), prepareOpts)))
    t.prepareReduced.push(await cpu(async () => prepareFrames(await decodeImage(data, DEFAULT_LIMITS, undefined, side), prepareOpts)))
    t.engineWhole.push(await cpu(() => whole.moderateImage(data, file)))
    t.engineReduced.push(await cpu(() => reduced.moderateImage(data, file)))
  }
}
const sum = (v: number[]) => v.reduce((a, b) => a + b, 0) / ROUNDS / timed.length
table([
  [`CPU per image, ${timed.length} images of "${sets[sets.length - 1][0]}"`, 'every pixel', 'reduced', 'ratio'],
  ['decode + trim + CLIP preprocess', ms(sum(t.prepareWhole)), ms(sum(t.prepareReduced)), (sum(t.prepareWhole) / sum(t.prepareReduced)).toFixed(2)],
  ['engine end to end (CLIP + specialist)', ms(sum(t.engineWhole)), ms(sum(t.engineReduced)), (sum(t.engineWhole) / sum(t.engineReduced)).toFixed(2)],
])
process.stdout.write('\n')
figures.cpu = Object.fromEntries(Object.entries(t).map(([k, v]) => [k, sum(v)]))
await Promise.all([clip.close(), reduced.close(), whole.close()])
await saveResults('shrink', verdicts, figures)
