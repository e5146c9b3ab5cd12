import {execFile, spawnSync} from 'node:child_process'
import {mkdtemp, rm, writeFile} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {promisify} from 'node:util'
import {fileURLToPath} from 'node:url'
import ort from 'onnxruntime-node'
import {test} from 'uvu'
import * as assert from 'uvu/assert'
import {toFloat16, convertToFp16} from '../../scripts/onnx/fp16.js'
import {createGraph, DATA_TYPE, decodeModel, floatTensor} from '../../scripts/onnx/graph.js'
import {seededWeights} from '../../scripts/onnx/layers.js'
import {quantizeDynamicInt8} from '../../scripts/onnx/quantize.js'
import {halvedWeights} from '../../bench/reduce-range.js'
import {buildTextModel} from '../../scripts/onnx/text-transformer.js'
import {buildVisionModel} from '../../scripts/onnx/vit.js'
import {testUnless} from '../helpers/skip.js'
import {TINY_TEXT, TINY_VISION} from '../helpers/tiny-clip.js'

const VISION = TINY_VISION
const TEXT = TINY_TEXT
const IMAGES = 8

const visionFp32 = buildVisionModel(VISION, 1)
const textFp32 = buildTextModel(TEXT, 2)
const int8 = {vision: quantizeDynamicInt8(visionFp32), text: quantizeDynamicInt8(textFp32)}
const fp16 = {vision: convertToFp16(visionFp32), text: convertToFp16(textFp32)}

/** One model run on given inputs: in this process, or in an emulated CPU's (see the last int8 test). */
interface Run {
  model: Uint8Array
  feeds: Record<string, ort.Tensor>
  output: string
}

async function runHere({model, feeds, output}: Run): Promise<Float32Array> {
  const session = await ort.InferenceSession.create(model)
  const out = await session.run(feeds)
  await session.release()
  return out[output].data as Float32Array
}

const size = VISION.imageSize
const pixels = new ort.Tensor('float32', seededWeights(21).normal(IMAGES * 3 * size * size, 1), [IMAGES, 3, size, size])
const imageRun = (model: Uint8Array): Run => ({model, feeds: {pixel_values: pixels}, output: 'image_embeds'})
// Eight prompts of 1 to 8 tokens, each closed by the end token and padded with it.
const ids = Array.from({length: IMAGES}, (_, i) => {
  const tokens = Array.from({length: i + 1}, (_, j) => 320 + 97 * i + 13 * j)
  return [49406, ...tokens, ...Array<number>(TEXT.contextLength - tokens.length - 1).fill(49407)]
})
const tokens = new ort.Tensor('int64', BigInt64Array.from(ids.flat(), BigInt), [IMAGES, TEXT.contextLength])
const textRun = (model: Uint8Array): Run => ({model, feeds: {input_ids: tokens}, output: 'text_embeds'})

function rows(data: Float32Array, width: number): Float32Array[] {
  return Array.from({length: data.length / width}, (_, i) => data.slice(i * width, (i + 1) * width))
}

function cosine(a: Float32Array, b: Float32Array): number {
  let dot = 0
  let aa = 0
  let bb = 0
  a.forEach((x, i) => {
    dot += x * b[i]
    aa += x * x
    bb += b[i] * b[i]
  })
  return dot / Math.sqrt(aa * bb)
}

/**
 * The lowest cosine between reference and candidate embeddings, both taken relative to the reference's mean:
 * random-weight encoders give every input a large shared component, which alone would make any cosine high.
 */
function centredAgreement(reference: Float32Array[], candidate: Float32Array[]): number {
  const mean = reference[0].map((_, j) => reference.reduce((s, r) => s + r[j], 0) / reference.length)
  const centre = (v: Float32Array) => v.map((x, j) => x - mean[j])
  return Math.min(...reference.map((r, i) => cosine(centre(r), centre(candidate[i]))))
}

function opCounts(model: Uint8Array): Record<string, number> {
  const counts: Record<string, number> = {}
  for (const n of decodeModel(model).graph?.node ?? []) counts[n.opType ?? ''] = (counts[n.opType ?? ''] ?? 0) + 1
  return counts
}

function initializerTypes(model: Uint8Array): Map<string, number> {
  return new Map((decodeModel(model).graph?.initializer ?? []).map((t) => [t.name ?? '', t.dataType ?? 0]))
}

/**
 * What int8 computes depends on the CPU's integer kernels (AVX-512 VNNI, AVX2), so each such check is its model
 * runs plus a verdict on their outputs: the tests below run them here, and once more on an emulated AVX2 CPU.
 */
interface Int8Check {
  runs: Run[]
  judge: (outputs: Float32Array[]) => void
}

// The fp32 references run here: what an int8 check judges is the int8 model on each CPU.
const [refImages, refTexts] = [
  rows(await runHere(imageRun(visionFp32)), VISION.embeddingSize),
  rows(await runHere(textRun(textFp32)), TEXT.embeddingSize),
]

const agreement: Int8Check = {
  runs: [imageRun(int8.vision.model), textRun(int8.text.model)],
  judge: ([int8Images, int8Texts]) => {
    const images = centredAgreement(refImages, rows(int8Images, VISION.embeddingSize))
    const texts = centredAgreement(refTexts, rows(int8Texts, TEXT.embeddingSize))
    assert.ok(images >= 0.95, `images: ${images}`)
    assert.ok(texts >= 0.95, `texts: ${texts}`)
  },
}

// Column 0 is a thousand times smaller than column 1: one scale for the whole matrix would round it to 0.
// Positive weights and inputs, so that no cancellation makes the exact sums tiny.
const columnWeight = Float32Array.from({length: 64 * 2}, (_, i) => (i % 2 === 0 ? 0.001 : 1) * (1.5 + Math.sin(i)))
const columnInput = Float32Array.from({length: 64}, (_, i) => 1.5 + Math.cos(i))
const columns: Int8Check = {
  runs: [
    {
      model: (() => {
        const g = createGraph('columns')
        const x = g.input('x', 'float32', ['batch', 64])
        g.output('y', 'float32', ['batch', 2])
        g.op('MatMul', [x, g.initializer(floatTensor('w', columnWeight, [64, 2]))], {}, 'y')
        return quantizeDynamicInt8(g.encode()).model
      })(),
      feeds: {x: new ort.Tensor('float32', columnInput, [1, 64])},
      output: 'y',
    },
  ],
  judge: ([y]) => {
    const exact = [0, 1].map((c) => columnInput.reduce((s, v, k) => s + v * columnWeight[k * 2 + c], 0))
    exact.forEach((e, c) => assert.ok(Math.abs(y[c] - e) < 0.02 * Math.abs(e), `column ${c}: ${y[c]} vs ${e}`))
  },
}

const sharedModel = (() => {
  const g = createGraph('shared')
  const x = g.input('x', 'float32', [4, 4])
  g.output('y', 'float32', [4, 4])
  const w = g.initializer(floatTensor('w', Float32Array.from({length: 16}, (_, i) => i / 16), [4, 4]))
  g.op('Add', [g.op('MatMul', [x, w]), w], {}, 'y')
  return quantizeDynamicInt8(g.encode()).model
})()
const shared: Int8Check = {
  runs: [{model: sharedModel, feeds: {x: new ort.Tensor('float32', new Float32Array(16).fill(1), [4, 4])}, output: 'y'}],
  // Row 0 of x·w + w with x all ones: column 0 of w sums to 1.5, and w[0][0] is 0.
  judge: ([y]) => assert.ok(Math.abs(y[0] - 1.5) < 0.02, `x·w + w at [0][0]: ${y[0]}`),
}

const judgeHere = async (check: Int8Check) => check.judge(await Promise.all(check.runs.map(runHere)))

test('int8 turns every MatMul with a constant weight into MatMulInteger over uint8 weights', () => {
  const before = opCounts(visionFp32)
  const after = opCounts(int8.vision.model)
  // Per layer: q, k, v, out, fc1, fc2; plus the projection. The two attention MatMuls stay float.
  const linears = VISION.layers * 6 + 1
  assert.is(after.MatMulInteger, linears)
  assert.is(after.MatMul, before.MatMul - linears)
  // One run-time quantisation per distinct input: q, k and v share the LayerNorm's output.
  assert.is(after.DynamicQuantizeLinear, VISION.layers * 4 + 1)
  assert.equal(int8.vision.report.rewritten, {MatMul: linears})
  const types = initializerTypes(int8.vision.model)
  assert.is(types.get('vision_model.encoder.layers.0.mlp.fc1.weight_quantized'), DATA_TYPE.uint8)
  assert.not.ok(types.has('vision_model.encoder.layers.0.mlp.fc1.weight'))
  // The patch convolution stays fp32.
  assert.is(types.get('vision_model.embeddings.patch_embedding.weight'), DATA_TYPE.float32)
})

test('int8 weights are the symmetric int8 values shifted to uint8 around one zero point of 128', () => {
  const graph = decodeModel(int8.vision.model).graph
  const matMuls = (graph?.node ?? []).filter((n) => n.opType === 'MatMulInteger')
  const zeroPoints = new Set(matMuls.map((n) => n.input?.[3]))
  assert.is(zeroPoints.size, 1)
  const zero = graph?.initializer?.find((t) => t.name === [...zeroPoints][0])
  assert.is(zero?.dataType, DATA_TYPE.uint8)
  assert.equal([...(zero?.rawData ?? [])], [128])
  // Every column's largest magnitude maps to 127 away from the zero point: 1 or 255, never 0.
  const weight = graph?.initializer?.find((t) => t.name === 'vision_model.encoder.layers.0.mlp.fc1.weight_quantized')
  const values = Uint8Array.from(weight?.rawData ?? [])
  assert.ok(values.every((v) => v >= 1))
  assert.ok(values.some((v) => v === 1 || v === 255))
})

// Reduce-range (7-bit) weights, which bench/int8.ts --reduce-range measures: within [-64, 63] once signed, so that
// AVX2's u8s8 kernel sums them without saturating; the encoders must still agree with fp32.
test('with 63 as the largest weight, every uint8 weight lies within 128 ± 63, and the encoder agrees with fp32', async () => {
  const reduced = quantizeDynamicInt8(visionFp32, {weightMax: 63}).model
  const weight = decodeModel(reduced).graph?.initializer?.find((t) => t.name === 'vision_model.encoder.layers.0.mlp.fc1.weight_quantized')
  const values = Uint8Array.from(weight?.rawData ?? [])
  assert.ok(values.length > 0 && values.every((v) => v >= 65 && v <= 191))
  assert.ok(values.some((v) => v === 65 || v === 191))
  const images = centredAgreement(refImages, rows(await runHere(imageRun(reduced)), VISION.embeddingSize))
  assert.ok(images >= 0.95, `images: ${images}`)
})

test("bench's halved weights: every MatMulInteger reads int8 weights within [-64, 63], and the encoder agrees with fp32", async () => {
  const {model, converted} = halvedWeights(int8.vision.model)
  assert.is(converted, VISION.layers * 6 + 1)
  const graph = decodeModel(model).graph
  const initializers = new Map((graph?.initializer ?? []).map((t) => [t.name, t]))
  for (const node of (graph?.node ?? []).filter((n) => n.opType === 'MatMulInteger')) {
    const weight = initializers.get(node.input?.[1])
    assert.is(weight?.dataType, DATA_TYPE.int8)
    const raw = weight?.rawData ?? new Uint8Array()
    const values = new Int8Array(raw.buffer, raw.byteOffset, raw.byteLength)
    assert.ok(values.length > 0 && values.every((v) => v >= -64 && v <= 63), String(node.input?.[1]))
  }
  const images = centredAgreement(refImages, rows(await runHere(imageRun(model)), VISION.embeddingSize))
  assert.ok(images >= 0.95, `images: ${images}`)
})

test('int8 stores the token embedding table as int8 rows that are dequantised after the Gather', () => {
  assert.equal(int8.text.report.rewritten, {MatMul: TEXT.layers * 6 + 1, Gather: 1})
  const types = initializerTypes(int8.text.model)
  assert.is(types.get('text_model.embeddings.token_embedding.weight_quantized'), DATA_TYPE.int8)
  assert.is(opCounts(int8.text.model).DequantizeLinear, 1)
})

test('the int8 encoders agree with fp32 (centred cosine >= 0.95) and their files shrink', async () => {
  await judgeHere(agreement)
  // The fp32 patch convolution is a large share of the tiny vision model; the token table is most of the text one.
  assert.ok(int8.vision.model.byteLength < 0.8 * visionFp32.byteLength)
  assert.ok(int8.text.model.byteLength < 0.3 * textFp32.byteLength)
})

test('int8 scales each weight column on its own, so small columns keep their precision', async () => {
  await judgeHere(columns)
})

test('int8 keeps a weight in fp32 when another node also reads it', async () => {
  const types = initializerTypes(sharedModel)
  assert.is(types.get('w'), DATA_TYPE.float32)
  assert.is(types.get('w_quantized'), DATA_TYPE.uint8)
  await judgeHere(shared)
})

test('int8 quantises a weight read by two MatMuls once', () => {
  const g = createGraph('twice')
  const x = g.input('x', 'float32', [4, 4])
  g.output('y', 'float32', [4, 4])
  const w = g.initializer(floatTensor('w', Float32Array.from({length: 16}, (_, i) => i), [4, 4]))
  g.op('MatMul', [g.op('MatMul', [x, w]), w], {}, 'y')
  const types = initializerTypes(quantizeDynamicInt8(g.encode()).model)
  assert.equal([...types.keys()].sort(), ['w_quantized', 'w_scale', 'weight_zero_point'])
})

/** Runs in a child process on an emulated CPU, through test/helpers/run-onnx.mjs (plain JavaScript: quick to start). */
async function runEmulated(emulator: string[], runs: Run[]): Promise<Float32Array[]> {
  const dir = await mkdtemp(join(tmpdir(), 'mod-int8-'))
  try {
    const job = await Promise.all(
      runs.map(async ({model, feeds, output}, i) => {
        const path = join(dir, `${i}.onnx`)
        await writeFile(path, model)
        const inputs = Object.entries(feeds).map(([name, t]) => {
          const data = Array.from(t.data as Float32Array | BigInt64Array, Number)
          return [name, {type: t.type, dims: t.dims, data}]
        })
        return {model: path, feeds: Object.fromEntries(inputs), output}
      }),
    )
    await writeFile(join(dir, 'job.json'), JSON.stringify(job))
    const helper = fileURLToPath(new URL('../helpers/run-onnx.mjs', import.meta.url))
    const [command, ...args] = emulator
    const {stdout} = await promisify(execFile)(command, [...args, process.execPath, helper, join(dir, 'job.json')], {
      maxBuffer: 1 << 26,
    })
    return (JSON.parse(stdout) as number[][]).map((o) => Float32Array.from(o))
  } finally {
    await rm(dir, {recursive: true, force: true})
  }
}

// onnxruntime picks its integer kernels from the CPU's flags. QEMU's user-mode emulator reports an AVX2 CPU without
// AVX-512 or VNNI (Haswell) to the process it runs, so a machine with VNNI checks the AVX2 kernels too.
const HASWELL = ['qemu-x86_64', '-cpu', 'Haswell']
/** Why the emulated run cannot happen here, or undefined. */
function cannotEmulate(): string | undefined {
  if (process.arch !== 'x64') return `it runs this machine's node and onnxruntime, which are ${process.arch} here, not x64`
  if (spawnSync(HASWELL[0], ['--version']).status !== 0) return 'qemu-x86_64 is missing (Debian package qemu-user)'
  return undefined
}

testUnless(cannotEmulate(), 'the int8 checks also pass on an AVX2 CPU without VNNI (emulated: qemu-x86_64 -cpu Haswell)', async () => {
  const checks = [agreement, columns, shared]
  const outputs = await runEmulated(HASWELL, checks.flatMap((c) => c.runs))
  let at = 0
  for (const check of checks) check.judge(outputs.slice(at, (at += check.runs.length)))
})

test('fp16 stores every weight as float16 behind a Cast to fp32, except constants beyond its range', () => {
  const types = initializerTypes(fp16.text)
  assert.is(types.get('text_model.encoder.layers.0.mlp.fc1.weight_fp16'), DATA_TYPE.float16)
  assert.not.ok(types.has('text_model.encoder.layers.0.mlp.fc1.weight'))
  const mask = [...types].filter(([name]) => name.startsWith('causal_mask'))
  assert.equal(mask.map(([, type]) => type), [DATA_TYPE.float32])
  const nodes = decodeModel(fp16.text).graph?.node ?? []
  const casts = nodes.filter((n) => n.opType === 'Cast' && n.input?.[0]?.endsWith('_fp16'))
  assert.is(casts.length, [...types.values()].filter((t) => t === DATA_TYPE.float16).length)
})

test('the fp16 encoders agree with fp32 (centred cosine >= 0.99) in half the file', async () => {
  const images = centredAgreement(refImages, rows(await runHere(imageRun(fp16.vision)), VISION.embeddingSize))
  const texts = centredAgreement(refTexts, rows(await runHere(textRun(fp16.text)), TEXT.embeddingSize))
  assert.ok(images >= 0.99, `images: ${images}`)
  assert.ok(texts >= 0.99, `texts: ${texts}`)
  assert.ok(fp16.vision.byteLength < 0.52 * visionFp32.byteLength)
  assert.ok(fp16.text.byteLength < 0.52 * textFp32.byteLength)
})

test('float16 conversion rounds to nearest even, with subnormals, infinities and NaN', () => {
  const cases: [number, number][] = [
    [1, 0x3c00],
    [-2, 0xc000],
    [0.1, 0x2e66],
    [1 / 3, 0x3555],
    [65504, 0x7bff], // the largest float16
    [65520, 0x7c00], // halfway to the next step: rounds to even, which is infinity
    [1e-8, 0x0000], // under half the smallest subnormal
    [2 ** -24, 0x0001], // the smallest subnormal
    [3 * 2 ** -25, 0x0002], // 1.5 subnormal steps: to even
    [-0, 0x8000],
    [Infinity, 0x7c00],
    [NaN, 0x7e00],
    [1 + 2 ** -11, 0x3c00], // halfway between 1 and the next float16: to even
  ]
  assert.equal(Array.from(toFloat16(Float32Array.from(cases, ([x]) => x))), cases.map(([, bits]) => bits))
})

test.run()
