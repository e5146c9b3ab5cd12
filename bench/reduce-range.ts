/**
 * Reduce-range weights derived from an int8 file, for bench/int8.ts --reduce-range: what `mod` could make at first
 * load from the one int8 file a preset downloads, so that AVX2 CPUs (no VNNI) could run the u8s8 kernel without its
 * saturation. Each MatMulInteger's uint8 weights w (zero point z) become int8 weights round((w - z) / 2) + z'
 * with z' = round((z - 128) / 2), all within [-64, 63], so that VPMADDUBSW's sums of two products stay within 16
 * bits (2 · 255 · 64 <= 32 767); the int32 product is added to itself to restore the scale. Not used by `mod`: its
 * cosine with fp32 misses 0.999 (bench/README.md, "Reduce-range weights on AVX2").
 */
import onnxProto from 'onnx-proto'

import {uint8MatMulWeights} from '../src/lib/model/int8-signed.js'

const {onnx} = onnxProto
const INT8 = onnx.TensorProto.DataType.INT8

type Tensor = onnxProto.onnx.ITensorProto

/** The model with halved int8 weights in every MatMulInteger that reads uint8 [K, N] constants; how many. */
export function halvedWeights(bytes: Uint8Array): {model: Uint8Array; converted: number} {
  const model = onnx.ModelProto.decode(bytes)
  const graph = model.graph
  if (!graph) return {model: bytes, converted: 0}
  const initializers = new Map((graph.initializer ?? []).map((t) => [t.name ?? '', t]))
  const added: Tensor[] = []
  const nodes: onnxProto.onnx.INodeProto[] = []
  let converted = 0
  for (const node of graph.node ?? []) {
    nodes.push(node)
    const found = uint8MatMulWeights(node, initializers)
    if (!found || found.weight.dims?.length !== 2) continue
    const {weight, values, zero, zeroValues} = found
    const input = [...(node.input ?? [])]
    const zeros = Array.from(zeroValues, (z) => z - 128)
    const halfZeros = zeros.map((z) => Math.round(z / 2))
    const cols = Number(weight.dims?.[1])
    const out = new Int8Array(values.length)
    for (let i = 0; i < values.length; i++) {
      const c = zeros.length === 1 ? 0 : i % cols
      out[i] = Math.max(-64, Math.min(63, halfZeros[c] + Math.round((values[i] - 128 - zeros[c]) / 2)))
    }
    const name = `${input[1]}_halved_${converted}`
    added.push({name, dataType: INT8, dims: weight.dims, rawData: new Uint8Array(out.buffer)})
    added.push({name: `${name}_zero_point`, dataType: INT8, dims: zero?.dims ?? [], rawData: new Uint8Array(Int8Array.from(halfZeros).buffer)})
    while (input.length < 4) input.push('')
    input[1] = name
    input[3] = `${name}_zero_point`
    node.input = input
    const product = node.output?.[0] ?? ''
    node.output = [`${product}_half`]
    nodes.push({name: `${name}_doubled`, opType: 'Add', input: [`${product}_half`, `${product}_half`], output: [product]})
    converted++
  }
  graph.node = nodes
  graph.initializer = [...(graph.initializer ?? []), ...added]
  return {model: onnx.ModelProto.encode(model).finish(), converted}
}
