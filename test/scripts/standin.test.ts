import {readFile, rm, stat, writeFile, mkdtemp} from 'node:fs/promises'
import {createHash} from 'node:crypto'
import {tmpdir} from 'node:os'
import {basename, dirname, join} from 'node:path'
import ort from 'onnxruntime-node'
import {test} from 'uvu'
import * as assert from 'uvu/assert'
import {parseManifest} from '../../src/lib/model/manifest.js'
import type {Manifest} from '../../src/lib/model/manifest-types.js'
import {decodeModel, floatValues} from '../../scripts/onnx/graph.js'
import {seededWeights} from '../../scripts/onnx/layers.js'
import {buildTextModel, textParameters, VIT_B32_TEXT} from '../../scripts/onnx/text-transformer.js'
import {buildVisionModel, visionParameters, VIT_B32_VISION} from '../../scripts/onnx/vit.js'
import {STANDIN_ID, VIT_B32, writeStandinModel, type StandinSizes} from '../../scripts/standin.js'
import {TINY_TEXT, TINY_VISION} from '../helpers/tiny-clip.js'

const VISION = TINY_VISION
const TEXT = TINY_TEXT
const TINY: StandinSizes = {vision: VISION, text: TEXT}
const START = 49406
const END = 49407

const visionBytes = buildVisionModel(VISION, 1)
const textBytes = buildTextModel(TEXT, 2)
const vision = await ort.InferenceSession.create(visionBytes)
const text = await ort.InferenceSession.create(textBytes)
const dirs: string[] = []

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'mod-standin-'))
  dirs.push(dir)
  return dir
}

function randomPixels(n: number, seed: number): Float32Array {
  // Roughly the range of CLIP-normalised pixels.
  return seededWeights(seed).normal(n * 3 * VISION.imageSize ** 2, 1)
}

async function embedImages(pixels: Float32Array, n: number): Promise<Float32Array> {
  const size = VISION.imageSize
  const out = (await vision.run({pixel_values: new ort.Tensor('float32', pixels, [n, 3, size, size])})).image_embeds
  assert.equal(out.dims, [n, VISION.embeddingSize])
  return out.data as Float32Array
}

/** One row of ids: the start token, the given tokens, the end token, then padding with the end token. */
function row(tokens: number[], pad = END): number[] {
  const ids = [START, ...tokens, END]
  return [...ids, ...Array<number>(TEXT.contextLength - ids.length).fill(pad)]
}

async function embedTexts(rows: number[][]): Promise<Float32Array[]> {
  const ids = BigInt64Array.from(rows.flat(), (v) => BigInt(v))
  const out = (await text.run({input_ids: new ort.Tensor('int64', ids, [rows.length, TEXT.contextLength])})).text_embeds
  assert.equal(out.dims, [rows.length, TEXT.embeddingSize])
  const data = out.data as Float32Array
  return rows.map((_, i) => data.slice(i * TEXT.embeddingSize, (i + 1) * TEXT.embeddingSize))
}

function maxDiff(a: Float32Array, b: Float32Array): number {
  return a.reduce((m, x, i) => Math.max(m, Math.abs(x - b[i])), 0)
}

const PARAMETER = /^(vision_model|text_model|visual_projection|text_projection)\./

/** Sum of the sizes of the initializers named as Hugging Face parameters (not shapes, scales or masks). */
function builtParameters(bytes: Uint8Array): number {
  return (decodeModel(bytes).graph?.initializer ?? [])
    .filter((t) => PARAMETER.test(t.name ?? ''))
    .reduce((sum, t) => sum + (t.dims ?? []).reduce((p: number, d) => p * Number(d), 1), 0)
}

function initializerDims(bytes: Uint8Array, name: string): number[] | undefined {
  return decodeModel(bytes).graph?.initializer?.find((t) => t.name === name)?.dims?.map(Number)
}

test("the size formulas give openai/clip-vit-base-patch32's published parameter count", () => {
  assert.is(visionParameters(VIT_B32_VISION), 87_849_216)
  assert.is(textParameters(VIT_B32_TEXT), 63_428_096)
  // CLIPModel's 151,277,313 parameters are both towers plus logit_scale.
  assert.is(visionParameters(VIT_B32_VISION) + textParameters(VIT_B32_TEXT) + 1, 151_277_313)
})

test('the built encoders hold exactly the parameters the formulas count, under Hugging Face names', () => {
  assert.is(builtParameters(visionBytes), visionParameters(VISION))
  assert.is(builtParameters(textBytes), textParameters(TEXT))
  assert.equal(initializerDims(visionBytes, 'vision_model.embeddings.patch_embedding.weight'), [64, 3, 32, 32])
  assert.equal(initializerDims(visionBytes, 'vision_model.embeddings.position_embedding.weight'), [5, 64])
  assert.equal(initializerDims(visionBytes, 'vision_model.encoder.layers.1.mlp.fc1.weight'), [64, 256])
  assert.equal(initializerDims(visionBytes, 'visual_projection.weight'), [64, 32])
  assert.equal(initializerDims(textBytes, 'text_model.embeddings.token_embedding.weight'), [49408, 32])
  assert.equal(initializerDims(textBytes, 'text_model.encoder.layers.1.self_attn.out_proj.bias'), [32])
  assert.equal(initializerDims(textBytes, 'text_projection.weight'), [32, 32])
})

test('the same seed gives the same bytes, another seed other weights', () => {
  assert.ok(Buffer.from(buildVisionModel(VISION, 1)).equals(visionBytes))
  assert.ok(Buffer.from(buildTextModel(TEXT, 2)).equals(textBytes))
  assert.not.ok(Buffer.from(buildVisionModel(VISION, 3)).equals(visionBytes))
})

test('random weights are drawn from N(0, 0.02²), LayerNorms start at gamma 1 and beta 0', () => {
  const values = seededWeights(5).normal(200_001, 0.02)
  assert.is(values.length, 200_001)
  const mean = values.reduce((s, x) => s + x, 0) / values.length
  const std = Math.sqrt(values.reduce((s, x) => s + (x - mean) ** 2, 0) / values.length)
  assert.ok(Math.abs(mean) < 2e-4, `mean ${mean}`)
  assert.ok(Math.abs(std - 0.02) < 4e-4, `std ${std}`)
  const tensors = decodeModel(visionBytes).graph?.initializer ?? []
  const ln = (name: string) => Array.from(floatValues(tensors.find((t) => t.name === name) ?? {}))
  assert.equal(ln('vision_model.post_layernorm.weight'), Array<number>(64).fill(1))
  assert.equal(ln('vision_model.post_layernorm.bias'), Array<number>(64).fill(0))
})

test('the vision encoder gives one finite image_embeds row per image, whatever the batch', async () => {
  const pixels = randomPixels(3, 11)
  const batch = await embedImages(pixels, 3)
  assert.ok(batch.every(Number.isFinite))
  const plane = 3 * VISION.imageSize ** 2
  const second = await embedImages(pixels.slice(plane, 2 * plane), 1)
  assert.ok(maxDiff(second, batch.subarray(32, 64)) < 1e-5)
  assert.ok(maxDiff(batch.subarray(0, 32), batch.subarray(32, 64)) > 1e-3, 'different images, different embeddings')
  assert.equal(vision.inputNames, ['pixel_values'])
  assert.equal(vision.outputNames, ['image_embeds'])
})

test('text_embeds depend on the tokens up to the end token and on none after it (causal mask)', async () => {
  const [base, changedAfter, changedBefore] = await embedTexts([
    row([320, 1929, 539]),
    row([320, 1929, 539], 320),
    row([320, 2368, 539]),
  ])
  assert.ok(base.every(Number.isFinite))
  assert.ok(maxDiff(base, changedAfter) < 1e-6, `tokens after the end changed text_embeds: ${maxDiff(base, changedAfter)}`)
  assert.ok(maxDiff(base, changedBefore) > 1e-3, 'a token before the end token changes text_embeds')
  assert.equal(text.inputNames, ['input_ids'])
  assert.equal(text.outputNames, ['text_embeds'])
})

test('text_embeds pool at the first highest token id of each row of a batch', async () => {
  // Row 1 holds the end token early (position 2): pooling there ignores everything after it.
  const early = [START, 320, END, 1929, 539, END, ...Array<number>(71).fill(END)]
  const cutShort = [START, 320, END, ...Array<number>(74).fill(0)]
  const [normal, earlyEnd] = await embedTexts([row([320, 1929, 539]), early])
  const [alone] = await embedTexts([cutShort])
  const [normalAlone] = await embedTexts([row([320, 1929, 539])])
  assert.ok(maxDiff(earlyEnd, alone) < 1e-6)
  assert.ok(maxDiff(normal, normalAlone) < 1e-6)
  assert.ok(maxDiff(normal, earlyEnd) > 1e-3)
})

const fast = JSON.parse(await readFile(new URL('../../models/fast.json', import.meta.url), 'utf8')) as Manifest

test('the full-size stand-in matches the fast preset: image size, embedding size, context length', () => {
  assert.is(VIT_B32.vision.imageSize, fast.preprocess.crop)
  assert.is(VIT_B32.vision.embeddingSize, fast.embedding_size)
  assert.is(VIT_B32.text.contextLength, fast.context_length)
})

async function sha256(path: string): Promise<string> {
  return createHash('sha256').update(await readFile(path)).digest('hex')
}

test('writes a model folder with the int8 and fp16 variants beside the fp32 encoders', async () => {
  const dir = await tempDir()
  const {manifest, generated} = await writeStandinModel(dir, {variants: true, sizes: TINY})
  assert.ok(generated)
  assert.is(manifest.id, STANDIN_ID)
  assert.equal(JSON.parse(await readFile(join(dir, 'manifest.json'), 'utf8')), manifest)
  assert.is(manifest.embedding_size, 32)
  assert.equal(manifest.preprocess, {...fast.preprocess, resize: 64, crop: 64})
  assert.equal(parseManifest(manifest, 'standin').files, manifest.files)
  assert.equal(
    Object.entries(manifest.variants ?? {}).map(([v, e]) => [v, e.image_encoder.path, e.text_encoder.path]),
    [
      ['int8', 'onnx/vision_model_quantized.onnx', 'onnx/text_model_quantized.onnx'],
      ['fp16', 'onnx/vision_model_fp16.onnx', 'onnx/text_model_fp16.onnx'],
    ],
  )
  for (const v of Object.values(manifest.variants ?? {})) {
    for (const f of [v.image_encoder, v.text_encoder]) {
      assert.is(f.size, (await stat(join(dir, f.path))).size, f.path)
      assert.is(f.sha256, await sha256(join(dir, f.path)), f.path)
    }
  }
  const config = JSON.parse(await readFile(join(dir, 'config.json'), 'utf8'))
  assert.equal(
    [config.vision_config.hidden_size, config.vision_config.num_hidden_layers, config.text_config.num_attention_heads],
    [64, 2, 4],
  )
})

test('a folder that already holds the stand-in is left alone; a damaged one is written again', async () => {
  const dir = await tempDir()
  await writeStandinModel(dir, {variants: true, sizes: TINY})
  const path = join(dir, 'onnx/text_model_fp16.onnx')
  const before = await stat(path)
  assert.is((await writeStandinModel(dir, {variants: false, sizes: TINY})).generated, false)
  assert.is((await writeStandinModel(dir, {variants: true, sizes: TINY})).generated, false)
  assert.is((await stat(path)).mtimeMs, before.mtimeMs)
  await writeFile(path, 'damaged')
  const again = await writeStandinModel(dir, {variants: true, sizes: TINY})
  assert.ok(again.generated)
  assert.is(await sha256(path), again.manifest.variants?.fp16?.text_encoder.sha256)
})

test('asking for the variants later adds them to a folder written without', async () => {
  const dir = await tempDir()
  const plain = await writeStandinModel(dir, {variants: false, sizes: TINY})
  assert.is(plain.manifest.variants, undefined)
  const full = await writeStandinModel(dir, {variants: true, sizes: TINY})
  assert.ok(full.generated)
  assert.equal(Object.keys(full.manifest.variants ?? {}), ['int8', 'fp16'])
})

test('another size is another stand-in, and variants of the old one are removed', async () => {
  const dir = await tempDir()
  const first = await writeStandinModel(dir, {variants: true, sizes: TINY})
  const shallower: StandinSizes = {...TINY, text: {...TEXT, layers: 1}}
  const other = await writeStandinModel(dir, {variants: false, sizes: shallower})
  assert.ok(other.generated)
  assert.is.not(other.manifest.source, first.manifest.source)
  assert.is(await stat(join(dir, 'onnx/text_model_quantized.onnx')).catch(() => undefined), undefined)
})

test('transformers.js loads the folder at fp32, q8 and fp16, each from the file the manifest names', async () => {
  const dir = await tempDir()
  const {manifest} = await writeStandinModel(dir, {variants: true, sizes: TINY})
  const tjs = await import('@huggingface/transformers')
  tjs.env.allowRemoteModels = false
  tjs.env.localModelPath = dirname(dir)
  const size = VISION.imageSize
  const pixels = randomPixels(1, 12)
  const files = {
    fp32: 'onnx/vision_model.onnx',
    q8: manifest.variants?.int8?.image_encoder.path,
    fp16: manifest.variants?.fp16?.image_encoder.path,
  }
  for (const [dtype, path] of Object.entries(files)) {
    const session = await ort.InferenceSession.create(join(dir, path ?? ''))
    const feed = new ort.Tensor('float32', pixels, [1, 3, size, size])
    const expected = (await session.run({pixel_values: feed})).image_embeds.data as Float32Array
    await session.release()
    const model = await tjs.CLIPVisionModelWithProjection.from_pretrained(basename(dir), {
      dtype: dtype as 'fp32' | 'q8' | 'fp16',
      local_files_only: true,
    })
    const out = await model({pixel_values: new tjs.Tensor('float32', pixels, [1, 3, size, size])})
    assert.ok(maxDiff(out.image_embeds.data as Float32Array, expected) < 1e-5, dtype)
    await model.dispose()
  }
})

test.after(async () => {
  await Promise.all([vision.release(), text.release()])
  await Promise.all(dirs.map((d) => rm(d, {recursive: true, force: true})))
})

test.run()
