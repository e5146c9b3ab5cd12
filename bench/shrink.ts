/**
 * shrink: what decoding at the model's scale would change. libvips can shrink a JPEG (by 1/2, 1/4, 1/8, in
 * the DCT domain) or a WebP while loading it, then resize the rest of the way (sharp's `resize`, Lanczos),
 * instead of decoding every pixel and resizing with the unfiltered bicubic of CLIP preprocessing (what
 * prepareImage does, as transformers.js does). For the 1280x720 JPEG and the 200 folder images: CPU time of
 * each path and the cosine between the stand-in's image embeddings of the two. Target for adopting it:
 * cosine >= 0.999 on every image.
 */

import './no-telemetry.js'
import {readFile} from 'node:fs/promises'
import {basename} from 'node:path'

import sharp from 'sharp'

import {DEFAULT_LIMITS} from '../src/lib/config/settings.js'
import {prepareFrames, prepareImage} from '../src/lib/image/prepare.js'
import {openClip} from '../src/lib/signals/clip/model.js'
import {loadManifest} from '../src/lib/model/manifest.js'
import type {RgbImage} from '../src/lib/types.js'
import {cosine} from '../src/lib/signals/clip/zero-shot.js'
import {ensureImages, folderFiles, HD_JPEG, header, median, ms, requireStandin, saveResults, STANDIN_DIR, table, time, verdict} from './lib.js'

const TARGET = 0.999
const ROUNDS = 15

header('shrink', 'decoding at the model scale (libvips shrink-on-load) vs every pixel: time and embedding agreement')
requireStandin()
await ensureImages()
const manifest = await loadManifest(STANDIN_DIR)
const clip = await openClip(STANDIN_DIR, manifest)
const opts = {limits: DEFAULT_LIMITS, preprocess: manifest.preprocess, trimBorders: true}
const need = Math.max(manifest.preprocess.resize, manifest.preprocess.crop)

/** Decoded with the shorter side at `side` pixels (shrink-on-load, then Lanczos), then trimmed and preprocessed. */
async function atScale(data: Buffer, side: number): Promise<Float32Array[]> {
  const image = sharp(data, {autoOrient: true})
  const {autoOrient} = await image.metadata()
  const sized = Math.min(autoOrient.width, autoOrient.height) > side ? image.resize(autoOrient.width <= autoOrient.height ? {width: side} : {height: side}) : image
  const {data: pixels, info} = await sized.flatten({background: '#fff'}).toColourspace('srgb').raw().toBuffer({resolveWithObject: true})
  const frame: RgbImage = {data: pixels, width: info.width, height: info.height}
  return (await prepareFrames([frame], opts)).tensors
}

const variants: Record<string, (d: Buffer) => Promise<Float32Array[]>> = {
  [`shorter side ${need} (libvips only)`]: (d) => atScale(d, need),
  [`shorter side ${2 * need}, then bicubic`]: (d) => atScale(d, 2 * need),
}
const embed = async (tensors: Float32Array[]) => (await clip.embedImages(tensors[0], 1))[0]

const files = [HD_JPEG, ...(await folderFiles())].filter((f) => !f.endsWith('.png'))
const cosines: Record<string, {name: string; cos: number}[]> = Object.fromEntries(Object.keys(variants).map((k) => [k, []]))
for (const file of files) {
  const data = await readFile(file)
  const today = await embed((await prepareImage(data, opts)).tensors)
  for (const [name, fn] of Object.entries(variants)) cosines[name].push({name: basename(file), cos: cosine(today, await embed(await fn(data)))})
}
await clip.close()

const hd = await readFile(HD_JPEG)
const times = async (fn: () => Promise<unknown>) => {
  const t: number[] = []
  for (let i = 0; i < ROUNDS; i++) t.push(await time(fn))
  return median(t)
}
const todayMs = await times(() => prepareImage(hd, opts))
const rows: (string | number)[][] = [['1280x720 JPEG + 180 JPEG/WebP of the folder', 'decode + trim + preprocess', 'worst cosine', 'median cosine']]
rows.push(['every pixel, bicubic (prepareImage)', ms(todayMs), '1', '1'])
const figures: Record<string, unknown> = {todayMs}
for (const [name, fn] of Object.entries(variants)) {
  const c = cosines[name].map((r) => r.cos)
  const t = await times(() => fn(hd))
  figures[name] = {ms: t, worst: Math.min(...c), median: median(c)}
  rows.push([name, ms(t), Math.min(...c).toFixed(5), median(c).toFixed(5)])
}
table(rows)
process.stdout.write('\n')
const best = Object.values(cosines).map((c) => c.reduce((a, b) => (b.cos < a.cos ? b : a))).reduce((a, b) => (b.cos > a.cos ? b : a))
const v = verdict('shrink', `${files.length} JPEG/WebP images, best variant's worst image ${best.name}`, 'cosine', best.cos, 'min', TARGET, '', 5)
await saveResults('shrink', [v], figures)
