/**
 * Turns a dynamically quantised model's uint8 matrix weights into int8 ones, exactly: each MatMulInteger whose
 * weight and weight zero point are uint8 constants reads `q - 128` and `zero point - 128` instead, so every
 * dequantised value `(q - zero point) · scale` stays the same (scales are separate inputs and are not touched).
 * The products change kernel, not value: onnxruntime multiplies uint8 activations by uint8 weights with a kernel
 * that widens to 16 bits first, and by int8 weights with its u8s8 kernel, which on a VNNI CPU is exact and
 * faster (int8-weights.ts decides where that holds). Other uses of a weight (a Gather's table, a convolution)
 * keep the uint8 tensor.
 */
import onnxProto from 'onnx-proto'

const {onnx} = onnxProto
const UINT8 = onnx.TensorProto.DataType.UINT8
const INT8 = onnx.TensorProto.DataType.INT8
const SHIFT = 128

type Tensor = onnxProto.onnx.ITensorProto

/** A tensor's uint8 values when it holds them in the file (raw or as int32 fields), else undefined. */
function uint8Values(t: Tensor): Uint8Array | undefined {
  if (t.dataType !== UINT8 || t.dataLocation === onnx.TensorProto.DataLocation.EXTERNAL) return undefined
  const count = (t.dims ?? []).reduce<number>((a, d) => a * Number(d), 1)
  const values = t.rawData && t.rawData.length > 0 ? t.rawData : Uint8Array.from(t.int32Data ?? [])
  return values.length === count ? values : undefined
}

export interface Uint8Weights {
  weight: Tensor
  values: Uint8Array
  zero?: Tensor
  /** The weight zero point's values; 0 when the node names none. */
  zeroValues: Uint8Array
}

/** A MatMulInteger's uint8 weight and weight zero point, when both are constants in the file; else undefined. */
export function uint8MatMulWeights(node: onnxProto.onnx.INodeProto, initializers: ReadonlyMap<string, Tensor>): Uint8Weights | undefined {
  if (node.opType !== 'MatMulInteger' || node.domain) return undefined
  const input = node.input ?? []
  const weight = initializers.get(input[1] ?? '')
  const values = weight && uint8Values(weight)
  const zero = input[3] ? initializers.get(input[3]) : undefined
  const zeroValues = zero ? uint8Values(zero) : Uint8Array.of(0)
  if (!weight || !values || !zeroValues || (input[3] && !zero)) return undefined
  return {weight, values, zero, zeroValues}
}

function shifted(t: Tensor, name: string, values: Uint8Array): Tensor {
  const out = new Int8Array(values.length)
  for (let i = 0; i < values.length; i++) out[i] = values[i] - SHIFT
  return {name, dataType: INT8, dims: t.dims, rawData: new Uint8Array(out.buffer)}
}

export interface SignedResult {
  model: Uint8Array
  /** MatMulInteger nodes that now read int8 weights; 0: the model is returned unchanged. */
  converted: number
}

/** The same model with int8 weights wherever a MatMulInteger reads uint8 constants (module comment). */
export function signedInt8Weights(bytes: Uint8Array): SignedResult {
  const model = onnx.ModelProto.decode(bytes)
  const graph = model.graph
  if (!graph) return {model: bytes, converted: 0}
  const initializers = new Map((graph.initializer ?? []).map((t) => [t.name ?? '', t]))
  const taken = new Set([...initializers.keys(), ...(graph.input ?? []).map((v) => v.name ?? ''), ...(graph.node ?? []).flatMap((n) => n.output ?? [])])
  const fresh = (hint: string): string => {
    let name = hint
    for (let i = 1; taken.has(name); i++) name = `${hint}_${i}`
    taken.add(name)
    return name
  }
  // One int8 copy per uint8 tensor, shared by every MatMulInteger that reads it.
  const copies = new Map<string, string>()
  const added: Tensor[] = []
  const signedCopy = (name: string, values: Uint8Array): string => {
    const known = copies.get(name)
    if (known) return known
    const made = shifted(initializers.get(name) as Tensor, fresh(`${name}_signed`), values)
    added.push(made)
    copies.set(name, made.name as string)
    return made.name as string
  }
  // A missing weight zero point is 0, which for uint8 weights is -128 in int8.
  let implicitZero: string | undefined
  let converted = 0
  for (const node of graph.node ?? []) {
    const found = uint8MatMulWeights(node, initializers)
    if (!found) continue
    const input = [...(node.input ?? [])]
    input[1] = signedCopy(input[1], found.values)
    if (input[3]) input[3] = signedCopy(input[3], found.zeroValues)
    else {
      if (implicitZero === undefined) {
        implicitZero = fresh('weight_zero_point_signed')
        added.push(shifted({dims: []}, implicitZero, Uint8Array.of(0)))
      }
      while (input.length < 3) input.push('')
      input[3] = implicitZero
    }
    node.input = input
    converted++
  }
  if (converted === 0) return {model: bytes, converted}
  const read = new Set((graph.node ?? []).flatMap((n) => n.input ?? []))
  for (const o of graph.output ?? []) read.add(o.name ?? '')
  // A subgraph (If, Loop) may read a weight of the outer graph by name: with one, every original stays.
  const subgraphs = (graph.node ?? []).some((n) => n.attribute?.some((a) => a.g || (a.graphs?.length ?? 0) > 0))
  const dropped = new Set(subgraphs ? [] : [...copies.keys()].filter((name) => !read.has(name)))
  graph.initializer = [...(graph.initializer ?? []).filter((t) => !dropped.has(t.name ?? '')), ...added]
  // An old-style model also lists its initializers as graph inputs: a dropped one must go from there too.
  graph.input = (graph.input ?? []).filter((v) => !dropped.has(v.name ?? ''))
  return {model: onnx.ModelProto.encode(model).finish(), converted}
}
