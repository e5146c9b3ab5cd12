/**
 * A TensorFlow.js Keras layers-model (functional `Model` topology + uint8-quantised weights) as an ONNX graph:
 * the layers of MobileNet- and Inception-style image classifiers (Conv2D, DepthwiseConv2D, BatchNormalization,
 * ReLU, Activation, ZeroPadding2D, Add, Concatenate, MaxPooling2D, AveragePooling2D, Flatten, Dense, Dropout).
 * The graph takes NHWC float32 like the Keras model and works in NCHW inside (onnxruntime's CPU kernels are
 * NCHW). Anything outside that list, or a configuration this translation does not reproduce exactly, is an
 * error rather than a silent approximation.
 */
import {attr, createGraph, type Attribute, type GraphBuilder} from './graph.js'
import {batchNorm, clip, conv2d, dequantized, type QuantizedWeight} from './layers.js'

export interface KerasLayer {
  class_name: string
  name: string
  config: Record<string, unknown>
  /** [[[inbound layer name, node index, tensor index, kwargs], …]] */
  inbound_nodes: [string, number, number, unknown?][][]
}

export interface KerasModelConfig {
  layers: KerasLayer[]
  input_layers: [string, number, number][]
  output_layers: [string, number, number][]
}

/** A weight-manifest entry of TensorFlow.js with uint8 quantisation. */
export interface WeightSpec {
  name: string
  shape: number[]
  dtype: string
  quantization?: {min: number; scale: number; dtype: string}
}

/** Splits the weight bytes (all shards concatenated, manifest order) into named quantised tensors. */
export function readQuantizedWeights(specs: WeightSpec[], bytes: Uint8Array): Map<string, QuantizedWeight> {
  const out = new Map<string, QuantizedWeight>()
  let offset = 0
  for (const s of specs) {
    const q = s.quantization
    if (s.dtype !== 'float32' || q?.dtype !== 'uint8') throw new Error(`weight ${s.name}: only uint8-quantised float32 is supported`)
    const count = s.shape.reduce((a, b) => a * b, 1)
    out.set(s.name, {q: bytes.subarray(offset, offset + count), dims: s.shape, min: q.min, scale: q.scale})
    offset += count
  }
  if (offset !== bytes.length) throw new Error(`weights: manifest describes ${offset} bytes, data has ${bytes.length}`)
  return out
}

/** The tensor with its axes reordered: out axis i is input axis perm[i]. */
export function permute(w: QuantizedWeight, perm: number[]): QuantizedWeight {
  const {dims, q} = w
  const outDims = perm.map((p) => dims[p])
  const strides = dims.map((_, i) => dims.slice(i + 1).reduce((a, b) => a * b, 1))
  const outStrides = perm.map((p) => strides[p])
  const out = new Uint8Array(q.length)
  const index = new Array<number>(dims.length).fill(0)
  for (let o = 0; o < q.length; o++) {
    let src = 0
    for (let k = 0; k < index.length; k++) src += index[k] * outStrides[k]
    out[o] = q[src]
    for (let k = index.length - 1; k >= 0; k--) {
      if (++index[k] < outDims[k]) break
      index[k] = 0
    }
  }
  return {...w, q: out, dims: outDims}
}

/** A value of the graph: NCHW feature maps (maybe with a zero padding not yet applied) or [batch, features]. */
interface Value {
  name: string
  rank: 2 | 4
  /** ZeroPadding2D output kept pending: the next convolution adds it to its own pads (ONNX order), no Pad node. */
  pads?: [number, number, number, number]
}

export interface KerasToOnnxOptions {
  graphName: string
  input: string
  output: string
  docString: string
}

const pair = (v: unknown, what: string): [number, number] => {
  if (!Array.isArray(v) || v.length !== 2) throw new Error(`${what}: expected two numbers, got ${JSON.stringify(v)}`)
  return [Number(v[0]), Number(v[1])]
}

/** TensorFlow's "same" padding for stride 1: k - 1 in total, the odd one after. */
function samePads(kernel: [number, number], strides: [number, number], layer: string): [number, number, number, number] {
  if (strides[0] !== 1 || strides[1] !== 1) throw new Error(`${layer}: "same" padding with strides ${strides} is not supported`)
  const [kh, kw] = kernel
  return [Math.floor((kh - 1) / 2), Math.floor((kw - 1) / 2), Math.ceil((kh - 1) / 2), Math.ceil((kw - 1) / 2)]
}

export function kerasToOnnx(model: KerasModelConfig, weights: Map<string, QuantizedWeight>, o: KerasToOnnxOptions): Uint8Array {
  const g = createGraph(o.graphName)
  const values = new Map<string, Value>()
  const used = new Set<string>()

  function weight(layer: string, key: string, perm?: number[], reshape?: (dims: number[]) => number[]): string {
    const name = `${layer}/${key}`
    const w = weights.get(name)
    if (!w) throw new Error(`weight ${name} is missing`)
    used.add(name)
    let t = perm ? permute(w, perm) : w
    if (reshape) t = {...t, dims: reshape(t.dims)}
    return dequantized(g, name, t)
  }

  /** The value as an ONNX name; only a convolution takes a pending zero padding (as its own pads). */
  function materialise(v: Value, layer: string): string {
    if (v.pads) throw new Error(`${layer}: ZeroPadding2D feeds it; only Conv2D and DepthwiseConv2D may follow one`)
    return v.name
  }

  function activation(x: string, kind: unknown, layer: string, rank: 2 | 4): string {
    if (kind === 'softmax' && rank !== 2) throw new Error(`${layer}: softmax is only supported on [batch, features]`)
    switch (kind) {
      case undefined:
      case 'linear':
        return x
      case 'relu':
        return g.op('Relu', [x])
      case 'softmax':
        return g.op('Softmax', [x], {axis: attr.int(-1)})
      default:
        throw new Error(`${layer}: activation ${String(kind)} is not supported`)
    }
  }

  function convPads(input: Value, c: Record<string, unknown>, kernel: [number, number], strides: [number, number], name: string) {
    if (c.padding !== 'same' && c.padding !== 'valid') throw new Error(`${name}: padding ${String(c.padding)}`)
    const own: [number, number, number, number] = c.padding === 'same' ? samePads(kernel, strides, name) : [0, 0, 0, 0]
    const dilation = pair(c.dilation_rate ?? [1, 1], name)
    if (dilation[0] !== 1 || dilation[1] !== 1) throw new Error(`${name}: dilation is not supported`)
    if (c.data_format !== 'channels_last') throw new Error(`${name}: data_format ${String(c.data_format)}`)
    const pending = input.pads ?? [0, 0, 0, 0]
    return own.map((p, i) => p + pending[i]) as [number, number, number, number]
  }

  function translate(layer: KerasLayer, inputs: Value[]): Value {
    const c = layer.config
    const name = layer.name
    const [x] = inputs
    switch (layer.class_name) {
      case 'InputLayer': {
        const shape = c.batch_input_shape as (number | null)[]
        if (shape.length !== 4) throw new Error(`${name}: only NHWC image inputs are supported`)
        const pixels = g.input(o.input, 'float32', ['batch', Number(shape[1]), Number(shape[2]), Number(shape[3])])
        return {name: g.op('Transpose', [pixels], {perm: attr.ints([0, 3, 1, 2])}), rank: 4}
      }
      case 'ZeroPadding2D': {
        if (c.data_format !== 'channels_last') throw new Error(`${name}: data_format ${String(c.data_format)}`)
        const [[t, b], [l, r]] = [pair((c.padding as unknown[])?.[0], name), pair((c.padding as unknown[])?.[1], name)]
        const pending = x.pads ?? [0, 0, 0, 0]
        return {name: x.name, rank: 4, pads: [pending[0] + t, pending[1] + l, pending[2] + b, pending[3] + r]}
      }
      case 'Conv2D':
      case 'DepthwiseConv2D': {
        const kernel = pair(c.kernel_size, name)
        const strides = pair(c.strides, name)
        const pads = convPads(x, c, kernel, strides, name)
        let w: string
        let group = 1
        if (layer.class_name === 'Conv2D') {
          w = weight(name, 'kernel', [3, 2, 0, 1])
        } else {
          const dw = weights.get(`${name}/depthwise_kernel`)
          if (!dw) throw new Error(`weight ${name}/depthwise_kernel is missing`)
          group = dw.dims[2]
          // [kh, kw, in, multiplier] → [in, multiplier, kh, kw] → [in · multiplier, 1, kh, kw]: output channel c·m + j.
          w = weight(name, 'depthwise_kernel', [2, 3, 0, 1], ([i, m, kh, kw]) => [i * m, 1, kh, kw])
        }
        const bias = c.use_bias ? weight(name, 'bias') : undefined
        const y = conv2d(g, x.name, w, {kernel, strides, pads, group}, bias)
        return {name: activation(y, c.activation, name, 4), rank: 4}
      }
      case 'BatchNormalization': {
        if (c.axis !== -1 && c.axis !== 3) throw new Error(`${name}: axis ${String(c.axis)}`)
        const input = materialise(x, name)
        const channels = weights.get(`${name}/moving_mean`)?.dims[0]
        if (channels === undefined) throw new Error(`weight ${name}/moving_mean is missing`)
        // Without `scale` (InceptionV3's) Keras multiplies by nothing, without `center` adds nothing: 1 and 0.
        const y = batchNorm(g, input, {
          gamma: c.scale === false ? g.floats(new Float32Array(channels).fill(1), [channels], 'gamma') : weight(name, 'gamma'),
          beta: c.center === false ? g.floats(new Float32Array(channels), [channels], 'beta') : weight(name, 'beta'),
          mean: weight(name, 'moving_mean'),
          variance: weight(name, 'moving_variance'),
          epsilon: Number(c.epsilon),
        })
        return {name: y, rank: x.rank}
      }
      case 'ReLU': {
        if (Number(c.negative_slope ?? 0) !== 0 || Number(c.threshold ?? 0) !== 0) throw new Error(`${name}: leaky or thresholded ReLU`)
        const input = materialise(x, name)
        const max = c.max_value
        return {name: max === null || max === undefined ? g.op('Relu', [input]) : clip(g, input, 0, Number(max)), rank: x.rank}
      }
      case 'Activation':
        return {name: activation(materialise(x, name), c.activation, name, x.rank), rank: x.rank}
      case 'Add':
        return {name: inputs.map((v) => materialise(v, name)).reduce((a, b) => g.op('Add', [a, b])), rank: x.rank}
      case 'Concatenate': {
        if (c.axis !== -1 && c.axis !== 3) throw new Error(`${name}: axis ${String(c.axis)}`)
        if (inputs.some((v) => v.rank !== 4)) throw new Error(`${name}: only feature maps are concatenated`)
        // Channels-last axis 3 is axis 1 of the NCHW maps inside the graph.
        return {name: g.op('Concat', inputs.map((v) => materialise(v, name)), {axis: attr.int(1)}), rank: 4}
      }
      case 'MaxPooling2D':
      case 'AveragePooling2D': {
        if (c.data_format !== 'channels_last') throw new Error(`${name}: data_format ${String(c.data_format)}`)
        if (c.padding !== 'same' && c.padding !== 'valid') throw new Error(`${name}: padding ${String(c.padding)}`)
        const kernel = pair(c.pool_size, name)
        const strides = pair(c.strides, name)
        const pads = c.padding === 'same' ? samePads(kernel, strides, name) : [0, 0, 0, 0]
        // TensorFlow's "same" average pooling divides by the values inside the image only: ONNX's
        // count_include_pad 0. Max pooling never picks a padded position.
        const op = layer.class_name === 'MaxPooling2D' ? 'MaxPool' : 'AveragePool'
        const extra: Record<string, Attribute> = op === 'AveragePool' ? {count_include_pad: attr.int(0)} : {}
        const y = g.op(op, [materialise(x, name)], {kernel_shape: attr.ints(kernel), strides: attr.ints(strides), pads: attr.ints(pads), ...extra})
        return {name: y, rank: 4}
      }
      case 'Flatten': {
        // Keras flattens channels-last: back to NHWC first so the feature order matches the Dense weights.
        const nhwc = g.op('Transpose', [materialise(x, name)], {perm: attr.ints([0, 2, 3, 1])})
        return {name: g.op('Flatten', [nhwc], {axis: attr.int(1)}), rank: 2}
      }
      case 'Dense': {
        if (x.rank !== 2) throw new Error(`${name}: Dense on a rank-${x.rank} value`)
        const operands = [x.name, weight(name, 'kernel')]
        if (c.use_bias) operands.push(weight(name, 'bias'))
        return {name: activation(g.op('Gemm', operands), c.activation, name, 2), rank: 2}
      }
      case 'Dropout':
        return x
      default:
        throw new Error(`layer ${name}: ${layer.class_name} is not supported`)
    }
  }

  for (const layer of model.layers) {
    const inbound = layer.inbound_nodes
    if (inbound.length > 1) throw new Error(`layer ${layer.name} is shared; not supported`)
    const inputs = (inbound[0] ?? []).map(([from]) => {
      const v = values.get(from)
      if (!v) throw new Error(`layer ${layer.name}: input ${from} is not computed yet`)
      return v
    })
    values.set(layer.name, translate(layer, inputs))
  }
  if (model.output_layers.length !== 1) throw new Error('only single-output models are supported')
  const out = values.get(model.output_layers[0][0])
  if (!out || out.rank !== 2) throw new Error('the output must be [batch, classes]')
  const unused = [...weights.keys()].filter((k) => !used.has(k))
  if (unused.length > 0) throw new Error(`weights not used by any layer: ${unused.join(', ')}`)
  g.op('Identity', [out.name], {}, o.output)
  return finish(g, o, model)
}

function finish(g: GraphBuilder, o: KerasToOnnxOptions, model: KerasModelConfig): Uint8Array {
  const last = model.layers.find((l) => l.name === model.output_layers[0][0])
  const units = Number(last?.config.units)
  if (!Number.isInteger(units)) throw new Error('the output layer must be a Dense layer')
  g.output(o.output, 'float32', ['batch', units])
  return g.encode({producer: 'mod scripts/onnx/keras', docString: o.docString})
}
