import {createHash} from 'node:crypto'
import {copyFile, mkdir, mkdtemp, readFile, rm, stat} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import ort from 'onnxruntime-node'
import {test} from 'uvu'
import * as assert from 'uvu/assert'
import type {Manifest} from '../../src/lib/model/manifest-types.js'
import {loadTokenizer, type ClipTokenizer} from '../../src/lib/model/tokenizer.js'
import {writeToyModel} from '../../scripts/fixtures.js'
import {createGraph} from '../../scripts/onnx/graph.js'
import {l2Normalize, reduce} from '../../scripts/onnx/layers.js'

const SIZE = 224
const MEAN = [0.48145466, 0.4578275, 0.40821073]
const STD = [0.26862954, 0.26130258, 0.27577711]

const dir = await mkdtemp(join(tmpdir(), 'mod-toy-'))
const written = await writeToyModel(dir)
const vision = await ort.InferenceSession.create(join(dir, 'onnx/vision_model.onnx'))
const text = await ort.InferenceSession.create(join(dir, 'onnx/text_model.onnx'))
const tokenizer = await loadTokenizer(dir)

/** pixel_values of solid-colour images after CLIP's normalisation, [n, 3, 224, 224]. */
function solidImages(colours: [number, number, number][]): ort.Tensor {
  const plane = SIZE * SIZE
  const data = new Float32Array(colours.length * 3 * plane)
  colours.forEach((rgb, n) => {
    for (let c = 0; c < 3; c++) data.fill((rgb[c] - MEAN[c]) / STD[c], (n * 3 + c) * plane, (n * 3 + c + 1) * plane)
  })
  return new ort.Tensor('float32', data, [colours.length, 3, SIZE, SIZE])
}

async function embedImages(colours: [number, number, number][]): Promise<number[][]> {
  const out = (await vision.run({pixel_values: solidImages(colours)})).image_embeds
  assert.equal(out.dims, [colours.length, 8])
  return rows(out.data as Float32Array, 8)
}

async function embedTexts(t: ClipTokenizer, prompts: string[]): Promise<number[][]> {
  const ids = new ort.Tensor('int64', t.encodeBatch(prompts, 77), [prompts.length, 77])
  const out = (await text.run({input_ids: ids})).text_embeds
  assert.equal(out.dims, [prompts.length, 8])
  return rows(out.data as Float32Array, 8)
}

function rows(data: Float32Array, width: number): number[][] {
  return Array.from({length: data.length / width}, (_, i) => Array.from(data.subarray(i * width, (i + 1) * width)))
}

function normalised(v: number[]): number[] {
  const norm = Math.hypot(...v)
  return v.map((x) => x / norm)
}

function assertClose(actual: number[], expected: number[]): void {
  assert.is(actual.length, expected.length)
  actual.forEach((x, i) => assert.ok(Math.abs(x - expected[i]) < 1e-4, `[${actual}] ≈ [${expected}] at ${i}`))
}

const dot = (a: number[], b: number[]) => a.reduce((s, x, i) => s + x * b[i], 0)

test('image embedding is the normalised per-channel mean after CLIP normalisation', async () => {
  const [red] = await embedImages([[1, 0, 0]])
  const expected = normalised([(1 - MEAN[0]) / STD[0], (0 - MEAN[1]) / STD[1], (0 - MEAN[2]) / STD[2]])
  assertClose(red, [...expected, 0, 0, 0, 0, 0])
})

test('text embedding counts the colour words red, green and blue', async () => {
  const [red, redBlue, green] = await embedTexts(tokenizer, ['red', 'a red and blue car', 'Green!'])
  assertClose(red, [1, 0, 0, 0, 0, 0, 0, 0])
  assertClose(redBlue, [Math.SQRT1_2, 0, Math.SQRT1_2, 0, 0, 0, 0, 0])
  assertClose(green, [0, 1, 0, 0, 0, 0, 0, 0])
})

test('a prompt without a colour word is exactly the zero vector', async () => {
  const [photo] = await embedTexts(tokenizer, ['a photo'])
  assert.equal(photo, [0, 0, 0, 0, 0, 0, 0, 0])
})

test('runs a batch of three through both encoders', async () => {
  const images = await embedImages([[1, 0, 0], [0, 1, 0], [0, 0, 1]])
  const texts = await embedTexts(tokenizer, ['red', 'green', 'blue'])
  // Each image is closest to its own colour word; pure blue is against red.
  images.forEach((image, i) => {
    const scores = texts.map((t) => dot(image, t))
    assert.is(scores.indexOf(Math.max(...scores)), i)
  })
  assert.ok(dot(images[2], texts[0]) < 0, 'a blue image has a negative cosine with "red"')
})

test('the manifest describes the folder, with the size and sha256 of every file', async () => {
  const manifest = JSON.parse(await readFile(join(dir, 'manifest.json'), 'utf8')) as Manifest
  assert.equal(manifest, written)
  assert.is(manifest.id, 'toy-clip')
  assert.is(manifest.embedding_size, 8)
  assert.is(manifest.context_length, 77)
  assert.equal(manifest.image, {input: 'pixel_values', output: 'image_embeds'})
  assert.equal(manifest.text, {input: 'input_ids', output: 'text_embeds'})
  assert.equal(manifest.preprocess, {resize: 224, crop: 224, mean: MEAN, std: STD, resample: 'bicubic'})
  assert.equal(
    manifest.files.map((f) => f.path),
    [
      'onnx/vision_model.onnx',
      'onnx/text_model.onnx',
      'vocab.json',
      'merges.txt',
      'tokenizer.json',
      'tokenizer_config.json',
      'special_tokens_map.json',
      'config.json',
      'preprocessor_config.json',
    ],
  )
  for (const f of manifest.files) {
    const bytes = await readFile(join(dir, f.path))
    assert.is(f.size, bytes.byteLength, f.path)
    assert.is(f.sha256, createHash('sha256').update(bytes).digest('hex'), f.path)
  }
})

test('the encoders declare the names the manifest gives, with a free batch size', () => {
  assert.equal(vision.inputNames, ['pixel_values'])
  assert.equal(vision.outputNames, ['image_embeds'])
  assert.equal(text.inputNames, ['input_ids'])
  assert.equal(text.outputNames, ['text_embeds'])
})

test('tokenizer.json alone tokenizes as vocab.json + merges.txt do', async () => {
  const only = join(dir, 'tokenizer-json-only')
  await mkdir(only)
  await copyFile(join(dir, 'tokenizer.json'), join(only, 'tokenizer.json'))
  await copyFile(join(dir, 'tokenizer_config.json'), join(only, 'tokenizer_config.json'))
  const fromJson = await loadTokenizer(only)
  const prompts = ['a red and blue car', "it's 2024 — Café 🐱"]
  assert.equal(fromJson.encodeBatch(prompts, 77), tokenizer.encodeBatch(prompts, 77))
})

test('writing again leaves unchanged files untouched', async () => {
  const before = await stat(join(dir, 'onnx/text_model.onnx'))
  assert.equal(await writeToyModel(dir), written)
  const after = await stat(join(dir, 'onnx/text_model.onnx'))
  assert.is(after.mtimeMs, before.mtimeMs)
})

test('the ONNX helper writes reductions that run at opset 17 (axes attribute) and 18 (axes input)', async () => {
  for (const opset of [17, 18]) {
    const g = createGraph('reductions', opset)
    const x = g.input('x', 'float32', ['batch', 4])
    g.output('mean', 'float32', ['batch'])
    g.output('unit', 'float32', ['batch', 4])
    reduce(g, 'ReduceMean', x, [1], false, 'mean')
    l2Normalize(g, x, 1e-12, 'unit')
    const session = await ort.InferenceSession.create(g.encode())
    const out = await session.run({x: new ort.Tensor('float32', Float32Array.from([3, 4, 0, 1, 0, 0, 0, 0]), [2, 4])})
    assert.equal(Array.from(out.mean.data as Float32Array), [2, 0], `opset ${opset}`)
    assertClose(Array.from(out.unit.data as Float32Array), [0.5883484, 0.7844645, 0, 0.1961161, 0, 0, 0, 0])
    await session.release()
  }
})

test('the ONNX helper refuses a value name used twice', () => {
  const g = createGraph('dupes')
  const x = g.input('x', 'float32', [1])
  g.op('Neg', [x], {}, 'y')
  assert.throws(() => g.op('Neg', [x], {}, 'y'), /already taken/)
})

test.after(async () => {
  await Promise.all([vision.release(), text.release()])
  await rm(dir, {recursive: true, force: true})
})

test.run()
