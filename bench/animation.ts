/**
 * `npx tsx bench/animation.ts [DATA_DIR]`: which frames of an animation are scored (decode.ts: those chosen by display
 * time, then the frames that show other pictures than every one scored), measured on both sides: a flagged picture
 * in a slideshow must be among them, and frames of one shot in motion should add little (each frame scored costs a
 * model run).
 *
 * - Slideshows: for each swimwear photo, an animated WebP of ordinary photos (a seeded choice each time) with the
 *   swimwear photo at a seeded place, every frame shown 500 ms; hidden: the swimwear frame is not among the frames
 *   decoded for scoring. With 40 pictures (within the frames scored) and 70 (beyond them).
 * - Motion: for 40 ordinary photos, 60 frames of a pan with a 1.6 x zoom over the photo; the frames decoded beyond
 *   the 8 chosen by display time.
 *
 * Frames are 160x120 (a GIF's usual size; the test is on 8 x 8 blocks, so size matters little). DATA_DIR (default:
 * `../shared/data` beside the repository, or BENCH_DATA) holds `ordinary-photos/` and `swimwear/`; the photos are
 * never part of the repository. No model is needed.
 */
import './no-telemetry.js'

import {readdir} from 'node:fs/promises'
import {join} from 'node:path'

import sharp from 'sharp'

import {DEFAULT_LIMITS} from '../src/lib/config/settings.js'
import {MAX_FRAMES} from '../src/lib/image/animation-frames.js'
import {decodeImage} from '../src/lib/image/decode.js'
import type {RgbImage} from '../src/lib/types.js'
import {header, ROOT, saveResults, table} from './lib.js'

const dataDir = process.argv[2] ?? process.env.BENCH_DATA ?? join(ROOT, '..', 'shared', 'data')
const [W, H] = [160, 120]
const FRAME_BYTES = W * H * 3

/** A seeded generator (mulberry32): the same slideshows on every run. */
function random(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = Math.imul(a ^ (a >>> 15), 1 | a)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

async function photos(folder: string): Promise<string[]> {
  const names = (await readdir(join(dataDir, folder))).filter((n) => /\.(jpe?g|png)$/i.test(n)).sort()
  return names.map((n) => join(dataDir, folder, n))
}

const frameOf = (file: string): Promise<Buffer> => sharp(file).resize(W, H, {fit: 'cover'}).removeAlpha().raw().toBuffer()

async function animation(frames: Buffer[], delay: number): Promise<Buffer> {
  return sharp(Buffer.concat(frames), {raw: {width: W, height: H * frames.length, channels: 3, pageHeight: H}})
    .webp({quality: 90, delay: frames.map(() => delay)})
    .toBuffer()
}

/** Whether a decoded frame shows `frame` (lossy WebP moves pixels a little). */
function shows(decoded: RgbImage, frame: Buffer): boolean {
  let difference = 0
  for (let i = 0; i < FRAME_BYTES; i++) difference += Math.abs(decoded.data[i] - frame[i])
  return difference / FRAME_BYTES < 8
}

async function slideshows(ordinary: Buffer[], flagged: Buffer[], pictures: number): Promise<{hidden: number; scored: number[]}> {
  const next = random(pictures)
  let hidden = 0
  const scored: number[] = []
  for (const photo of flagged) {
    const others = Array.from({length: pictures - 1}, () => ordinary[Math.floor(next() * ordinary.length)])
    others.splice(Math.floor(next() * pictures), 0, photo)
    const decoded = await decodeImage(await animation(others, 500), DEFAULT_LIMITS)
    scored.push(decoded.length)
    if (!decoded.some((d) => shows(d, photo))) hidden++
  }
  return {hidden, scored}
}

async function pan(file: string, count: number): Promise<Buffer[]> {
  const base = await sharp(file).resize(2 * W, 2 * H, {fit: 'cover'}).removeAlpha().raw().toBuffer()
  return Promise.all(
    Array.from({length: count}, (_, i) => {
      const t = i / (count - 1)
      const zoom = 1 + 0.6 * t
      const [width, height] = [Math.round((2 * W) / zoom), Math.round((2 * H) / zoom)]
      const [left, top] = [Math.round((2 * W - width) * t), Math.round(((2 * H - height) * (1 - t)) / 2)]
      return sharp(base, {raw: {width: 2 * W, height: 2 * H, channels: 3}}).extract({left, top, width, height}).resize(W, H).raw().toBuffer()
    }),
  )
}

const mean = (values: number[]): number => values.reduce((s, v) => s + v, 0) / values.length

header('animation', 'frames of an animation scored: slideshows with one swimwear photo, and one shot in motion')
const ordinaryFiles = await photos('ordinary-photos')
const ordinary = await Promise.all(ordinaryFiles.map(frameOf))
const flagged = await Promise.all((await photos('swimwear')).map(frameOf))
const rows: (string | number)[][] = [['animation', 'animations', 'flagged picture not scored', 'frames scored (mean, max)']]
const figures: Record<string, unknown> = {}
for (const pictures of [40, 70]) {
  const {hidden, scored} = await slideshows(ordinary, flagged, pictures)
  rows.push([`slideshow of ${pictures} pictures`, flagged.length, `${hidden} (${((100 * hidden) / flagged.length).toFixed(1)}%)`, `${mean(scored).toFixed(1)}, ${Math.max(...scored)}`])
  figures[`slideshow${pictures}`] = {animations: flagged.length, hidden, meanScored: mean(scored)}
}
const added: number[] = []
for (const file of ordinaryFiles.slice(0, 40)) added.push((await decodeImage(await animation(await pan(file, 60), 40), DEFAULT_LIMITS)).length - MAX_FRAMES)
rows.push(['60 frames of a pan and zoom', added.length, '', `${MAX_FRAMES} + ${mean(added).toFixed(2)}, ${MAX_FRAMES + Math.max(...added)}`])
figures.motion = {animations: added.length, meanAdded: mean(added), maxAdded: Math.max(...added)}
table(rows)
await saveResults('animation', [], figures)
