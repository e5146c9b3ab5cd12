/** Building blocks made of several ONNX nodes, shared by the model builders. */
import {attr, DATA_TYPE, floatTensor, type GraphBuilder, uint8Tensor} from './graph.js'

export type ReduceOp = 'ReduceSum' | 'ReduceMean' | 'ReduceL2' | 'ReduceMax' | 'ReduceMin' | 'ReduceProd'

/** ReduceSum takes its axes as an input from opset 13, the other reductions from opset 18. */
function axesAsInput(op: ReduceOp, opset: number): boolean {
  return opset >= (op === 'ReduceSum' ? 13 : 18)
}

export function reduce(
  g: GraphBuilder,
  op: ReduceOp,
  x: string,
  axes: number[],
  keepdims: boolean,
  output?: string,
): string {
  const keep = {keepdims: attr.int(keepdims ? 1 : 0)}
  return axesAsInput(op, g.opset)
    ? g.op(op, [x, g.int64s(axes, [axes.length], 'axes')], keep, output)
    : g.op(op, [x], {...keep, axes: attr.ints(axes)}, output)
}

/** x / max(‖x‖₂, eps) along the last axis: a zero vector stays zero instead of becoming NaN. */
export function l2Normalize(g: GraphBuilder, x: string, eps: number, output?: string): string {
  const norm = reduce(g, 'ReduceL2', x, [-1], true)
  const safe = g.op('Max', [norm, g.floats([eps], [], 'eps')])
  return g.op('Div', [x, safe], {}, output)
}

/** A deterministic stream of random weights: the same seed gives the same values in the same order. */
export interface WeightSource {
  /** `count` values drawn from N(0, std²). */
  normal(count: number, std: number): Float32Array
}

/**
 * sfc32 (a small, fast 32-bit generator that passes PractRand) feeding Box-Muller: ~150 M values in a few
 * seconds, which is what a full-size random-weight CLIP needs.
 */
export function seededWeights(seed: number): WeightSource {
  let a = 0x9e3779b9
  let b = 0x243f6a88
  let c = 0xb7e15162
  let d = seed >>> 0
  const next = (): number => {
    const t = (((a + b) | 0) + d) | 0
    d = (d + 1) | 0
    a = b ^ (b >>> 9)
    b = (c + (c << 3)) | 0
    c = (c << 21) | (c >>> 11)
    c = (c + t) | 0
    return (t >>> 0) / 4294967296
  }
  for (let i = 0; i < 16; i++) next()
  return {
    normal(count, std) {
      const out = new Float32Array(count)
      for (let i = 0; i < count; i += 2) {
        const radius = std * Math.sqrt(-2 * Math.log(1 - next()))
        const angle = 2 * Math.PI * next()
        out[i] = radius * Math.cos(angle)
        if (i + 1 < count) out[i + 1] = radius * Math.sin(angle)
      }
      return out
    },
  }
}

/** Standard deviation of the random embeddings (class, position and token), CLIP's initialiser scale. */
export const EMBEDDING_STD = 0.02

/**
 * Random projections are N(0, 1/fan_in) (LeCun): each keeps its input's scale, so attention is not uniform
 * and different inputs get clearly different embeddings (a mean cosine near 0.78 between random images at
 * ViT-B/32 size). With CLIP's own small initial scales every input would get nearly the same embedding
 * (cosine > 0.98), which would hide quantisation error.
 */
export function projectionStd(fanIn: number): number {
  return 1 / Math.sqrt(fanIn)
}

/** torch.nn.LayerNorm's default epsilon, which CLIP keeps. */
export const LAYER_NORM_EPS = 1e-5

/** A named float32 parameter of the model, as in the Hugging Face state dict. */
function parameter(g: GraphBuilder, name: string, values: Float32Array, dims: number[]): string {
  return g.initializer(floatTensor(name, values, dims))
}

/**
 * torch.nn.Linear as MatMul (+ Add): the weight is stored [in, out], the transpose of torch's layout, as the
 * Hugging Face ONNX exports store it. Random weights; biases start at zero as in CLIP's initialisation.
 */
export function linear(
  g: GraphBuilder,
  w: WeightSource,
  x: string,
  name: string,
  inDim: number,
  outDim: number,
  bias = true,
): string {
  const weight = w.normal(inDim * outDim, projectionStd(inDim))
  const product = g.op('MatMul', [x, parameter(g, `${name}.weight`, weight, [inDim, outDim])])
  if (!bias) return product
  return g.op('Add', [product, parameter(g, `${name}.bias`, new Float32Array(outDim), [outDim])])
}

/** LayerNormalization over the last axis (an ONNX op from opset 17), with gamma 1 and beta 0. */
export function layerNorm(g: GraphBuilder, x: string, name: string, width: number): string {
  if (g.opset < 17) throw new Error(`LayerNormalization needs opset 17 (graph has ${g.opset})`)
  const gamma = parameter(g, `${name}.weight`, new Float32Array(width).fill(1), [width])
  const beta = parameter(g, `${name}.bias`, new Float32Array(width), [width])
  return g.op('LayerNormalization', [x, gamma, beta], {axis: attr.int(-1), epsilon: attr.float(LAYER_NORM_EPS)})
}

/** CLIP's activation: x · sigmoid(1.702 x). */
export function quickGelu(g: GraphBuilder, x: string): string {
  return g.op('Mul', [x, g.op('Sigmoid', [g.op('Mul', [x, g.floats([1.702], [], 'quick_gelu')])])])
}

export interface TransformerSize {
  width: number
  heads: number
  mlpWidth: number
}

/**
 * Multi-head self-attention over x [batch, seq, width], as CLIPAttention: q scaled by 1/√head_dim, an optional
 * additive mask [seq, seq] on the scores, softmax, then the output projection.
 */
export function selfAttention(
  g: GraphBuilder,
  w: WeightSource,
  x: string,
  name: string,
  size: TransformerSize,
  mask?: string,
): string {
  const {width, heads} = size
  const headDim = width / heads
  if (!Number.isInteger(headDim)) throw new Error(`width ${width} does not split into ${heads} heads`)
  // Reshape's 0 keeps the batch and sequence sizes of the input, so both stay free.
  const split = g.int64s([0, 0, heads, headDim], [4], 'heads_shape')
  const project = (p: string, perm: number[]): string =>
    g.op('Transpose', [g.op('Reshape', [linear(g, w, x, `${name}.${p}_proj`, width, width), split])], {
      perm: attr.ints(perm),
    })
  const q = project('q', [0, 2, 1, 3])
  const k = project('k', [0, 2, 3, 1])
  const v = project('v', [0, 2, 1, 3])
  const scaled = g.op('Mul', [q, g.floats([1 / Math.sqrt(headDim)], [], 'attention_scale')])
  const scores = g.op('MatMul', [scaled, k])
  const probs = g.op('Softmax', [mask ? g.op('Add', [scores, mask]) : scores], {axis: attr.int(-1)})
  const context = g.op('Transpose', [g.op('MatMul', [probs, v])], {perm: attr.ints([0, 2, 1, 3])})
  const merged = g.op('Reshape', [context, g.int64s([0, 0, width], [3], 'merge_shape')])
  return linear(g, w, merged, `${name}.out_proj`, width, width)
}

/** One pre-LayerNorm encoder layer of CLIP (CLIPEncoderLayer): x + attn(ln1(x)), then + mlp(ln2(·)). */
export function encoderLayer(
  g: GraphBuilder,
  w: WeightSource,
  x: string,
  name: string,
  size: TransformerSize,
  mask?: string,
): string {
  const {width, mlpWidth} = size
  const normed = layerNorm(g, x, `${name}.layer_norm1`, width)
  const attended = g.op('Add', [x, selfAttention(g, w, normed, `${name}.self_attn`, size, mask)])
  const normedAgain = layerNorm(g, attended, `${name}.layer_norm2`, width)
  const hidden = quickGelu(g, linear(g, w, normedAgain, `${name}.mlp.fc1`, width, mlpWidth))
  return g.op('Add', [attended, linear(g, w, hidden, `${name}.mlp.fc2`, mlpWidth, width)])
}

/** Parameters of one encoder layer: four projections with bias, two LayerNorms, a two-matrix MLP. */
export function encoderLayerParameters({width, mlpWidth}: TransformerSize): number {
  return 4 * (width * width + width) + 2 * (2 * width) + (width * mlpWidth + mlpWidth) + (mlpWidth * width + width)
}

// ---------- convolutional networks ----------

/** A weight stored as uint8 with one affine map per tensor: value = min + q · scale (TensorFlow.js's quantisation). */
export interface QuantizedWeight {
  q: Uint8Array
  dims: number[]
  min: number
  scale: number
}

/**
 * The float32 value of a uint8-quantised weight, exactly as TensorFlow.js computes it (io_utils decodeWeights:
 * `q * scale + min` on JavaScript numbers, stored in a Float32Array; the same in float32 arithmetic rounds twice
 * and differs in the last bit for most values). The file keeps one byte per value and the 256 possible floats;
 * a Gather picks them, and onnxruntime's constant folding turns it into a float32 initializer at load. A tensor
 * whose floats take no more room than its bytes and the table (a small bias or normalisation vector) is
 * stored as floats.
 */
export function dequantized(g: GraphBuilder, name: string, w: QuantizedWeight): string {
  const table = Float32Array.from({length: 256}, (_, q) => q * w.scale + w.min)
  if (w.q.length * 4 <= w.q.length + table.byteLength) {
    return g.initializer(floatTensor(name, Float32Array.from(w.q, (q) => table[q]), w.dims))
  }
  const stored = g.initializer(uint8Tensor(name, w.q, w.dims))
  const indices = g.op('Cast', [stored], {to: attr.int(DATA_TYPE.int32)})
  return g.op('Gather', [g.floats(table, [256], 'table'), indices], {axis: attr.int(0)})
}

export interface ConvOptions {
  kernel: [number, number]
  strides: [number, number]
  /** ONNX order: [top, left, bottom, right]. */
  pads: [number, number, number, number]
  /** Channels per group are input / group: group = input channels makes a depthwise convolution. */
  group?: number
}

/** Conv over NCHW with an OIHW weight and an optional bias. */
export function conv2d(g: GraphBuilder, x: string, weight: string, o: ConvOptions, bias?: string): string {
  return g.op('Conv', bias ? [x, weight, bias] : [x, weight], {
    kernel_shape: attr.ints(o.kernel),
    strides: attr.ints(o.strides),
    pads: attr.ints(o.pads),
    group: attr.int(o.group ?? 1),
  })
}

export interface BatchNormParameters {
  gamma: string
  beta: string
  mean: string
  variance: string
  epsilon: number
}

/** Inference-mode batch normalisation over the channel axis of NCHW (onnxruntime folds it into a preceding Conv). */
export function batchNorm(g: GraphBuilder, x: string, p: BatchNormParameters): string {
  return g.op('BatchNormalization', [x, p.gamma, p.beta, p.mean, p.variance], {epsilon: attr.float(p.epsilon)})
}

/** min(max(x, lo), hi): ReLU6 is clip(x, 0, 6); onnxruntime fuses it into the preceding Conv. */
export function clip(g: GraphBuilder, x: string, lo: number, hi: number): string {
  return g.op('Clip', [x, g.floats([lo], [], 'clip_min'), g.floats([hi], [], 'clip_max')])
}
