/**
 * latency: a warm single 1280x720 JPEG through the engine (decode, trim, preprocess, infer, score) against a
 * bare onnxruntime run of the same image encoder, with the same session options, on a ready tensor. The two
 * take turns (lib.ts interleave), so machine noise hits both; the verdict is on the median of the per-turn
 * ratios. Target: engine <= 1.10 x bare. Then the engine's time split by step (the same library calls made one
 * by one), and the reduced-precision encoders (MOD_PRECISION int8 / fp16) next to fp32.
 */
import './no-telemetry.js'

import {readFile} from 'node:fs/promises'

import {DEFAULT_LIMITS} from '../src/lib/config/settings.js'
import {decodeImage} from '../src/lib/image/decode.js'
import {preprocess} from '../src/lib/image/preprocess.js'
import {trimBorders} from '../src/lib/image/trim.js'
import {openClip} from '../src/lib/signals/clip/model.js'
import {loadManifest} from '../src/lib/model/manifest.js'
import {embedPrompts} from '../src/lib/model/prompt-cache.js'
import {defaultThreads} from '../src/lib/model/threads.js'
import {buildPolicy} from '../src/lib/policy/load.js'
import {policyPrompts, zeroShotScores} from '../src/lib/signals/clip/zero-shot.js'
import {
  bareEncoder,
  benchEngine,
  CACHE_DIR,
  ensureImages,
  HD_JPEG,
  header,
  interleave,
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
const TARGET = 1.1

header('latency', 'warm single 1280x720 JPEG, engine end to end vs bare onnxruntime on a ready tensor')
requireStandin()
await ensureImages()
const jpeg = await readFile(HD_JPEG)
const threads = await defaultThreads()
const manifest = await loadManifest(STANDIN_DIR)

const engine = benchEngine()
await engine.load()
const bare = await bareEncoder()

for (let i = 0; i < WARMUP; i++) {
  await engine.moderateImage(jpeg, 'hd.jpg')
  await bare.run()
}
const {engine: engineTimes, bare: bareTimes} = await interleave(
  {engine: () => engine.moderateImage(jpeg, 'hd.jpg'), bare: () => bare.run()},
  TURNS,
)
await engine.close()
await bare.release()

table([
  ['fp32, 1 image', 'median', 'p90', 'min', 'runs'],
  ['engine (jpeg → result)', ms(median(engineTimes)), ms(percentile(engineTimes, 90)), ms(Math.min(...engineTimes)), engineTimes.length],
  ['bare session.run', ms(median(bareTimes)), ms(percentile(bareTimes, 90)), ms(Math.min(...bareTimes)), bareTimes.length],
])
process.stdout.write('\n')

// Where the engine's time goes: the same library calls as the engine makes, one at a time.
const clip = await openClip(STANDIN_DIR, manifest, {threads})
const policy = buildPolicy()
const prompts = await embedPrompts(policyPrompts(policy), {cacheDir: CACHE_DIR, modelId: manifest.id, embed: (t) => clip.embedTexts(t)})
await clip.releaseText()
const steps: Record<string, number[]> = {decode: [], trim: [], preprocess: [], infer: [], score: []}
for (let i = 0; i < STEP_ROUNDS + WARMUP; i++) {
  const t0 = performance.now()
  const [img] = await decodeImage(jpeg, DEFAULT_LIMITS)
  const t1 = performance.now()
  const trimmed = trimBorders(img)
  const t2 = performance.now()
  const tensor = await preprocess(trimmed, manifest.preprocess)
  const t3 = performance.now()
  const [embedding] = await clip.embedImages(tensor, 1)
  const t4 = performance.now()
  zeroShotScores(embedding, policy, prompts)
  const t5 = performance.now()
  if (i < WARMUP) continue
  steps.decode.push(t1 - t0)
  steps.trim.push(t2 - t1)
  steps.preprocess.push(t3 - t2)
  steps.infer.push(t4 - t3)
  steps.score.push(t5 - t4)
}
await clip.close()
table([['step', 'median', 'p90'], ...Object.entries(steps).map(([name, t]) => [name, ms(median(t)), ms(percentile(t, 90))])])
process.stdout.write('\n')

// Reduced precision (MOD_PRECISION): each variant's engine and bare run, taking turns with the fp32 engine.
const variantSides: Record<string, () => Promise<unknown>> = {}
const closers: (() => Promise<void>)[] = []
const fp32Engine = benchEngine()
await fp32Engine.load()
closers.push(() => fp32Engine.close())
variantSides.fp32 = () => fp32Engine.moderateImage(jpeg, 'hd.jpg')
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
const variantFigures: Record<string, {engine: number; bare?: number}> = {}
const variantRows: (string | number)[][] = [['precision', 'engine median', 'bare median', 'engine / bare', 'engine speed vs fp32']]
variantRows.push(['fp32', ms(median(vt.fp32)), '(above)', '', '1.00x'])
for (const variant of offered) {
  const e = median(vt[`${variant} engine`])
  const b = median(vt[`${variant} bare`])
  variantFigures[variant] = {engine: e, bare: b}
  variantRows.push([variant, ms(e), ms(b), (e / b).toFixed(2), `${(median(vt.fp32) / e).toFixed(2)}x`])
}
variantFigures.fp32 = {engine: median(vt.fp32)}
if (offered.length === 0) process.stdout.write('no int8/fp16 variants in the stand-in (run scripts/standin.ts --variants)\n')
else table(variantRows)
process.stdout.write('\n')

const ratio = pairedRatio(engineTimes, bareTimes)
const v = verdict(
  'latency',
  `engine median ${ms(median(engineTimes))}, bare median ${ms(median(bareTimes))} (ratio of medians ${(median(engineTimes) / median(bareTimes)).toFixed(2)}, of minima ${(Math.min(...engineTimes) / Math.min(...bareTimes)).toFixed(2)})`,
  'paired ratio',
  ratio,
  'max',
  TARGET,
)
await saveResults('latency', [v], {
  threads,
  engine: {median: median(engineTimes), p90: percentile(engineTimes, 90)},
  bare: {median: median(bareTimes), p90: percentile(bareTimes, 90)},
  steps: Object.fromEntries(Object.entries(steps).map(([k, t]) => [k, median(t)])),
  variants: variantFigures,
})
