import {mkdtemp, readFile, rm} from 'node:fs/promises'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

import * as ort from 'onnxruntime-node'
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {NSFW_MODEL_DIR, NSFW_ONNX, sha256, writeNsfwModels} from '../../scripts/nsfw/convert.js'
import {createGraph} from '../../scripts/onnx/graph.js'
import {kerasToOnnx, permute, type KerasLayer} from '../../scripts/onnx/keras.js'
import {dequantized} from '../../scripts/onnx/layers.js'

const dir = await mkdtemp(join(tmpdir(), 'mod-nsfw-convert-'))

test.after(async () => {
  await rm(dir, {recursive: true, force: true})
})

async function run(bytes: Uint8Array, feeds: Record<string, ort.Tensor>): Promise<Float32Array> {
  const session = await ort.InferenceSession.create(bytes, {graphOptimizationLevel: 'all', intraOpNumThreads: 1})
  try {
    const out = await session.run(feeds)
    return out[session.outputNames[0]].data as Float32Array
  } finally {
    await session.release()
  }
}

test('permute reorders axes: HWIO [1, 2, 2, 3] to OIHW [3, 2, 1, 2]', () => {
  // Each value is its own flat index in the input: in[0, w, i, o] = w·6 + i·3 + o.
  const q = Uint8Array.from({length: 12}, (_, k) => k)
  const out = permute({q, dims: [1, 2, 2, 3], min: 0, scale: 1}, [3, 2, 0, 1])
  assert.equal(out.dims, [3, 2, 1, 2])
  const expected: number[] = []
  for (let o = 0; o < 3; o++) for (let i = 0; i < 2; i++) for (let w = 0; w < 2; w++) expected.push(w * 6 + i * 3 + o)
  assert.equal(Array.from(out.q), expected)
})

test('dequantised weights are TensorFlow.js\'s float32 values bit for bit, after onnxruntime folds them', async () => {
  // A scale and min like nsfwjs's (float64 numbers of no short binary form); a kernel-sized tensor (every byte
  // value four times: the table and Gather) and a vector small enough to be stored as floats.
  const scale = 0.022262044981414198
  const min = -1.4470329237919228
  const large = {q: Uint8Array.from({length: 1024}, (_, k) => (k * 7) % 256), dims: [4, 256], min, scale}
  const small = {q: Uint8Array.from({length: 32}, (_, k) => 255 - 8 * k), dims: [32], min, scale}
  for (const w of [large, small]) {
    const g = createGraph('dequantize')
    const x = g.input('x', 'float32', w.dims)
    g.op('Add', [x, dequantized(g, 'w', w)], {}, 'y')
    g.output('y', 'float32', w.dims)
    const got = await run(g.encode(), {x: new ort.Tensor('float32', new Float32Array(w.q.length), w.dims)})
    // io_utils decodeWeights: values[i] = v * quantization.scale + quantization.min, stored in a Float32Array.
    const tfjs = Float32Array.from(w.q, (v) => v * w.scale + w.min)
    assert.equal(Array.from(got), Array.from(tfjs), `${w.q.length} values`)
    const twiceRounded = Float32Array.from(w.q, (v) => Math.fround(Math.fround(v * Math.fround(w.scale)) + Math.fround(w.min)))
    assert.ok(twiceRounded.some((v, i) => v !== tfjs[i]), 'the check tells float32 arithmetic from TensorFlow.js\'s')
  }
})

test('"same" average pooling divides by the values inside the image, as TensorFlow does; concatenation is on channels', async () => {
  const layer = (class_name: string, name: string, config: Record<string, unknown>, from: string[]): KerasLayer => ({
    class_name,
    name,
    config,
    inbound_nodes: from.length ? [from.map((f) => [f, 0, 0, {}] as [string, number, number, unknown])] : [],
  })
  const pool = {pool_size: [3, 3], strides: [1, 1], data_format: 'channels_last'}
  const bytes = kerasToOnnx(
    {
      layers: [
        layer('InputLayer', 'in', {batch_input_shape: [null, 3, 3, 1]}, []),
        layer('AveragePooling2D', 'avg', {...pool, padding: 'same'}, ['in']),
        layer('MaxPooling2D', 'max', {...pool, padding: 'same'}, ['in']),
        layer('Concatenate', 'both', {axis: 3}, ['avg', 'max']),
        layer('Flatten', 'flat', {data_format: 'channels_last'}, ['both']),
        layer('Dense', 'dense', {units: 18, use_bias: false, activation: 'linear'}, ['flat']),
      ],
      input_layers: [['in', 0, 0]],
      output_layers: [['dense', 0, 0]],
    },
    // An identity Dense (q 1 on the diagonal, scale 1, min 0) shows the pooled values as they are.
    new Map([['dense/kernel', {q: Uint8Array.from({length: 18 * 18}, (_, k) => (k % 19 === 0 ? 1 : 0)), dims: [18, 18], min: 0, scale: 1}]]),
    {graphName: 'pools', input: 'x', output: 'y', docString: ''},
  )
  const got = await run(bytes, {x: new ort.Tensor('float32', Float32Array.from({length: 9}, (_, k) => k + 1), [1, 3, 3, 1])})
  // Input rows 1 2 3 / 4 5 6 / 7 8 9; output channels-last, [average, max] per position.
  const average = [3, 3.5, 4, 4.5, 5, 5.5, 6, 6.5, 7]
  const max = [5, 6, 6, 8, 9, 9, 8, 9, 9]
  assert.equal(Array.from(got), average.flatMap((a, i) => [a, max[i]]))
})

test('the converter writes the committed models again, byte for byte', async () => {
  const written = await writeNsfwModels(dir)
  const committed = JSON.parse(await readFile(join(NSFW_MODEL_DIR, 'manifest.json'), 'utf8'))
  assert.equal(written, committed)
  assert.equal(
    written.models.map((m) => m.file),
    Object.values(NSFW_ONNX),
  )
  for (const m of written.models) {
    const bytes = await readFile(join(dir, m.file))
    assert.is(sha256(bytes), m.sha256)
    assert.is(bytes.length, m.size)
    assert.is(sha256(await readFile(join(NSFW_MODEL_DIR, m.file))), m.sha256, `${m.file} is the committed one`)
  }
  assert.is(await readFile(join(dir, 'LICENSE'), 'utf8'), await readFile(join(NSFW_MODEL_DIR, 'LICENSE'), 'utf8'))
  assert.is(await readFile(join(dir, 'manifest.json'), 'utf8'), await readFile(join(NSFW_MODEL_DIR, 'manifest.json'), 'utf8'))
})

test('the licence file carries nsfwjs\'s MIT notice and copyright line', async () => {
  const licence = await readFile(join(NSFW_MODEL_DIR, 'LICENSE'), 'utf8')
  assert.match(licence, /^MIT License$/m)
  assert.match(licence, /^Copyright \(c\) 2019 Infinite Red, Inc\.$/m)
})

test.run()
