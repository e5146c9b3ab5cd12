/**
 * `npx tsx bench/nsfw-models.ts DIR [DIR …]`: the two embedded NSFW models (nsfwjs's MobileNetV2 at 224 px and
 * InceptionV3 at 299 px) on a folder of photos, each as nsfwjs runs it: one view, the whole decoded image
 * resized to the model's side (nsfwPreprocess), no border trim, no mirror, no rule. Prints per folder and model
 * the share of images with Porn + Hentai >= 0.5 and >= 0.85 and with Sexy >= 0.5 and >= 0.9, and the
 * inference time per image (onnxruntime, 2 threads, batch 1; the two models take turns on each image, so load
 * changes on the machine hit both, and their ratio is from the same run). Not part of `npm run bench`: it needs
 * photos this repository does not ship.
 */
import './no-telemetry.js'

import {readdir, readFile} from 'node:fs/promises'
import {basename, join} from 'node:path'

import {DEFAULT_LIMITS} from '../src/lib/config/settings.js'
import {decodeImage} from '../src/lib/image/decode.js'
import {nsfwPreprocess} from '../src/lib/signals/nsfw/preprocess.js'
import {openNsfw, type NsfwModel} from '../src/lib/signals/nsfw/model.js'
import {NSFW_CLASSES, NSFW_MODELS, type NsfwModelName} from '../src/lib/signals/nsfw/manifest.js'
import {header, median, ms, table} from './lib.js'

const IMAGE = /\.(jpe?g|png|webp|gif|tiff?|avif)$/i
const THREADS = 2
/** The shares printed: [label, test on the five probabilities]. */
const SHARES: [string, (p: Float32Array) => boolean][] = [
  ['P+H>=0.5', (p) => p[HENTAI] + p[PORN] >= 0.5],
  ['P+H>=0.85', (p) => p[HENTAI] + p[PORN] >= 0.85],
  ['Sexy>=0.5', (p) => p[SEXY] >= 0.5],
  ['Sexy>=0.9', (p) => p[SEXY] >= 0.9],
]
const HENTAI = NSFW_CLASSES.indexOf('Hentai')
const PORN = NSFW_CLASSES.indexOf('Porn')
const SEXY = NSFW_CLASSES.indexOf('Sexy')

const dirs = process.argv.slice(2)
if (dirs.length === 0) {
  process.stderr.write('usage: npx tsx bench/nsfw-models.ts DIR [DIR …] (folders of photos)\n')
  process.exit(2)
}

header('nsfw-models', `nsfwjs's MobileNetV2 and InceptionV3 converted to ONNX, one view each, ${THREADS} threads, batch 1`)
const names = Object.keys(NSFW_MODELS) as NsfwModelName[]
const models = new Map<NsfwModelName, NsfwModel>()
for (const name of names) models.set(name, await openNsfw({model: name, threads: THREADS}))

interface Tally {
  hits: number[]
  times: number[]
}

for (const dir of dirs) {
  const files = (await readdir(dir)).filter((f) => IMAGE.test(f)).sort()
  const tallies = new Map<NsfwModelName, Tally>(names.map((n) => [n, {hits: SHARES.map(() => 0), times: []}]))
  let images = 0
  for (const file of files) {
    let frame
    try {
      ;[frame] = await decodeImage(await readFile(join(dir, file)), DEFAULT_LIMITS)
    } catch (e) {
      process.stderr.write(`skipped ${file}: ${(e as Error).message}\n`)
      continue
    }
    images++
    for (const name of names) {
      const model = models.get(name) as NsfwModel
      const view = nsfwPreprocess(frame, {side: model.side})
      const start = performance.now()
      const [p] = await model.classify(view, 1)
      const tally = tallies.get(name) as Tally
      tally.times.push(performance.now() - start)
      SHARES.forEach(([, hit], k) => (tally.hits[k] += hit(p) ? 1 : 0))
    }
  }
  process.stdout.write(`\n${basename(dir)}: ${images} images\n`)
  const percent = (n: number) => `${((100 * n) / Math.max(1, images)).toFixed(1)}%`
  const medians = names.map((n) => median((tallies.get(n) as Tally).times))
  table([
    ['model', ...SHARES.map(([label]) => label), 'ms/image (median)', 'ms/image (mean)'],
    ...names.map((n, i) => {
      const {hits, times} = tallies.get(n) as Tally
      return [n, ...hits.map(percent), ms(medians[i]), ms(times.reduce((a, b) => a + b, 0) / Math.max(1, times.length))]
    }),
  ])
  process.stdout.write(`${names[1]} / ${names[0]} time per image (medians, same run): ${(medians[1] / medians[0]).toFixed(1)}x\n`)
}
await Promise.all([...models.values()].map((m) => m.close()))
