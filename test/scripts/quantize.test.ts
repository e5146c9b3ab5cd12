import ort from 'onnxruntime-node'
import {test} from 'uvu'
import * as assert from 'uvu/assert'
import {toFloat16, convertToFp16} from '../../scripts/onnx/fp16.js'
import {createGraph, DATA_TYPE, decodeModel, floatTensor} from '../../scripts/onnx/graph.js'
import {seededWeights} from '../../scripts/onnx/layers.js'
import {quantizeDynamicInt8} from '../../scripts/onnx/quantize.js'
import {buildTextModel} from '../../scripts/onnx/text-transformer.js'
import {buildVisionModel} from '../../scripts/onnx/vit.js'
import {TINY_TEXT, TINY_VISION} from '../helpers/tiny-clip.js'

const VISION = TINY_VISION
const TEXT = TINY_TEXT
const IMAGES = 8

const visionFp32 = buildVisionModel(VISION, 1)
const textFp32 = buildTextModel(TEXT, 2)
const int8 = {vision: quantizeDynamicInt8(visionFp32), text: quantizeDynamicInt8(textFp32)}
const fp16 = {vision: convertToFp16(visionFp32), text: convertToFp16(textFp32)}

async function imageEmbeds(model: Uint8Array): Promise<Float32Array[]> {
  const session = await ort.InferenceSession.create(model)
  const size = VISION.imageSize
  const pixels = seededWeights(21).normal(IMAGES * 3 * size * size, 1)
  const out = await session.run({pixel_values: new ort.Tensor('float32', pixels, [IMAGES, 3, size, size])})
  await session.release()
  return rows(out.image_embeds.data as Float32Array, VISION.embeddingSize)
}

async function textEmbeds(model: Uint8Array): Promise<Float32Array[]> {
  const session = await ort.InferenceSession.create(model)
  // Eight prompts of 1 to 8 tokens, each closed by the end token and padded with it.
  const ids = Array.from({length: IMAGES}, (_, i) => {
    const tokens = Array.from({length: i + 1}, (_, j) => 320 + 97 * i + 13 * j)
    return [49406, ...tokens, ...Array<number>(TEXT.contextLength - tokens.length - 1).fill(49407)]
  })
  const input = new ort.Tensor('int64', BigInt64Array.from(ids.flat(), BigInt), [IMAGES, TEXT.contextLength])
  const out = await session.run({input_ids: input})
  await session.release()
  return rows(out.text_embeds.data as Float32Array, TEXT.embeddingSize)
}

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

const [refImages, refTexts] = [await imageEmbeds(visionFp32), await textEmbeds(textFp32)]

test('int8 turns every MatMul with a constant weight into MatMulInteger over int8 weights', () => {
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
  assert.is(types.get('vision_model.encoder.layers.0.mlp.fc1.weight_quantized'), DATA_TYPE.int8)
  assert.not.ok(types.has('vision_model.encoder.layers.0.mlp.fc1.weight'))
  // The patch convolution stays fp32.
  assert.is(types.get('vision_model.embeddings.patch_embedding.weight'), DATA_TYPE.float32)
})

test('int8 stores the token embedding table as int8 rows that are dequantised after the Gather', () => {
  assert.equal(int8.text.report.rewritten, {MatMul: TEXT.layers * 6 + 1, Gather: 1})
  const types = initializerTypes(int8.text.model)
  assert.is(types.get('text_model.embeddings.token_embedding.weight_quantized'), DATA_TYPE.int8)
  assert.is(opCounts(int8.text.model).DequantizeLinear, 1)
})

test('the int8 encoders agree with fp32 (centred cosine >= 0.95) and their files shrink', async () => {
  const images = centredAgreement(refImages, await imageEmbeds(int8.vision.model))
  const texts = centredAgreement(refTexts, await textEmbeds(int8.text.model))
  assert.ok(images >= 0.95, `images: ${images}`)
  assert.ok(texts >= 0.95, `texts: ${texts}`)
  // The fp32 patch convolution is a large share of the tiny vision model; the token table is most of the text one.
  assert.ok(int8.vision.model.byteLength < 0.8 * visionFp32.byteLength)
  assert.ok(int8.text.model.byteLength < 0.3 * textFp32.byteLength)
})

test('int8 scales each weight column on its own, so small columns keep their precision', async () => {
  // Column 0 is a thousand times smaller than column 1: one scale for the whole matrix would round it to 0.
  // Positive weights and inputs, so that no cancellation makes the exact sums tiny.
  const weight = Float32Array.from({length: 64 * 2}, (_, i) => (i % 2 === 0 ? 0.001 : 1) * (1.5 + Math.sin(i)))
  const g = createGraph('columns')
  const x = g.input('x', 'float32', ['batch', 64])
  g.output('y', 'float32', ['batch', 2])
  g.op('MatMul', [x, g.initializer(floatTensor('w', weight, [64, 2]))], {}, 'y')
  const session = await ort.InferenceSession.create(quantizeDynamicInt8(g.encode()).model)
  const input = Float32Array.from({length: 64}, (_, i) => 1.5 + Math.cos(i))
  const y = (await session.run({x: new ort.Tensor('float32', input, [1, 64])})).y.data as Float32Array
  const exact = [0, 1].map((c) => input.reduce((s, v, k) => s + v * weight[k * 2 + c], 0))
  exact.forEach((e, c) => assert.ok(Math.abs(y[c] - e) < 0.02 * Math.abs(e), `column ${c}: ${y[c]} vs ${e}`))
  await session.release()
})

test('int8 keeps a weight in fp32 when another node also reads it', async () => {
  const g = createGraph('shared')
  const x = g.input('x', 'float32', [4, 4])
  g.output('y', 'float32', [4, 4])
  const w = g.initializer(floatTensor('w', Float32Array.from({length: 16}, (_, i) => i / 16), [4, 4]))
  g.op('Add', [g.op('MatMul', [x, w]), w], {}, 'y')
  const {model} = quantizeDynamicInt8(g.encode())
  const types = initializerTypes(model)
  assert.is(types.get('w'), DATA_TYPE.float32)
  assert.is(types.get('w_quantized'), DATA_TYPE.int8)
  const session = await ort.InferenceSession.create(model)
  const y = (await session.run({x: new ort.Tensor('float32', new Float32Array(16).fill(1), [4, 4])})).y.data
  assert.ok(Math.abs((y as Float32Array)[0] - (1.5 + 0)) < 0.02, `${(y as Float32Array)[0]}`)
  await session.release()
})

test('int8 quantises a weight read by two MatMuls once', () => {
  const g = createGraph('twice')
  const x = g.input('x', 'float32', [4, 4])
  g.output('y', 'float32', [4, 4])
  const w = g.initializer(floatTensor('w', Float32Array.from({length: 16}, (_, i) => i), [4, 4]))
  g.op('MatMul', [g.op('MatMul', [x, w]), w], {}, 'y')
  const types = initializerTypes(quantizeDynamicInt8(g.encode()).model)
  assert.equal([...types.keys()].sort(), ['w_quantized', 'w_scale'])
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
  const images = centredAgreement(refImages, await imageEmbeds(fp16.vision))
  const texts = centredAgreement(refTexts, await textEmbeds(fp16.text))
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
