/**
 * Dynamic 8-bit quantisation of an fp32 ONNX model, in TypeScript (what onnxruntime's Python `quantize_dynamic`
 * does for MatMul and Gather): weights become uint8 with a scale per output column, activations are quantised
 * to uint8 at run time. Every MatMul whose B input is a constant [K, N] initializer becomes
 * DynamicQuantizeLinear → MatMulInteger → Cast → Mul(scales), standard ops that onnxruntime's CPU provider
 * fuses into its DynamicQuantizeMatMul kernel; every Gather from a constant table (token embeddings) reads
 * int8 rows and dequantises them. Convolutions stay fp32.
 *
 * Why uint8 weights (zero point 128) rather than int8: onnxruntime multiplies uint8 activations by int8 weights
 * on AVX2 CPUs without VNNI with an instruction that adds pairs of products into 16 bits and saturates there
 * (255 · 127 · 2 > 32 767), so the same int8 file gave other embeddings there (the tiny test encoders' centred
 * cosine with fp32 fell to 0.92). uint8 × uint8 takes a kernel that widens first: the same numbers on every x86
 * CPU, and the format of the int8 image encoders of the presets (transformers.js stores their weights as uint8).
 */
import {
  attr,
  DATA_TYPE,
  decodeModel,
  encodeModel,
  floatTensor,
  floatValues,
  int8Tensor,
  uint8Tensor,
  type Node,
  type Tensor,
} from './graph.js'

const INT8_MAX = 127
/** The uint8 weights are the symmetric int8 ones shifted by this zero point (1..255, centred on 128). */
const WEIGHT_ZERO_POINT = 128
/** DynamicQuantizeLinear's first opset. */
const MIN_OPSET = 11

interface Quantized {
  values: Int8Array
  /** One scale per column of a [K, N] matrix, or one for the whole tensor. */
  scales: Float32Array
}

/** Symmetric int8: q = round(x / scale) with scale = max|x| / `top` per column (zero point 0). */
function quantizeColumns(values: Float32Array, rows: number, cols: number, top: number): Quantized {
  const scales = new Float32Array(cols)
  for (let r = 0; r < rows; r++) {
    const base = r * cols
    for (let c = 0; c < cols; c++) scales[c] = Math.max(scales[c], Math.abs(values[base + c]))
  }
  for (let c = 0; c < cols; c++) scales[c] = scales[c] / top || 1
  const inverse = scales.map((s) => 1 / s)
  const q = new Int8Array(values.length)
  for (let r = 0; r < rows; r++) {
    const base = r * cols
    for (let c = 0; c < cols; c++) q[base + c] = Math.round(values[base + c] * inverse[c])
  }
  return {values: q, scales}
}

/** The per-tensor variant: one scale over everything (a Gather table's rows are picked at run time). */
function quantizeWhole(values: Float32Array): Quantized {
  let max = 0
  for (let i = 0; i < values.length; i++) max = Math.max(max, Math.abs(values[i]))
  const scale = max / INT8_MAX || 1
  const q = new Int8Array(values.length)
  for (let i = 0; i < values.length; i++) q[i] = Math.round(values[i] / scale)
  return {values: q, scales: Float32Array.of(scale)}
}

export interface QuantizeReport {
  /** Nodes rewritten by op type, e.g. {MatMul: 72, Gather: 1}. */
  rewritten: Record<string, number>
}

export interface QuantizeOptions {
  /**
   * The largest matrix weight (127). 63 is onnxruntime's "reduce range": 7-bit weights, whose products AVX2's
   * VPMADDUBSW sums in pairs without saturating (2 · 255 · 64 <= 32 767); bench/int8.ts --reduce-range measures it.
   */
  weightMax?: number
}

/** Returns the int8 model's bytes and what was rewritten. */
export function quantizeDynamicInt8(fp32: Uint8Array, {weightMax = INT8_MAX}: QuantizeOptions = {}): {model: Uint8Array; report: QuantizeReport} {
  const model = decodeModel(fp32)
  const graph = model.graph
  if (!graph) throw new Error('the model has no graph')
  const opset = Number(model.opsetImport?.find((o) => !o.domain)?.version ?? 0)
  if (opset < MIN_OPSET) throw new Error(`DynamicQuantizeLinear needs opset ${MIN_OPSET} (the model has ${opset})`)
  const initializers = new Map((graph.initializer ?? []).map((t) => [t.name ?? '', t]))
  const taken = new Set<string>([...initializers.keys(), ...(graph.input ?? []).map((v) => v.name ?? '')])
  for (const n of graph.node ?? []) for (const o of n.output ?? []) taken.add(o)

  const fresh = (hint: string): string => {
    let name = hint
    for (let i = 1; taken.has(name); i++) name = `${hint}_${i}`
    taken.add(name)
    return name
  }
  const added: Tensor[] = []
  const constant = (t: Tensor): string => {
    added.push(t)
    return t.name ?? ''
  }
  const replaced = new Set<string>()
  const rewritten: Record<string, number> = {}
  const nodes: Node[] = []
  const push = (opType: string, input: string[], output: string[], attribute: Node['attribute'] = []): void => {
    nodes.push({name: fresh(`${output[0]}_${opType}`), opType, input, output, attribute})
  }
  const float32Matrix = (name: string | undefined): Tensor | undefined => {
    const t = name === undefined ? undefined : initializers.get(name)
    return t && t.dataType === DATA_TYPE.float32 && t.dims?.length === 2 ? t : undefined
  }

  // One quantised copy per weight, and one run-time quantisation per activation (q, k and v share theirs).
  let weightZeroPoint: string | undefined
  const weights = new Map<string, [string, string, string]>()
  const quantizedWeight = (name: string, t: Tensor): [string, string, string] => {
    const cached = weights.get(name)
    if (cached) return cached
    const [k, n] = (t.dims ?? []).map(Number)
    const q = quantizeColumns(floatValues(t), k, n, weightMax)
    weightZeroPoint ??= constant(uint8Tensor(fresh('weight_zero_point'), Uint8Array.of(WEIGHT_ZERO_POINT), []))
    const made: [string, string, string] = [
      constant(uint8Tensor(fresh(`${name}_quantized`), Uint8Array.from(q.values, (v) => v + WEIGHT_ZERO_POINT), [k, n])),
      constant(floatTensor(fresh(`${name}_scale`), q.scales, [n])),
      weightZeroPoint,
    ]
    weights.set(name, made)
    return made
  }
  const activations = new Map<string, string[]>()
  const quantizedActivation = (name: string): string[] => {
    const cached = activations.get(name)
    if (cached) return cached
    const made = [fresh(`${name}_quantized`), fresh(`${name}_scale`), fresh(`${name}_zero_point`)]
    push('DynamicQuantizeLinear', [name], made)
    activations.set(name, made)
    return made
  }

  for (const node of graph.node ?? []) {
    const [a, b] = node.input ?? []
    const out = node.output?.[0] ?? ''
    const weight = node.domain ? undefined : float32Matrix(b)
    if (node.opType === 'MatMul' && weight) {
      const [qWeight, scales, qZero] = quantizedWeight(b, weight)
      const [aq, aScale, aZero] = quantizedActivation(a)
      const product = fresh(`${out}_int32`)
      push('MatMulInteger', [aq, qWeight, aZero, qZero], [product])
      const asFloat = fresh(`${out}_float`)
      push('Cast', [product], [asFloat], [{...attr.int(DATA_TYPE.float32), name: 'to'}])
      // Scales multiplied first, then applied in one Mul: the pattern onnxruntime fuses (as quantize_dynamic's).
      const scale = fresh(`${out}_scale`)
      push('Mul', [aScale, scales], [scale])
      push('Mul', [asFloat, scale], [out])
      replaced.add(b)
    } else if (node.opType === 'Gather' && !node.domain && float32Matrix(a)) {
      const table = float32Matrix(a) as Tensor
      const q = quantizeWhole(floatValues(table))
      const qTable = constant(int8Tensor(fresh(`${a}_quantized`), q.values, (table.dims ?? []).map(Number)))
      const scale = constant(floatTensor(fresh(`${a}_scale`), q.scales, []))
      const zero = constant(int8Tensor(fresh(`${a}_zero_point`), new Int8Array(1), []))
      const rows = fresh(`${out}_quantized`)
      nodes.push({...node, input: [qTable, ...(node.input ?? []).slice(1)], output: [rows]})
      push('DequantizeLinear', [rows, scale, zero], [out])
      replaced.add(a)
    } else {
      nodes.push(node)
      continue
    }
    rewritten[node.opType ?? ''] = (rewritten[node.opType ?? ''] ?? 0) + 1
  }

  // A weight another node still reads in fp32 stays in the file as it was.
  const stillUsed = new Set(nodes.flatMap((n) => n.input ?? []))
  const kept = (graph.initializer ?? []).filter((t) => !replaced.has(t.name ?? '') || stillUsed.has(t.name ?? ''))
  graph.initializer = [...kept, ...added]
  graph.node = nodes
  return {model: encodeModel(model), report: {rewritten}}
}
