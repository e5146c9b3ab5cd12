/**
 * int8: the stand-in's bare image encoder in fp32, in int8 with its file's uint8 weights (`unsigned`) and in int8
 * with the signed copy `mod` derives where the CPU's u8s8 kernel is exact (`signed`, model/int8-weights.ts), on
 * the ready tensor of the 1280x720 JPEG, taking turns in one process (lib.ts interleave). Prints what `auto`
 * picks on this CPU, the speed of each int8 side against fp32 as paired ratios, and their embeddings' cosine with
 * fp32's on the JPEG and 40 images of the folder set. Targets: bare int8 (signed) >= 2.4 x bare fp32 where auto
 * picks signed (a VNNI CPU); cosine with fp32 >= 0.999 for both int8 sides.
 */
import './no-telemetry.js'

import {readFile} from 'node:fs/promises'
import {join} from 'node:path'

import {DEFAULT_LIMITS} from '../src/lib/config/settings.js'
import {prepareImage} from '../src/lib/image/prepare.js'
import {chooseInt8Weights, signedModelFile, type Int8Choice} from '../src/lib/model/int8-weights.js'
import {loadManifest} from '../src/lib/model/manifest.js'
import {defaultThreads} from '../src/lib/model/threads.js'
import {openClip} from '../src/lib/signals/clip/model.js'
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

const sides = {
  fp32: await bareEncoder('fp32'),
  unsigned: await bareEncoder('int8', {int8Weights: 'unsigned'}),
  signed: await bareEncoder('int8', {int8Weights: 'signed'}),
}
for (const side of Object.values(sides)) for (let i = 0; i < WARMUP; i++) await side.run()
const loadBefore = load()
const t = await interleave({fp32: () => sides.fp32.run(), unsigned: () => sides.unsigned.run(), signed: () => sides.signed.run()}, TURNS)
const loadAfter = load()
for (const side of Object.values(sides)) await side.release()

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

const speed = {unsigned: pairedRatio(t.fp32, t.unsigned), signed: pairedRatio(t.fp32, t.signed)}
table([
  ['bare image encoder', 'median', 'speed vs fp32 (paired)', 'cosine with fp32: worst / median'],
  ['fp32', ms(median(t.fp32)), '1.00x', ''],
  ...(['unsigned', 'signed'] as const).map((k) => [`int8, ${k} weights`, ms(median(t[k])), `${speed[k].toFixed(2)}x`, `${Math.min(...cosines[k]).toFixed(5)} / ${median(cosines[k]).toFixed(5)}`]),
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
