/**
 * int8: the stand-in's bare image encoder in fp32, in int8 with its file's uint8 weights (`unsigned`) and in int8
 * with the signed copy `mod` derives where the CPU's u8s8 kernel is exact (`signed`, model/int8-weights.ts), on
 * the ready tensor of the 1280x720 JPEG, taking turns in one process (lib.ts interleave). Prints what `auto`
 * picks on this CPU, the speed of each int8 side against fp32 as paired ratios, and their embeddings' cosine with
 * fp32's on the JPEG and 40 images of the folder set. Targets: bare int8 (signed) >= 2.4 x bare fp32 where auto
 * picks signed (a VNNI CPU); cosine with fp32 >= 0.999 for both int8 sides.
 *
 * --reduce-range adds two sides with 7-bit weights, which AVX2's u8s8 kernel multiplies without saturating: the
 * weights halved from the int8 file (what `mod` could derive from the one file a preset downloads,
 * reduce-range.ts) and, the best such weights can do, quantised from the fp32 file with 63 as the largest weight.
 * Printed for the record, with no target: they are not used (bench/README.md, "Reduce-range weights on AVX2").
 */
import './no-telemetry.js'

import {readFile, writeFile} from 'node:fs/promises'
import {join} from 'node:path'

import {DEFAULT_LIMITS} from '../src/lib/config/settings.js'
import {prepareImage} from '../src/lib/image/prepare.js'
import {chooseInt8Weights, signedModelFile, type Int8Choice} from '../src/lib/model/int8-weights.js'
import {loadManifest} from '../src/lib/model/manifest.js'
import {defaultThreads} from '../src/lib/model/threads.js'
import {openClip} from '../src/lib/signals/clip/model.js'
import {quantizeDynamicInt8} from '../scripts/onnx/quantize.js'
import {signedInt8Weights} from '../src/lib/model/int8-signed.js'
import {halvedWeights} from './reduce-range.js'
import {
  bareEncoder,
  CACHE_DIR,
  ensureImages,
  folderFiles,
  HD_JPEG,
  header,
  interleave,
  load,
  median,
  ms,
  pairedRatio,
  requireStandin,
  saveResults,
  STANDIN_DIR,
  table,
  verdict,
  VISION_FILES,
} from './lib.js'

const WARMUP = 5
/** Turns of 5 calls per side, 4 kept each: 48 measured calls per side. */
const TURNS = 12
const COSINE_IMAGES = 40
const SPEED_TARGET = 2.4
const COSINE_TARGET = 0.999

header('int8', 'bare image encoder: fp32 vs int8 with uint8 weights vs int8 with the derived int8 weights')
requireStandin()
await ensureImages()
const threads = await defaultThreads()
const auto = await chooseInt8Weights('auto')
const started = performance.now()
await signedModelFile(join(STANDIN_DIR, VISION_FILES.int8), CACHE_DIR)
process.stdout.write(`auto picks ${auto} weights on this CPU; the signed copy was ready in ${ms(performance.now() - started)} (made now, or found in ${CACHE_DIR})\n\n`)

const REDUCE_RANGE = process.argv.includes('--reduce-range')
const REDUCED = {halved: '7-bit weights halved from the int8 file', quantized: '7-bit weights quantised from fp32'} as const
type Reduced = keyof typeof REDUCED
const reducedFiles: Partial<Record<Reduced, string>> = {}
if (REDUCE_RANGE) {
  reducedFiles.halved = join(CACHE_DIR, 'reduce-range-halved.onnx')
  await writeFile(reducedFiles.halved, halvedWeights(await readFile(join(STANDIN_DIR, VISION_FILES.int8))).model)
  reducedFiles.quantized = join(CACHE_DIR, 'reduce-range-quantized.onnx')
  await writeFile(reducedFiles.quantized, signedInt8Weights(quantizeDynamicInt8(await readFile(join(STANDIN_DIR, VISION_FILES.fp32)), {weightMax: 63}).model).model)
}
const sides = {
  fp32: await bareEncoder('fp32'),
  unsigned: await bareEncoder('int8', {int8Weights: 'unsigned'}),
  signed: await bareEncoder('int8', {int8Weights: 'signed'}),
}
const reducedSides = Object.fromEntries(await Promise.all(Object.entries(reducedFiles).map(async ([k, file]) => [k, await bareEncoder('int8', {file})]))) as Partial<Record<Reduced, Awaited<ReturnType<typeof bareEncoder>>>>
const allSides = {...sides, ...reducedSides}
for (const side of Object.values(allSides)) for (let i = 0; i < WARMUP; i++) await side.run()
const loadBefore = load()
const t = await interleave(Object.fromEntries(Object.entries(allSides).map(([k, side]) => [k, () => side.run()])), TURNS)
const loadAfter = load()

// Embeddings of the JPEG and the folder set through the CLIP runner, as the engine opens each side.
const manifest = await loadManifest(STANDIN_DIR)
const tensors: Float32Array[] = []
for (const file of [HD_JPEG, ...(await folderFiles()).slice(0, COSINE_IMAGES)]) {
  tensors.push(...(await prepareImage(await readFile(file), {limits: DEFAULT_LIMITS, preprocess: manifest.preprocess, trimBorders: true})).tensors)
}
async function embeddings(int8Weights?: Int8Choice): Promise<Float32Array[]> {
  const precision = int8Weights ? 'int8' : 'fp32'
  const clip = await openClip(STANDIN_DIR, await loadManifest(STANDIN_DIR, undefined, precision), {threads, cacheDir: CACHE_DIR, int8Weights})
  const out: Float32Array[] = []
  for (const tensor of tensors) out.push(...(await clip.embedImages(tensor, 1)))
  await clip.close()
  return out
}
const dot = (a: Float32Array, b: Float32Array) => a.reduce((sum, x, i) => sum + x * b[i], 0)
const reference = await embeddings()
const cosines = {unsigned: (await embeddings('unsigned')).map((e, i) => dot(e, reference[i])), signed: (await embeddings('signed')).map((e, i) => dot(e, reference[i]))}
// The reduced sides' embeddings straight from their sessions, made unit length as the CLIP runner makes them.
const unit = (e: Float32Array) => {
  const norm = Math.sqrt(dot(e, e))
  return e.map((x) => x / norm)
}
const reducedCosines: Partial<Record<Reduced, number[]>> = {}
for (const [k, side] of Object.entries(reducedSides) as [Reduced, NonNullable<(typeof reducedSides)[Reduced]>][]) {
  reducedCosines[k] = []
  for (const [i, tensor] of tensors.entries()) reducedCosines[k].push(dot(unit(await side.embed(tensor)), reference[i]))
}
for (const side of Object.values(allSides)) await side.release()

const speed = {unsigned: pairedRatio(t.fp32, t.unsigned), signed: pairedRatio(t.fp32, t.signed)}
table([
  ['bare image encoder', 'median', 'speed vs fp32 (paired)', 'cosine with fp32: worst / median'],
  ['fp32', ms(median(t.fp32)), '1.00x', ''],
  ...(['unsigned', 'signed'] as const).map((k) => [`int8, ${k} weights`, ms(median(t[k])), `${speed[k].toFixed(2)}x`, `${Math.min(...cosines[k]).toFixed(5)} / ${median(cosines[k]).toFixed(5)}`]),
  ...(Object.entries(reducedCosines) as [Reduced, number[]][]).map(([k, c]) => [`int8, ${REDUCED[k]}`, ms(median(t[k])), `${pairedRatio(t.fp32, t[k]).toFixed(2)}x`, `${Math.min(...c).toFixed(5)} / ${median(c).toFixed(5)}`]),
])
process.stdout.write(`signed against unsigned: ${pairedRatio(t.unsigned, t.signed).toFixed(2)}x; ${tensors.length} images for the cosines; ${threads} threads; load ${loadBefore} before, ${loadAfter} after\n\n`)

const verdicts = [
  verdict(
    'int8',
    `bare fp32 ${ms(median(t.fp32))}, bare int8 signed ${ms(median(t.signed))}, load ${loadBefore}${auto === 'signed' ? '' : ` (auto picks unsigned here: ${speed.unsigned.toFixed(2)}x; the target is for VNNI CPUs)`}`,
    'bare int8 (signed) speed vs fp32',
    speed.signed,
    'min',
    SPEED_TARGET,
    'x',
    2,
  ),
  ...(['unsigned', 'signed'] as const).map((k) => verdict('int8', `${k} weights, ${tensors.length} images`, 'worst cosine with fp32', Math.min(...cosines[k]), 'min', COSINE_TARGET, '', 5)),
]
await saveResults('int8', verdicts, {threads, auto, load: [loadBefore, loadAfter], medians: {fp32: median(t.fp32), unsigned: median(t.unsigned), signed: median(t.signed)}, speed, cosines: {unsigned: Math.min(...cosines.unsigned), signed: Math.min(...cosines.signed)}})
