/**
 * nsfw: the embedded NSFW specialist against nsfwjs itself, on the photos of test/fixtures/photos, in one
 * run. Per image, from the JPEG bytes: mod (decode with sharp, nsfwPreprocess, onnxruntime) against nsfwjs's
 * classify() on @tensorflow/tfjs's pure-JavaScript CPU backend and on @tensorflow/tfjs-backend-wasm (both fed
 * a tensor3d of the same sharp-decoded pixels, the decode included in their time too), mod and each of them
 * taking turns (lib.ts interleave) so that load changes on the machine hit both. Then what the specialist
 * adds per image on top of the `fast` preset (the stand-in ViT-B/32 through the engine): its preprocessing and
 * inference of an already decoded and trimmed frame (the small model's one view), and the whole cascade as the
 * engine runs it (the 448-pixel square, the small model, and the large one's three views where it lets the frame
 * through), taking turns with the engine (lib.ts interleave). Targets: >= 50x faster than tfjs pure JS, >= 3x faster than tfjs-wasm,
 * <= 15% extra on the fast preset.
 */

import './no-telemetry.js'

import {createRequire} from 'node:module'

import * as tf from '@tensorflow/tfjs'
import '@tensorflow/tfjs-backend-wasm'

import {DEFAULT_LIMITS} from '../src/lib/config/settings.js'
import {decodeImage} from '../src/lib/image/decode.js'
import {nsfwPreprocess} from '../src/lib/signals/nsfw/preprocess.js'
import {trimBorders} from '../src/lib/image/trim.js'
import {openNsfw} from '../src/lib/signals/nsfw/model.js'
import {classifyViews, openNsfwRunner} from '../src/lib/signals/nsfw/runner.js'
import {fixturePhotos} from '../test/helpers/nsfw-images.js'
import {benchEngine, header, interleave, load, median, ms, pairedRatio, requireStandin, saveResults, table, verdict} from './lib.js'

interface Nsfwjs {
  classify(img: tf.Tensor3D, topk?: number): Promise<{className: string; probability: number}[]>
  dispose(): void
}

/** nsfwjs on pure-JS tfjs takes seconds per image: a few photos are enough for its median. */
const TFJS_CPU_IMAGES = 4
/** Turns of 5 calls per side (4 kept): 40 photos per side. */
const WASM_TURNS = 10
const TURNS = 8

header('nsfw', 'embedded NSFW specialist (decode + preprocess + onnxruntime) vs nsfwjs on tfjs (CPU, wasm); extra over the fast preset')
requireStandin()
const photos = await fixturePhotos()
const files = photos.map((p) => p.file as Buffer)

const require = createRequire(import.meta.url)
const nsfwjs = require('nsfwjs') as {load(name: string): Promise<Nsfwjs>}

const model = await openNsfw()
async function modOnce(file: Buffer): Promise<void> {
  const [frame] = await decodeImage(file, DEFAULT_LIMITS)
  await model.classify(nsfwPreprocess(frame), 1)
}

async function nsfwjsOnce(reference: Nsfwjs, file: Buffer): Promise<void> {
  const [frame] = await decodeImage(file, DEFAULT_LIMITS)
  const pixels = tf.tensor3d(new Int32Array(frame.data), [frame.height, frame.width, 3], 'int32')
  await reference.classify(pixels)
  pixels.dispose()
}

/** A side for interleave(): each call classifies the next photo, cycling through them. */
function cycling(run: (file: Buffer) => Promise<void>, images: Buffer[]): () => Promise<void> {
  let next = 0
  return () => run(images[next++ % images.length])
}

// The pure-JS backend takes seconds per image: a few photos, each once after a warm-up, against mod on the same.
await tf.setBackend('cpu')
const cpuModel = await nsfwjs.load('MobileNetV2')
const cpuFiles = files.slice(0, TFJS_CPU_IMAGES)
const cpu = await interleave({mod: cycling(modOnce, cpuFiles), tfjs: cycling((f) => nsfwjsOnce(cpuModel, f), cpuFiles)}, 2, TFJS_CPU_IMAGES / 2 + 1)
cpuModel.dispose()
const cpuTimes = cpu.tfjs

// mod and nsfwjs on wasm take turns over all the photos, so that load changes on the machine hit both.
await tf.setBackend('wasm')
const wasmModel = await nsfwjs.load('MobileNetV2')
const wasm = await interleave({mod: cycling(modOnce, files), wasm: cycling((f) => nsfwjsOnce(wasmModel, f), files)}, WASM_TURNS)
wasmModel.dispose()
const wasmTimes = wasm.wasm
const modTimes = wasm.mod

// The extra over the fast preset: the frame is decoded and trimmed once for both models in a pipeline.
const hd = files[photos.findIndex((p) => p.name === 'astronaut.jpg')]
const trimmed = trimBorders((await decodeImage(hd, DEFAULT_LIMITS))[0])
const engine = benchEngine()
await engine.load()
const single = new Float32Array(224 * 224 * 3)
const cascade = await openNsfwRunner()
for (let i = 0; i < 3; i++) await engine.moderateImage(hd, 'astronaut.jpg')
const turns = await interleave(
  {
    engine: () => engine.moderateImage(hd, 'astronaut.jpg'),
    specialist: () => model.classify(nsfwPreprocess(trimmed, {out: single}), 1),
    cascade: async () => classifyViews(cascade, [await cascade.views(trimmed)]),
  },
  TURNS,
)
await engine.close()
await model.close()
await cascade.close()

const modMedian = median(modTimes)
table([
  ['per image (JPEG bytes → probabilities)', 'median', 'min', 'images'],
  ['mod specialist (sharp + onnxruntime)', ms(modMedian), ms(Math.min(...modTimes)), modTimes.length],
  ['nsfwjs, tfjs pure JS (cpu)', ms(median(cpuTimes)), ms(Math.min(...cpuTimes)), cpuTimes.length],
  ['nsfwjs, tfjs-backend-wasm', ms(median(wasmTimes)), ms(Math.min(...wasmTimes)), wasmTimes.length],
])
process.stdout.write('\n')
table([
  ['astronaut.jpg 512x512, warm', 'median', 'min', 'runs'],
  ['fast preset: engine.moderateImage', ms(median(turns.engine)), ms(Math.min(...turns.engine)), turns.engine.length],
  ['specialist extra: preprocess + infer, 1 view', ms(median(turns.specialist)), ms(Math.min(...turns.specialist)), turns.specialist.length],
  ['specialist extra: the cascade as the engine runs it', ms(median(turns.cascade)), ms(Math.min(...turns.cascade)), turns.cascade.length],
])
process.stdout.write(`\nload average now ${load()}\n`)

const verdicts = [
  verdict('nsfw', `mod ${ms(median(cpu.mod))}, nsfwjs on tfjs ${ms(median(cpuTimes))}`, 'speed-up vs tfjs pure JS', median(cpuTimes) / median(cpu.mod), 'min', 50, 'x', 1),
  verdict('nsfw', `mod ${ms(modMedian)}, nsfwjs on tfjs-wasm ${ms(median(wasmTimes))}`, 'speed-up vs tfjs-wasm (paired)', pairedRatio(wasmTimes, modTimes), 'min', 3, 'x', 1),
  verdict('nsfw', `specialist ${ms(median(turns.specialist))} on top of the fast preset's ${ms(median(turns.engine))}`, 'extra (paired)', pairedRatio(turns.specialist, turns.engine), 'max', 0.15),
]
process.stdout.write(
  `nsfw: ratios of minima: tfjs pure JS ${(Math.min(...cpuTimes) / Math.min(...cpu.mod)).toFixed(1)}x, tfjs-wasm ${(Math.min(...wasmTimes) / Math.min(...modTimes)).toFixed(1)}x, ` +
    `extra ${(Math.min(...turns.specialist) / Math.min(...turns.engine)).toFixed(3)}; the cascade, extra (paired) ${pairedRatio(turns.cascade, turns.engine).toFixed(3)}\n`,
)
await saveResults('nsfw', verdicts, {
  modMs: modMedian,
  tfjsCpuMs: median(cpuTimes),
  tfjsWasmMs: median(wasmTimes),
  engineMs: median(turns.engine),
  specialistMs: median(turns.specialist),
  cascadeMs: median(turns.cascade),
  extraWithCascade: pairedRatio(turns.cascade, turns.engine),
})
