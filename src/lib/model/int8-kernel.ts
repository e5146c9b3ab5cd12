/**
 * Whether onnxruntime's u8s8 integer kernel is exact on this CPU, asked of the kernel itself: one product of
 * uint8 255s by int8 127s. On x86-64 CPUs without VNNI, onnxruntime multiplies with VPMADDUBSW, which adds each
 * pair of products into 16 bits and saturates there (2 · 255 · 127 > 32 767), so the sum comes out short
 * (onnxruntime's quantization guide warns of it); with AVX-512 VNNI or AVX-VNNI the products are summed in 32
 * bits. Asking the kernel rather than reading the CPU's flags (/proc/cpuinfo) gives the answer onnxruntime acts
 * on wherever the flags and the CPU disagree, as under an emulator (`qemu-x86_64 -cpu Haswell` passes the
 * host's /proc/cpuinfo through while emulating an AVX2 CPU). It costs one tiny session, a few milliseconds.
 */
import * as ort from 'onnxruntime-node'

const DEPTH = 64
const COLUMNS = 16
const UINT8 = 2
const INT8 = 3
const INT32 = 6

/*
 * The probe's ONNX file, written with a few lines of protobuf encoding: loading the ONNX schema's codec
 * (onnx-proto) would cost a start more than the probe itself.
 */
function varint(n: number): number[] {
  const out: number[] = []
  for (; n > 0x7f; n = Math.floor(n / 128)) out.push((n & 0x7f) | 0x80)
  out.push(n)
  return out
}
const number = (field: number, n: number): number[] => [...varint(field << 3), ...varint(n)]
const bytes = (field: number, body: ArrayLike<number>): number[] => [...varint((field << 3) | 2), ...varint(body.length), ...Array.from(body)]
const text = (field: number, s: string): number[] => bytes(field, new TextEncoder().encode(s))

/** ValueInfoProto of a matrix: name, TypeProto.tensor_type {elem_type, shape {dim {dim_value}}}. */
function matrix(name: string, elemType: number, dims: number[]): number[] {
  const shape = dims.flatMap((d) => bytes(1, number(1, d)))
  return [...text(1, name), ...bytes(2, bytes(1, [...number(1, elemType), ...bytes(2, shape)]))]
}

function probeModel(): Uint8Array {
  const weights = [...number(1, DEPTH), ...number(1, COLUMNS), ...number(2, INT8), ...text(8, 'b'), ...bytes(9, new Uint8Array(DEPTH * COLUMNS).fill(127))]
  const node = [...text(1, 'a'), ...text(1, 'b'), ...text(2, 'y'), ...text(4, 'MatMulInteger')]
  const graph = [...bytes(1, node), ...text(2, 'u8s8-probe'), ...bytes(5, weights), ...bytes(11, matrix('a', UINT8, [1, DEPTH])), ...bytes(12, matrix('y', INT32, [1, COLUMNS]))]
  // ModelProto: ir_version 8, producer_name, graph, opset_import {domain '', version 17}.
  return Uint8Array.from([...number(1, 8), ...text(2, 'mod'), ...bytes(7, graph), ...bytes(8, number(2, 17))])
}

/** True when uint8 × int8 products sum without saturating on this CPU (module comment). */
export async function u8s8KernelExact(): Promise<boolean> {
  const session = await ort.InferenceSession.create(probeModel(), {intraOpNumThreads: 1, interOpNumThreads: 1})
  try {
    const out = await session.run({a: new ort.Tensor('uint8', new Uint8Array(DEPTH).fill(255), [1, DEPTH])})
    const sums = out.y.data as Int32Array
    return sums.every((s) => s === 255 * 127 * DEPTH)
  } finally {
    await session.release()
  }
}
