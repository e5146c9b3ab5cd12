/**
 * The fp16 variant of an fp32 ONNX model: "fp16 weights, fp32 compute". Measured on onnxruntime-node 1.30's
 * CPU provider (x86-64), the same graph computing in float16 throughout ran slower than fp32, so only the
 * stored weights change: the file halves and the arithmetic, speed and results stay those of fp32.
 */
import {attr, DATA_TYPE, decodeModel, encodeModel, float16Tensor, floatValues, type Node, type Tensor} from './graph.js'

const FLOAT16_MAX = 65504

/** The IEEE 754 binary16 bits of a float32 given by its bits, rounded to nearest even (as numpy's astype). */
function halfBits(bits: number): number {
  const sign = (bits >>> 16) & 0x8000
  const exponent = (bits >>> 23) & 0xff
  const mantissa = bits & 0x7fffff
  if (exponent === 0xff) return sign | 0x7c00 | (mantissa ? 0x200 : 0)
  const e = exponent - 127 + 15
  if (e >= 0x1f) return sign | 0x7c00
  if (e <= 0) {
    // Subnormal (or zero): shift the mantissa with its implicit 1 into place, rounding to nearest even.
    if (e < -10) return sign
    const m = mantissa | 0x800000
    const shift = 14 - e
    const half = 1 << (shift - 1)
    const rest = m & ((1 << shift) - 1)
    let out = m >>> shift
    if (rest > half || (rest === half && (out & 1) === 1)) out++
    return sign | out
  }
  let out = (e << 10) | (mantissa >>> 13)
  const rest = mantissa & 0x1fff
  // A carry out of the mantissa correctly bumps the exponent (up to infinity).
  if (rest > 0x1000 || (rest === 0x1000 && (out & 1) === 1)) out++
  return sign | out
}

/** float16 bit patterns of the values (Node 20 has no Float16Array). */
export function toFloat16(values: Float32Array): Uint16Array {
  const bits = new Uint32Array(values.buffer, values.byteOffset, values.length)
  const out = new Uint16Array(values.length)
  for (let i = 0; i < values.length; i++) out[i] = halfBits(bits[i])
  return out
}

function fitsFloat16(values: Float32Array): boolean {
  for (let i = 0; i < values.length; i++) if (!(Math.abs(values[i]) <= FLOAT16_MAX)) return false
  return true
}

/**
 * fp32 model bytes → the same graph with its float32 weights stored as float16, each followed by a Cast back
 * to float32 under the weight's old name: half the file, the same fp32 arithmetic. Constants outside float16's
 * range (an attention mask's -3.4e38) stay float32. onnxruntime folds the casts when the session loads.
 */
export function convertToFp16(fp32: Uint8Array): Uint8Array {
  const model = decodeModel(fp32)
  const graph = model.graph
  if (!graph) throw new Error('the model has no graph')
  const casts: Node[] = []
  const initializers: Tensor[] = []
  for (const t of graph.initializer ?? []) {
    const values = t.dataType === DATA_TYPE.float32 ? floatValues(t) : undefined
    if (!values || !fitsFloat16(values)) {
      initializers.push(t)
      continue
    }
    const name = t.name ?? ''
    initializers.push(float16Tensor(`${name}_fp16`, toFloat16(values), (t.dims ?? []).map(Number)))
    casts.push({
      name: `${name}_Cast`,
      opType: 'Cast',
      input: [`${name}_fp16`],
      output: [name],
      attribute: [{...attr.int(DATA_TYPE.float32), name: 'to'}],
    })
  }
  graph.initializer = initializers
  graph.node = [...casts, ...(graph.node ?? [])]
  return encodeModel(model)
}
