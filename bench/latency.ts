/**
 * latency: a warm single 1280x720 JPEG through the engine (decode, trim, preprocess, infer, score) against bare
 * onnxruntime runs on ready tensors, with the same session options, in the same process. The headline is the
 * default configuration, CLIP and the NSFW specialist, against a bare pair (CLIP's image encoder, then the
 * specialist on the image's first view); the second line is CLIP alone against CLIP's encoder alone. The sides
 * take turns (lib.ts interleave), so machine noise hits all of them; verdicts are on the median of the
 * per-turn ratios. Targets: default <= 1.12 x the bare pair; CLIP alone <= 1.10 x bare CLIP. A miss carries its
 * floor: the bare runs plus decoding and CLIP's resize, from the step record. Then a phone camera's 4032x3024
 * JPEG through the default engine, decoded reduced (shrink-on-load: decode.ts planDecode) and with every pixel
 * decoded (EngineOptions.everyPixel), against the bare pair (printed, no target).
 *
 * A fifth side, bare CLIP opened from the model file instead of the graph cache, shows what running on the
 * prepacked weights mapped from the cache file (shared between workers) costs against prepacked weights in the
 * process's own memory (printed, no target).
 *
 * Then the default path's time by step, from the engine's own step record (RunOptions.steps), and the
 * reduced-precision encoders (MOD_PRECISION int8 / fp16) next to fp32: the engine against the bare encoder of
 * the same precision (the int8 path's end-to-end ratio), speed, and the cosine between their
 * image embeddings and fp32's on the JPEG and on 40 images of the folder set.
 */
import './no-telemetry.js'

import {readFile} from 'node:fs/promises'

import {DEFAULT_LIMITS} from '../src/lib/config/settings.js'
import {prepareImage} from '../src/lib/image/prepare.js'
import {openClip} from '../src/lib/signals/clip/model.js'
import {loadManifest} from '../src/lib/model/manifest.js'
import {defaultThreads} from '../src/lib/model/threads.js'
import {orderedSteps, type StepTimes} from '../src/lib/pipeline/steps.js'
import {
  bareEncoder,
  barePair,
  benchEngine,
  CACHE_DIR,
  ensureImages,
  folderFiles,
  HD_JPEG,
  header,
  PHOTO_JPEG,
  interleave,
  load,
  pairedRatio,
  median,
  ms,
  percentile,
  requireStandin,
  saveResults,
  STANDIN_DIR,
  table,
  verdict,
} from './lib.js'

const WARMUP = 5
/** Turns of 5 calls per side, 4 kept each: 40 measured calls per side. */
const TURNS = 10
const STEP_ROUNDS = 20
/** Turns of 5 calls per side for the precision comparison (up to 5 sides). */
const VARIANT_TURNS = 4
/** Images of the folder set whose embeddings are compared across precisions. */
const COSINE_IMAGES = 40
const DEFAULT_TARGET = 1.12
const CLIP_TARGET = 1.1
/** Turns of the 4032x3024 JPEG (decoded reduced) against every pixel decoded. */
const PHOTO_TURNS = 4

header('latency', 'warm single 1280x720 JPEG, engine end to end vs bare onnxruntime on ready tensors; default (CLIP + NSFW specialist) first')
requireStandin()
await ensureImages()
const jpeg = await readFile(HD_JPEG)
const threads = await defaultThreads()
const manifest = await loadManifest(STANDIN_DIR)

const both = benchEngine('fp32', {nsfw: true})
const clipOnly = benchEngine()
await both.load()
await clipOnly.load()
const pair = await barePair()
const bare = await bareEncoder()
const unmapped = await bareEncoder('fp32', {fromFile: true})

for (let i = 0; i < WARMUP; i++) {
  await both.moderateImage(jpeg, 'hd.jpg')
  await clipOnly.moderateImage(jpeg, 'hd.jpg')
  await pair.run()
  await bare.run()
  await unmapped.run()
}
const t = await interleave(
  {
    default: () => both.moderateImage(jpeg, 'hd.jpg'),
    pair: () => pair.run(),
    clip: () => clipOnly.moderateImage(jpeg, 'hd.jpg'),
    bare: () => bare.run(),
    unmapped: () => unmapped.run(),
  },
  TURNS,
)
const mainLoad = load()

// A phone camera's 4032x3024 JPEG: decoded reduced (shrink-on-load to a shorter side of 448) against every pixel.
const photo = await readFile(PHOTO_JPEG)
const everyPixel = benchEngine('fp32', {nsfw: true, everyPixel: true})
await everyPixel.load()
for (let i = 0; i < 2; i++) {
  await both.moderateImage(photo, 'photo.jpg')
  await everyPixel.moderateImage(photo, 'photo.jpg')
}
const pt = await interleave(
  {
    reduced: () => both.moderateImage(photo, 'photo.jpg'),
    whole: () => everyPixel.moderateImage(photo, 'photo.jpg'),
    pair: () => pair.run(),
  },
  PHOTO_TURNS,
)
await everyPixel.close()

// Where the default path's time goes: the engine's step record of single calls.
const records: StepTimes[] = []
const totals: number[] = []
for (let i = 0; i < STEP_ROUNDS + WARMUP; i++) {
  const record: StepTimes = {}
  const started = performance.now()
  await both.moderateImage(jpeg, 'hd.jpg', {steps: record})
  if (i < WARMUP) continue
  totals.push(performance.now() - started)
  records.push(record)
}
await both.close()
await clipOnly.close()
await pair.release()
await bare.release()
await unmapped.release()

table([
  ['1 image, fp32', 'median', 'p90', 'min', 'runs'],
  ['default engine (CLIP + specialist: jpeg → result)', ms(median(t.default)), ms(percentile(t.default, 90)), ms(Math.min(...t.default)), t.default.length],
  ['bare pair (CLIP encoder + specialist, ready tensors)', ms(median(t.pair)), ms(percentile(t.pair, 90)), ms(Math.min(...t.pair)), t.pair.length],
  ['engine, specialist off', ms(median(t.clip)), ms(percentile(t.clip, 90)), ms(Math.min(...t.clip)), t.clip.length],
  ['bare CLIP encoder', ms(median(t.bare)), ms(percentile(t.bare, 90)), ms(Math.min(...t.bare)), t.bare.length],
  ['bare CLIP encoder, weights in process memory', ms(median(t.unmapped)), ms(percentile(t.unmapped, 90)), ms(Math.min(...t.unmapped)), t.unmapped.length],
])
process.stdout.write(`weights mapped from the cache file (shared) / in process memory: ${pairedRatio(t.bare, t.unmapped).toFixed(3)} (paired)\n`)
process.stdout.write('\n')
table([
  ['1 image of 4032x3024, fp32', 'median', 'against the bare pair (paired)'],
  ['default engine, decoded reduced (shrink-on-load)', ms(median(pt.reduced)), `${pairedRatio(pt.reduced, pt.pair).toFixed(2)} x`],
  ['default engine, every pixel decoded', ms(median(pt.whole)), `${pairedRatio(pt.whole, pt.pair).toFixed(2)} x`],
  ['bare pair', ms(median(pt.pair)), ''],
])
process.stdout.write(`every pixel / reduced: ${pairedRatio(pt.whole, pt.reduced).toFixed(2)} x (paired)\n\n`)

const steps = orderedSteps(Object.assign({}, ...records) as StepTimes).map(([step]) => step)
const stepMedian = (step: string) => median(records.map((r) => r[step] ?? 0))
const stepMedians = Object.fromEntries(steps.map((s) => [s, stepMedian(s)]))
// Per call (a sum of medians is not the median of sums): the call's time less its steps.
const outside = median(records.map((r, i) => steps.reduce((a, s) => a - (r[s] ?? 0), totals[i])))
table([
  ['default path, by step (engine record)', 'median', 'p90', 'share of the call'],
  ...steps.map((s) => [s, ms(stepMedians[s]), ms(percentile(records.map((r) => r[s] ?? 0), 90)), `${((100 * stepMedians[s]) / median(totals)).toFixed(0)}%`]),
  ['(call, end to end)', ms(median(totals)), ms(percentile(totals, 90)), ''],
  ["(not in a step; below 0 by the overlap of CLIP's resize and the other signals' preprocessing)", ms(outside), '', ''],
])
process.stdout.write(`the specialist's preprocessing: ${ms(stepMedians.nsfw_preprocess ?? 0)} in JavaScript on the event loop, while libvips resizes for CLIP\n\n`)

// Reduced precision (MOD_PRECISION): each variant's engine and bare run, taking turns with the fp32 engine.
const variantSides: Record<string, () => Promise<unknown>> = {}
const closers: (() => Promise<void>)[] = []
const fp32Engine = benchEngine()
await fp32Engine.load()
closers.push(() => fp32Engine.close())
variantSides.fp32 = () => fp32Engine.moderateImage(jpeg, 'hd.jpg')
const fp32Bare = await bareEncoder()
closers.push(() => fp32Bare.release())
variantSides['fp32 bare'] = () => fp32Bare.run()
const offered = (['int8', 'fp16'] as const).filter((v) => manifest.variants?.[v])
for (const variant of offered) {
  const e = benchEngine(variant)
  await e.load()
  const s = await bareEncoder(variant)
  closers.push(() => e.close(), () => s.release())
  variantSides[`${variant} engine`] = () => e.moderateImage(jpeg, 'hd.jpg')
  variantSides[`${variant} bare`] = () => s.run()
}
for (const side of Object.values(variantSides)) for (let i = 0; i < WARMUP; i++) await side()
const vt = await interleave(variantSides, VARIANT_TURNS)
for (const close of closers) await close()

// The embeddings of each precision against fp32's, on the same tensors.
const tensors: Float32Array[] = []
for (const file of [HD_JPEG, ...(await folderFiles()).slice(0, COSINE_IMAGES)]) {
  tensors.push(...(await prepareImage(await readFile(file), {limits: DEFAULT_LIMITS, preprocess: manifest.preprocess, trimBorders: true})).tensors)
}
async function embeddings(precision: 'fp32' | 'int8' | 'fp16'): Promise<Float32Array[]> {
  const clip = await openClip(STANDIN_DIR, await loadManifest(STANDIN_DIR, undefined, precision), {threads, cacheDir: CACHE_DIR})
  const out: Float32Array[] = []
  for (const tensor of tensors) out.push(...(await clip.embedImages(tensor, 1)))
  await clip.close()
  return out
}
const dot = (a: Float32Array, b: Float32Array) => a.reduce((sum, x, i) => sum + x * b[i], 0)
const reference = await embeddings('fp32')
const cosines: Record<string, {worst: number; median: number}> = {}
for (const variant of offered) {
  const got = await embeddings(variant)
  const c = got.map((e, i) => dot(e, reference[i]))
  cosines[variant] = {worst: Math.min(...c), median: median(c)}
}

const variantFigures: Record<string, {engine: number; bare: number; speed: number; bareSpeed: number; endToEnd: number}> = {}
const variantRows: (string | number)[][] = [['precision (CLIP alone)', 'engine median', 'bare median', 'engine / bare (paired)', 'engine speed vs fp32 (paired)', 'bare speed vs fp32 (paired)', 'cosine with fp32: worst / median']]
variantRows.push(['fp32', ms(median(vt.fp32)), ms(median(vt['fp32 bare'])), `${pairedRatio(vt.fp32, vt['fp32 bare']).toFixed(2)}x`, '1.00x', '1.00x', ''])
for (const variant of offered) {
  const e = vt[`${variant} engine`]
  const b = vt[`${variant} bare`]
  const speed = pairedRatio(vt.fp32, e)
  const bareSpeed = pairedRatio(vt['fp32 bare'], b)
  const endToEnd = pairedRatio(e, b)
  variantFigures[variant] = {engine: median(e), bare: median(b), speed, bareSpeed, endToEnd}
  variantRows.push([variant, ms(median(e)), ms(median(b)), `${endToEnd.toFixed(2)}x`, `${speed.toFixed(2)}x`, `${bareSpeed.toFixed(2)}x`, `${cosines[variant].worst.toFixed(5)} / ${cosines[variant].median.toFixed(5)}`])
}
if (offered.length === 0) process.stdout.write('no int8/fp16 variants in the stand-in (run scripts/standin.ts --variants)\n')
else table(variantRows)
process.stdout.write(`(${tensors.length} images for the cosines; random weights: on a real model the scores, not these cosines, are what counts; load ${load()})\n\n`)

// A 1280x720 JPEG is below reduced decoding's threshold (a shorter side of 1 344): it is decoded whole and resized by CLIP's
// bicubic (Pillow's, antialiased); the engine cannot cost less than those plus the bare pair.
const engineFloor = (median(t.pair) + stepMedian('decode') + stepMedian('clip_preprocess')) / median(t.pair)
const clipFloor = (median(t.bare) + stepMedian('decode') + stepMedian('clip_preprocess')) / median(t.bare)
const verdicts = [
  verdict(
    'latency',
    `default (CLIP + specialist) engine median ${ms(median(t.default))}, bare pair median ${ms(median(t.pair))} (ratio of medians ${(median(t.default) / median(t.pair)).toFixed(2)}, of minima ${(Math.min(...t.default) / Math.min(...t.pair)).toFixed(2)}), load ${mainLoad}`,
    'paired ratio',
    pairedRatio(t.default, t.pair),
    'max',
    DEFAULT_TARGET,
    '',
    3,
    `floor: decode ${ms(stepMedian('decode'))} (every pixel: below reduced decoding's 1 344) + CLIP's bicubic resize ${ms(stepMedian('clip_preprocess'))} ` +
      `over the bare pair's ${ms(median(t.pair))}: at best ${engineFloor.toFixed(2)} x. Tried: CLIP's crop inside its resize, JPEG/WebP turned in the ` +
      'decoding pipeline, a decode per signal in two pipelines at once (two decoders share the cores), libvips on one thread; a reduced decode ' +
      "would leave the specialist's 448-pixel view short of rows (720 at half scale is 360)",
  ),
  verdict(
    'latency',
    `specialist off, engine median ${ms(median(t.clip))}, bare CLIP median ${ms(median(t.bare))} (ratio of medians ${(median(t.clip) / median(t.bare)).toFixed(2)}, of minima ${(Math.min(...t.clip) / Math.min(...t.bare)).toFixed(2)})`,
    'paired ratio',
    pairedRatio(t.clip, t.bare),
    'max',
    CLIP_TARGET,
    '',
    3,
    `floor: decode ${ms(stepMedian('decode'))} + CLIP's bicubic resize ${ms(stepMedian('clip_preprocess'))} (the default path's record) ` +
      `over bare CLIP's ${ms(median(t.bare))}: at best ${clipFloor.toFixed(2)} x`,
  ),
]
await saveResults('latency', verdicts, {
  threads,
  load: mainLoad,
  default: {median: median(t.default), p90: percentile(t.default, 90)},
  pair: {median: median(t.pair), p90: percentile(t.pair, 90)},
  clipOnly: {median: median(t.clip), p90: percentile(t.clip, 90)},
  bare: {median: median(t.bare), p90: percentile(t.bare, 90)},
  mappedOverUnmapped: pairedRatio(t.bare, t.unmapped),
  steps: stepMedians,
  floor: engineFloor,
  clipFloor,
  variants: variantFigures,
  cosines,
  photo: {reduced: median(pt.reduced), whole: median(pt.whole), pair: median(pt.pair), reducedRatio: pairedRatio(pt.reduced, pt.pair), wholeRatio: pairedRatio(pt.whole, pt.pair), speedup: pairedRatio(pt.whole, pt.reduced)},
})
