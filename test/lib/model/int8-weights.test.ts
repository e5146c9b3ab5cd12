import {execFile, spawnSync} from 'node:child_process'
import {createHash} from 'node:crypto'
import {mkdtemp, readdir, readFile, rm, stat, utimes, writeFile} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'
import {promisify} from 'node:util'
import ort from 'onnxruntime-node'
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {attr, createGraph, DATA_TYPE, decodeModel, encodeModel, floatTensor, uint8Tensor, type Model, type Tensor} from '../../../scripts/onnx/graph.js'
import {seededWeights} from '../../../scripts/onnx/layers.js'
import {writeStandinModel} from '../../../scripts/standin.js'
import {engineFromConfig} from '../../../src/lib/compose.js'
import {loadConfig} from '../../../src/lib/config/load.js'
import {u8s8KernelExact} from '../../../src/lib/model/int8-kernel.js'
import {signedInt8Weights} from '../../../src/lib/model/int8-signed.js'
import {chooseInt8Weights, signedModelFile} from '../../../src/lib/model/int8-weights.js'
import {loadManifest} from '../../../src/lib/model/manifest.js'
import {cachePrefix, openSession} from '../../../src/lib/model/session.js'
import type {Int8Weights} from '../../../src/lib/model/manifest-types.js'
import {openClip} from '../../../src/lib/signals/clip/model.js'
import {TINY_TEXT, TINY_VISION} from '../../helpers/tiny-clip.js'
import {testUnless} from '../../helpers/skip.js'
import {nodeArgs} from '../../helpers/ts-script.js'

const root = await mkdtemp(join(tmpdir(), 'mod-int8-weights-'))
const modelDir = join(root, 'model')
await writeStandinModel(modelDir, {variants: true, sizes: {vision: TINY_VISION, text: TINY_TEXT}})
const int8Manifest = await loadManifest(modelDir, undefined, 'int8')
const int8File = join(modelDir, int8Manifest.files.find((f) => f.role === 'image_encoder')?.path ?? '')
const IMAGES = 8
const SIZE = TINY_VISION.imageSize
const pixels = seededWeights(5).normal(IMAGES * 3 * SIZE * SIZE, 1)
let caches = 0
const freshCache = () => join(root, `cache-${++caches}`)

async function embed(int8Weights?: Int8Weights, cacheDir = freshCache()): Promise<Float32Array[]> {
  const manifest = await loadManifest(modelDir, undefined, int8Weights ? 'int8' : 'fp32')
  const clip = await openClip(modelDir, manifest, {threads: 1, cacheDir, int8Weights})
  try {
    return await clip.embedImages(pixels, IMAGES)
  } finally {
    await clip.close()
  }
}

/** The lowest cosine between two lists of unit vectors. */
const worstCosine = (a: Float32Array[] | number[][], b: Float32Array[]) =>
  Math.min(...b.map((v, i) => v.reduce((s, x, j) => s + x * Number(a[i][j]), 0)))

const fp32 = await embed()
const unsigned = await embed('unsigned')

/** A tensor's values as numbers, from raw bytes of its type. */
function values(t: Tensor): number[] {
  const raw = t.rawData ?? new Uint8Array()
  return t.dataType === DATA_TYPE.int8 ? Array.from(new Int8Array(raw.buffer, raw.byteOffset, raw.length)) : Array.from(raw)
}

/** Per MatMulInteger: the dequantisation's integer part, q - zero point (zero point per column or one). */
function centredWeights(model: Model): number[][] {
  const init = new Map((model.graph?.initializer ?? []).map((t) => [t.name ?? '', t]))
  return (model.graph?.node ?? [])
    .filter((n) => n.opType === 'MatMulInteger')
    .map((n) => {
      const weight = init.get(n.input?.[1] ?? '') as Tensor
      const zero = n.input?.[3] ? values(init.get(n.input[3]) as Tensor) : [0]
      const columns = Number(weight.dims?.[1])
      return values(weight).map((q, i) => q - zero[zero.length === 1 ? 0 : i % columns])
    })
}

test('an int8 encoder embeds each image as it would alone, whatever else shares the call (its activations are quantised per run)', async () => {
  const manifest = await loadManifest(modelDir, undefined, 'int8')
  const clip = await openClip(modelDir, manifest, {threads: 1, cacheDir: freshCache(), int8Weights: 'unsigned'})
  try {
    const one = 3 * SIZE * SIZE
    const alone = await clip.embedImages(pixels.subarray(0, one), 1)
    // Beside an image of large values, which would set a batch's quantisation scale.
    const loud = Float32Array.from(pixels.subarray(one, 2 * one), (v) => v * 40)
    const together = new Float32Array(2 * one)
    together.set(pixels.subarray(0, one))
    together.set(loud, one)
    assert.equal(Array.from((await clip.embedImages(together, 2))[0]), Array.from(alone[0]))
  } finally {
    await clip.close()
  }
})

test('the signed copy holds the same dequantised weights: int8 q - 128, zero point - 128, the rest untouched', async () => {
  const source = await readFile(int8File)
  const signed = signedInt8Weights(source)
  assert.is(signed.converted, TINY_VISION.layers * 6 + 1)
  const [before, after] = [decodeModel(source), decodeModel(signed.model)]
  assert.equal(centredWeights(after), centredWeights(before))
  const init = new Map((after.graph?.initializer ?? []).map((t) => [t.name ?? '', t]))
  for (const n of (after.graph?.node ?? []).filter((n) => n.opType === 'MatMulInteger')) {
    assert.equal([init.get(n.input?.[1] ?? '')?.dataType, init.get(n.input?.[3] ?? '')?.dataType], [DATA_TYPE.int8, DATA_TYPE.int8])
  }
  // Same nodes reading the same scales: only the weights' and zero points' names changed.
  const ops = (m: Model) => (m.graph?.node ?? []).map((n) => `${n.opType}(${n.opType === 'MatMulInteger' ? n.input?.[0] : n.input?.join(',')})`)
  assert.equal(ops(after), ops(before))
  assert.not.ok([...init.values()].some((t) => t.dataType === DATA_TYPE.uint8), 'no uint8 weight is left behind')
})

test('per-column and missing zero points convert exactly, and a weight another node reads stays uint8 for it', async () => {
  const g = createGraph('zero-points', 17)
  const x = g.input('x', 'uint8', [2, 4])
  g.output('y', 'int32', [2, 3])
  g.output('z', 'int32', [2, 3])
  g.output('w', 'float32', [4, 3])
  const weight = g.initializer(uint8Tensor('b', Uint8Array.from({length: 12}, (_, i) => (i * 53) % 256), [4, 3]))
  const columns = g.initializer(uint8Tensor('b_zero', Uint8Array.of(0, 128, 255), [3]))
  g.op('MatMulInteger', [x, weight, '', columns], {}, 'y')
  g.op('MatMulInteger', [x, weight], {}, 'z')
  g.op('DequantizeLinear', [weight, g.initializer(floatTensor('scale', [0.5], []))], {}, 'w')
  const source = g.encode()
  const signed = signedInt8Weights(source)
  assert.is(signed.converted, 2)
  const types = new Map((decodeModel(signed.model).graph?.initializer ?? []).map((t) => [t.name ?? '', t.dataType]))
  assert.is(types.get('b'), DATA_TYPE.uint8)
  assert.is(types.get('b_signed'), DATA_TYPE.int8)
  // Activations under 128: a pair of products stays within 16 bits (2 · 127 · 128 < 32 768), so the outputs are exact
  // even where onnxruntime's u8s8 kernel saturates each pair's sum there (AVX2 without VNNI).
  const feeds = {x: new ort.Tensor('uint8', Uint8Array.of(0, 1, 2, 3, 127, 126, 100, 7), [2, 4])}
  const run = async (model: Uint8Array) => {
    const session = await ort.InferenceSession.create(model)
    const out = await session.run(feeds)
    await session.release()
    return ['y', 'z', 'w'].map((name) => Array.from(out[name].data as Int32Array | Float32Array))
  }
  // Exact on every CPU's kernels (above), so the outputs agree to the bit anywhere.
  assert.equal(await run(signed.model), await run(source))
})

test('through the fused kernel, with 7-bit weights and a zero point per column as in reduce_range exports, the signed copy computes the same', async () => {
  const [K, N] = [768, 256]
  const g = createGraph('fused', 17)
  const x = g.input('x', 'float32', ['batch', K])
  g.output('y', 'float32', ['batch', N])
  const weights = Uint8Array.from(seededWeights(3).normal(K * N, 1), (v) => Math.max(0, Math.min(127, Math.round(64 + 20 * v))))
  const [q, scale, zero] = g.node('DynamicQuantizeLinear', [x], {}, 3)
  const product = g.op('MatMulInteger', [q, g.initializer(uint8Tensor('w', weights, [K, N])), zero, g.initializer(uint8Tensor('w_zero', Uint8Array.from({length: N}, (_, i) => 50 + (i % 30)), [N]))])
  const scales = g.op('Mul', [scale, g.initializer(floatTensor('w_scale', Float32Array.from({length: N}, (_, i) => 0.01 + i * 1e-5), [N]))])
  g.op('Mul', [g.op('Cast', [product], {to: attr.int(DATA_TYPE.float32)}), scales], {}, 'y')
  const source = g.encode()
  const feeds = {x: new ort.Tensor('float32', seededWeights(4).normal(50 * K, 1), [50, K])}
  const run = async (model: Uint8Array) => {
    const session = await ort.InferenceSession.create(model, {graphOptimizationLevel: 'all'})
    const out = await session.run(feeds)
    await session.release()
    return Array.from(out.y.data as Float32Array)
  }
  if (!(await u8s8KernelExact())) {
    // This CPU saturates uint8 x int8 products (AVX2 without VNNI): signed weights are never chosen here.
    assert.is(await chooseInt8Weights('auto'), 'unsigned')
    return
  }
  assert.equal(await run(signedInt8Weights(source).model), await run(source))
})

test('a model without uint8 matrix weights is left as it is, and opened from its own file', async () => {
  const fp32File = join(modelDir, (await loadManifest(modelDir)).files.find((f) => f.role === 'image_encoder')?.path ?? '')
  assert.is(signedInt8Weights(await readFile(fp32File)).converted, 0)
  const cache = freshCache()
  assert.is(await signedModelFile(fp32File, cache), fp32File)
  assert.equal((await readdir(join(cache, 'int8'))).filter((f) => f.endsWith('.onnx')), [])
})

// Which CPUs have an exact kernel is onnxruntime's business (VNNI, AMX, ...): the test checks that auto follows the
// kernel's own answer on this CPU, whatever it is, and the emulated AVX2 test below that the answer is no there.
test('auto picks signed weights where the u8s8 kernel is exact on this CPU; a named choice is kept', async () => {
  assert.is(await chooseInt8Weights('auto'), (await u8s8KernelExact()) && process.arch === 'x64' ? 'signed' : 'unsigned')
  assert.is(await chooseInt8Weights('auto', async () => true, 'arm64'), 'unsigned')
  assert.is(await chooseInt8Weights('auto', async () => false, 'x64'), 'unsigned')
  assert.is(await chooseInt8Weights('signed', async () => false), 'signed')
  assert.is(await chooseInt8Weights('unsigned', async () => true), 'unsigned')
})

test('on this CPU, the int8 encoder with its chosen weights agrees with fp32 (cosine >= 0.999)', async () => {
  const auto = await embed('auto')
  const cosine = worstCosine(fp32, auto)
  assert.ok(cosine >= 0.999, `auto: ${cosine}`)
  assert.ok(worstCosine(fp32, unsigned) >= 0.999, `unsigned: ${worstCosine(fp32, unsigned)}`)
  // Where the kernel is exact, signed and unsigned products are the same integers: the same embeddings.
  if (await u8s8KernelExact()) assert.equal(await embed('signed'), unsigned)
})

test('the signed copy is made once in the cache folder, keyed by the file, and replaced when the file changes', async () => {
  const cache = freshCache()
  const copy = await signedModelFile(int8File, cache)
  assert.match(copy, join(cache, 'int8'))
  const sha = createHash('sha256').update(await readFile(int8File)).digest('hex')
  assert.ok(copy.endsWith(`-${sha}.onnx`), copy)
  const made = (await stat(copy)).mtimeMs
  await embed('signed', cache)
  assert.is(await signedModelFile(int8File, cache), copy)
  assert.is((await stat(copy)).mtimeMs, made)
  const graphs = (await readdir(join(cache, 'ort'))).length
  assert.ok(graphs >= 1)

  // Another file at the same path: a new copy; the old one and its optimised graph go.
  const other = join(root, 'other.onnx')
  await writeFile(other, await readFile(int8File))
  const first = await signedModelFile(other, cache)
  await (await openSession(first, {threads: 1, keepArena: false, cacheDir: cache})).release()
  const graphsOf = async (copy: string) => (await readdir(join(cache, 'ort'))).filter((n) => n.startsWith(cachePrefix(copy)))
  assert.is((await graphsOf(first)).length, 1)
  const changed = decodeModel(await readFile(int8File))
  changed.producerName = 'changed'
  await writeFile(other, encodeModel(changed))
  await utimes(other, new Date(), new Date(Date.now() + 5000))
  const second = await signedModelFile(other, cache)
  assert.is.not(second, first)
  assert.ok(await stat(second))
  assert.not.ok(await stat(first).catch(() => undefined), 'the old copy is removed')
  assert.equal(await graphsOf(first), [], 'and its optimised graph')
})

test('MOD_INT8_WEIGHTS reaches the engine: signed makes the copy, unsigned runs the file itself', async () => {
  for (const [weights, copies] of [['signed', 1], ['unsigned', 0]] as const) {
    const cache = freshCache()
    const env = {MOD_MODEL_DIR: modelDir, MOD_CACHE_DIR: cache, MOD_PRECISION: 'int8', MOD_INT8_WEIGHTS: weights}
    const engine = engineFromConfig(await loadConfig({}, env, root), {only: 'clip'})
    await engine.load()
    await engine.close()
    const made = await readdir(join(cache, 'int8')).catch(() => [])
    assert.is(made.filter((f) => f.endsWith('.onnx')).length, copies, weights)
  }
})

test('an unwritable cache folder opens the file itself (unsigned)', async () => {
  const blocked = join(root, 'not-a-folder')
  await writeFile(blocked, 'x')
  assert.is(await signedModelFile(int8File, blocked), int8File)
})

// QEMU's user-mode emulator reports an AVX2 CPU without AVX-512 or VNNI (Haswell) to what it runs, while
// /proc/cpuinfo still shows the host's flags: auto must follow the kernel, not the flags.
const HASWELL = ['qemu-x86_64', '-cpu', 'Haswell']
const canEmulate = process.arch === 'x64' && spawnSync(HASWELL[0], ['--version']).status === 0

interface EmulatedRun {
  embeddings: number[][]
  cacheFiles: string[]
}

async function embedEmulated(choices: Int8Weights[]): Promise<{auto: string; runs: EmulatedRun[]}> {
  const job = join(root, 'job.json')
  const pixelFile = join(root, 'pixels.bin')
  await writeFile(pixelFile, new Uint8Array(pixels.buffer, pixels.byteOffset, pixels.byteLength))
  const runs = choices.map((int8Weights) => ({int8Weights, cacheDir: freshCache()}))
  // A signed run's copy is made here, as the emulated run would make it (the same file on any CPU), so that the
  // emulator, where a step costs many times its own, only embeds.
  for (const run of runs) if (run.int8Weights === 'signed') await signedModelFile(int8File, run.cacheDir)
  await writeFile(job, JSON.stringify({modelDir, pixels: pixelFile, count: IMAGES, runs}))
  const helper = fileURLToPath(new URL('../../helpers/int8-embed.ts', import.meta.url))
  const [command, ...args] = HASWELL
  const {stdout} = await promisify(execFile)(command, [...args, process.execPath, ...nodeArgs(helper), job], {maxBuffer: 1 << 24})
  return JSON.parse(stdout)
}

testUnless(canEmulate ? undefined : 'qemu-x86_64 is missing (Debian package qemu-user)', 'on an AVX2 CPU without VNNI (emulated: qemu-x86_64 -cpu Haswell), auto keeps uint8 weights, which agree with fp32', async () => {
  const {auto, runs} = await embedEmulated(['auto', 'signed'])
  assert.is(auto, 'unsigned')
  assert.equal(runs[0].cacheFiles, [], 'no signed copy is made')
  const cosine = worstCosine(runs[0].embeddings, fp32)
  assert.ok(cosine >= 0.999, `auto on AVX2: ${cosine}`)
  // What auto avoids: signed weights saturate there (0.995 on these encoders).
  const saturated = worstCosine(runs[1].embeddings, fp32)
  assert.ok(saturated < 0.999, `signed on AVX2: ${saturated}`)
})

test.after(async () => {
  await rm(root, {recursive: true, force: true})
})

test.run()
