import ort from 'onnxruntime-node'
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {kerasToOnnx, type KerasLayer, type KerasModelConfig} from '../../scripts/onnx/keras.js'
import type {QuantizedWeight} from '../../scripts/onnx/layers.js'

const EPS = 0.001

function layer(class_name: string, name: string, config: Record<string, unknown>, from?: string): KerasLayer {
  return {class_name, name, config, inbound_nodes: from ? [[[from, 0, 0, {}]]] : []}
}

/** Quantised weights: each value is min + q · scale. */
function weight(q: number[], dims: number[], min = 0, scale = 1): QuantizedWeight {
  return {q: Uint8Array.from(q), dims, min, scale}
}

// Input 4x4x1 → ZeroPadding2D (bottom/right 1) → Conv2D 2 filters 3x3 stride 2 → BatchNorm → ReLU6 → Flatten (2x2x2,
// channels-last order) → Dense 2 softmax.
const model: KerasModelConfig = {
  layers: [
    layer('InputLayer', 'in', {batch_input_shape: [null, 4, 4, 1]}),
    layer('ZeroPadding2D', 'pad', {padding: [[0, 1], [0, 1]], data_format: 'channels_last'}, 'in'),
    layer('Conv2D', 'conv', {kernel_size: [3, 3], strides: [2, 2], padding: 'valid', data_format: 'channels_last', dilation_rate: [1, 1], activation: 'linear', use_bias: false}, 'pad'),
    layer('BatchNormalization', 'bn', {axis: -1, epsilon: EPS, center: true, scale: true}, 'conv'),
    layer('ReLU', 'relu', {max_value: 6, negative_slope: 0, threshold: 0}, 'bn'),
    layer('Flatten', 'flat', {data_format: 'channels_last'}, 'relu'),
    layer('Dense', 'dense', {units: 2, activation: 'softmax', use_bias: true}, 'flat'),
  ],
  input_layers: [['in', 0, 0]],
  output_layers: [['dense', 0, 0]],
}

// Kernel HWIO [3, 3, 1, 2]: filter 0 sums the window, filter 1 takes twice its top-left value.
const kernel = Array.from({length: 18}, (_, k) => (k % 2 === 0 ? 1 : k === 1 ? 2 : 0))
// Dense kernel [8, 2]: logit 0 weighs flattened feature i by 0.05 i, logit 1 is 0; bias (-4, 0).
const dense = Array.from({length: 16}, (_, k) => (k % 2 === 0 ? k / 2 : 0))
const weights = new Map<string, QuantizedWeight>([
  ['conv/kernel', weight(kernel, [3, 3, 1, 2])],
  ['bn/gamma', weight([1, 2], [2])],
  ['bn/beta', weight([0, 0], [2], -1)],
  ['bn/moving_mean', weight([0, 1], [2])],
  ['bn/moving_variance', weight([0, 0], [2], 1 - EPS)],
  ['dense/kernel', weight(dense, [8, 2], 0, 0.05)],
  ['dense/bias', weight([0, 4], [2], -4)],
])

/** The same network computed directly in channels-last order, in float64. */
function reference(x: number[]): number[] {
  const at = (i: number, j: number) => (i < 4 && j < 4 ? x[i * 4 + j] : 0)
  const features: number[] = []
  for (const [oi, oj] of [
    [0, 0],
    [0, 1],
    [1, 0],
    [1, 1],
  ]) {
    let sum = 0
    for (let di = 0; di < 3; di++) for (let dj = 0; dj < 3; dj++) sum += at(2 * oi + di, 2 * oj + dj)
    const conv = [sum, 2 * at(2 * oi, 2 * oj)]
    // gamma (1, 2), beta (-1, -1), mean (0, 1), variance + eps = 1
    const bn = [conv[0] - 1, 2 * (conv[1] - 1) - 1]
    features.push(...bn.map((v) => Math.min(6, Math.max(0, v))))
  }
  const logit = 0.05 * features.reduce((a, f, i) => a + i * f, 0) - 4
  const p = 1 / (1 + Math.exp(-logit))
  return [p, 1 - p]
}

test('a small Keras model (padding, strided conv, batch norm, ReLU6, flatten, dense softmax) computes as Keras would', async () => {
  const bytes = kerasToOnnx(model, weights, {graphName: 'tiny', input: 'pixels', output: 'probabilities', docString: ''})
  const session = await ort.InferenceSession.create(bytes)
  // The first reaches both ReLU6 bounds (a window sum over 7, negative values) and feeds filter 1; about 0.53 / 0.09.
  const inputs = [Array.from({length: 16}, (_, k) => ([0, 2, 8, 10].includes(k) ? 1.5 : (k % 5) * 0.2)), Array.from({length: 16}, (_, k) => (k === 15 ? 3 : 0.05 * k))]
  const out = await session.run({pixels: new ort.Tensor('float32', Float32Array.from(inputs.flat()), [2, 4, 4, 1])})
  const probs = Array.from(out.probabilities.data as Float32Array)
  assert.equal(out.probabilities.dims, [2, 2])
  inputs.forEach((x, n) => {
    const want = reference(x)
    for (let k = 0; k < 2; k++) assert.ok(Math.abs(probs[2 * n + k] - want[k]) < 1e-5, `image ${n} class ${k}: ${probs[2 * n + k]} vs ${want[k]}`)
  })
  await session.release()
})

test('refuses what it would not translate exactly: a padding feeding anything but a convolution, unused weights', () => {
  const padThenFlatten: KerasModelConfig = {
    layers: [model.layers[0], model.layers[1], layer('Flatten', 'flat', {}, 'pad'), layer('Dense', 'dense', {units: 2, use_bias: false}, 'flat')],
    input_layers: [['in', 0, 0]],
    output_layers: [['dense', 0, 0]],
  }
  const options = {graphName: 't', input: 'pixels', output: 'probabilities', docString: ''}
  assert.throws(() => kerasToOnnx(padThenFlatten, weights, options), /flat: ZeroPadding2D feeds it/)
  const extra = new Map([...weights, ['stray/kernel', weight([0], [1])]])
  assert.throws(() => kerasToOnnx(model, extra, options), /weights not used by any layer: stray\/kernel/)
})

test.run()
