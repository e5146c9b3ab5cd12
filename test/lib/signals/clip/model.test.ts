import {mkdtemp, rm, writeFile} from 'node:fs/promises'
import {availableParallelism, tmpdir} from 'node:os'
import {join} from 'node:path'
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {writeToyModel} from '../../../../scripts/fixtures.js'
import {attr, createGraph, DATA_TYPE} from '../../../../scripts/onnx/graph.js'
import {l2Normalize, reduce} from '../../../../scripts/onnx/layers.js'
import {TOY_COLOUR_IDS} from '../../../../scripts/onnx/toy-clip.js'
import {openClip} from '../../../../src/lib/signals/clip/model.js'
import {readManifestFile} from '../../../../src/lib/model/manifest.js'
import type {Manifest} from '../../../../src/lib/model/manifest-types.js'
import {defaultThreads} from '../../../../src/lib/model/threads.js'
import {rejection} from '../../../helpers/errors.js'

const root = await mkdtemp(join(tmpdir(), 'mod-clip-'))
const toyDir = join(root, 'toy')
const toy = await writeToyModel(toyDir)
const SIZE = toy.preprocess.crop
const PLANE = SIZE * SIZE

/** A solid-colour image as the encoder receives it: CLIP mean/std normalised, [3, crop, crop]. */
function solid(rgb: [number, number, number], m: Manifest = toy): Float32Array {
  const t = new Float32Array(3 * PLANE)
  for (let c = 0; c < 3; c++) t.fill((rgb[c] - m.preprocess.mean[c]) / m.preprocess.std[c], c * PLANE, (c + 1) * PLANE)
  return t
}

function batch(...images: Float32Array[]): Float32Array {
  const out = new Float32Array(images.length * 3 * PLANE)
  images.forEach((img, i) => out.set(img, i * 3 * PLANE))
  return out
}

/** The toy image encoder: the unit vector of the per-channel means in dims 0..2. */
function expectedImage(rgb: [number, number, number]): number[] {
  const v = rgb.map((x, c) => (x - toy.preprocess.mean[c]) / toy.preprocess.std[c])
  const norm = Math.hypot(...v)
  return [...v.map((x) => x / norm), 0, 0, 0, 0, 0]
}

function close(actual: Float32Array, expected: number[], label: string): void {
  assert.is(actual.length, expected.length, `${label}: length`)
  actual.forEach((x, i) => assert.ok(Math.abs(x - expected[i]) < 1e-4, `${label}[${i}]: ${x} ≠ ${expected[i]}`))
}

const E = (i: number): number[] => Array.from({length: 8}, (_, k) => (k === i ? 1 : 0))

test('embeds a batch of images as unit vectors of the toy model', async () => {
  const clip = await openClip(toyDir, toy, {threads: 1})
  try {
    const out = await clip.embedImages(batch(solid([1, 0, 0]), solid([0, 1, 0]), solid([0, 0, 1])), 3)
    assert.is(out.length, 3)
    close(out[0], expectedImage([1, 0, 0]), 'red')
    close(out[1], expectedImage([0, 1, 0]), 'green')
    close(out[2], expectedImage([0, 0, 1]), 'blue')
    assert.is(clip.id, 'toy-clip')
    assert.equal(await clip.embedImages(new Float32Array(0), 0), [])
  } finally {
    await clip.close()
  }
})

test('returned embeddings are copies, not views of one output buffer', async () => {
  const clip = await openClip(toyDir, toy, {threads: 1})
  try {
    const [a, b] = await clip.embedImages(batch(solid([1, 0, 0]), solid([0, 0, 1])), 2)
    assert.ok(a.buffer !== b.buffer)
    assert.is(a.length, 8)
  } finally {
    await clip.close()
  }
})

test('refuses a pixel buffer that does not hold n images', async () => {
  const clip = await openClip(toyDir, toy, {threads: 1})
  try {
    assert.match((await rejection(clip.embedImages(new Float32Array(10), 1))).message, /expected 1 × 3 × 224 × 224/)
  } finally {
    await clip.close()
  }
})

test('embeds texts; a prompt without colour words is the zero vector', async () => {
  const clip = await openClip(toyDir, toy, {threads: 1})
  try {
    const out = await clip.embedTexts(['red', 'a photo', 'green and blue'])
    close(out[0], E(0), 'red')
    close(out[1], Array(8).fill(0), 'a photo')
    close(out[2], [0, Math.SQRT1_2, Math.SQRT1_2, 0, 0, 0, 0, 0], 'green and blue')
    assert.equal(await clip.embedTexts([]), [])
  } finally {
    await clip.close()
  }
})

test('embeds more texts than one text batch, in order', async () => {
  const clip = await openClip(toyDir, toy, {threads: 1})
  try {
    const words = ['red', 'green', 'blue']
    const texts = Array.from({length: 70}, (_, i) => words[i % 3])
    const out = await clip.embedTexts(texts)
    assert.is(out.length, 70)
    out.forEach((v, i) => close(v, E(i % 3), `text ${i}`))
  } finally {
    await clip.close()
  }
})

test('releaseText frees the text encoder and a later embedTexts loads it again', async () => {
  const clip = await openClip(toyDir, toy, {threads: 1})
  try {
    close((await clip.embedTexts(['blue']))[0], E(2), 'before release')
    await clip.releaseText()
    await clip.releaseText()
    close((await clip.embedTexts(['green']))[0], E(1), 'after release')
  } finally {
    await clip.close()
  }
})

test('images embed with only the image session: a missing text encoder is not opened', async () => {
  const dir = join(root, 'no-text')
  await writeToyModel(dir)
  await rm(join(dir, 'onnx/text_model.onnx'))
  const clip = await openClip(dir, toy, {threads: 1})
  try {
    close((await clip.embedImages(solid([1, 0, 0]), 1))[0], expectedImage([1, 0, 0]), 'red')
    const err = await rejection(clip.embedTexts(['red']))
    assert.is(err.code, 'invalid_config')
    assert.match(err.message, /text_model\.onnx/)
  } finally {
    await clip.close()
  }
})

/** The toy image encoder with its batch dimension fixed to 1, as some exports have it. */
function fixedBatchVision(): Uint8Array {
  const g = createGraph('toy_fixed_batch')
  const pixels = g.input('pixel_values', 'float32', [1, 3, SIZE, SIZE])
  g.output('image_embeds', 'float32', [1, 8])
  const means = reduce(g, 'ReduceMean', pixels, [2, 3], false)
  const pad = new Float32Array(24)
  for (let i = 0; i < 3; i++) pad[i * 8 + i] = 1
  l2Normalize(g, g.op('MatMul', [means, g.floats(pad, [3, 8], 'pad')]), 1e-12, 'image_embeds')
  return g.encode()
}

test('a model with a fixed batch of 1 runs image by image', async () => {
  const dir = join(root, 'fixed-batch')
  await writeToyModel(dir)
  await writeFile(join(dir, 'onnx/vision_model.onnx'), fixedBatchVision())
  // The toy's manifest as written: the sizes it records are the toy's files', not this one's.
  const clip = await openClip(dir, await readManifestFile(join(dir, 'manifest.json')), {threads: 1})
  try {
    const out = await clip.embedImages(batch(solid([1, 0, 0]), solid([0, 0, 1])), 2)
    close(out[0], expectedImage([1, 0, 0]), 'red')
    close(out[1], expectedImage([0, 0, 1]), 'blue')
  } finally {
    await clip.close()
  }
})

/** A text encoder taking int32 input_ids plus an attention_mask that zeroes the masked tokens. */
function int32MaskedText(): Uint8Array {
  const g = createGraph('toy_masked_text')
  const ids = g.input('input_ids', 'int32', ['batch', 77])
  const mask = g.input('attention_mask', 'int32', ['batch', 77])
  g.output('text_embeds', 'float32', ['batch', 8])
  const ids64 = g.op('Cast', [ids], {to: attr.int(DATA_TYPE.int64)})
  const column = g.op('Unsqueeze', [ids64, g.int64s([2], [1], 'axes')])
  const matches = g.op('Cast', [g.op('Equal', [column, g.int64s(TOY_COLOUR_IDS, [3], 'colours')])], {to: attr.int(DATA_TYPE.float32)})
  const keep = g.op('Unsqueeze', [g.op('Cast', [mask], {to: attr.int(DATA_TYPE.float32)}), g.int64s([2], [1], 'axes2')])
  const counts = reduce(g, 'ReduceSum', g.op('Mul', [matches, keep]), [1], false)
  const pad = new Float32Array(24)
  for (let i = 0; i < 3; i++) pad[i * 8 + i] = 1
  l2Normalize(g, g.op('MatMul', [counts, g.floats(pad, [3, 8], 'pad')]), 1e-12, 'text_embeds')
  return g.encode()
}

test('feeds an attention mask and int32 ids to a text encoder that takes them', async () => {
  const dir = join(root, 'masked')
  await writeToyModel(dir)
  await writeFile(join(dir, 'onnx/text_model.onnx'), int32MaskedText())
  // The toy's manifest as written: the sizes it records are the toy's files', not this one's.
  const clip = await openClip(dir, await readManifestFile(join(dir, 'manifest.json')), {threads: 1})
  try {
    const [red, none] = await clip.embedTexts(['red', 'a photo'])
    close(red, E(0), 'red')
    close(none, Array(8).fill(0), 'a photo')
  } finally {
    await clip.close()
  }
})

test('without a thread count, the runner picks one no larger than the CPUs available', async () => {
  const threads = await defaultThreads()
  assert.ok(Number.isInteger(threads) && threads >= 1 && threads <= availableParallelism(), String(threads))
  const clip = await openClip(toyDir, toy)
  try {
    close((await clip.embedImages(solid([0, 1, 0]), 1))[0], expectedImage([0, 1, 0]), 'green')
  } finally {
    await clip.close()
  }
})

test('a manifest naming an output the model lacks is a configuration error', async () => {
  const wrong: Manifest = {...toy, image: {input: 'pixel_values', output: 'pooled'}}
  const err = await rejection(openClip(toyDir, wrong, {threads: 1}))
  assert.is(err.code, 'invalid_config')
  assert.match(err.message, /no output 'pooled'/)
})

test('an unreadable encoder file is a configuration error naming it', async () => {
  const dir = join(root, 'corrupt')
  await writeToyModel(dir)
  await writeFile(join(dir, 'onnx/vision_model.onnx'), 'not an onnx file')
  const err = await rejection(openClip(dir, toy, {threads: 1}))
  assert.is(err.code, 'invalid_config')
  assert.match(err.message, /vision_model\.onnx/)
})

test.after(async () => {
  await rm(root, {recursive: true, force: true})
})

test.run()
