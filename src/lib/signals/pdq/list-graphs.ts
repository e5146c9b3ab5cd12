// The two ONNX graphs of a mapped hash-list cache (list-map.ts), written when the cache is built: Gather over
// initializers stored as external data in the cache's data file, which onnxruntime maps read-only.
import onnxProto from 'onnx-proto'

const {onnx} = onnxProto
const INT32 = onnx.TensorProto.DataType.INT32
const UINT8 = onnx.TensorProto.DataType.UINT8

/** An int32 (or uint8) initializer kept in `file` at `offset`. */
function external(file: string, name: string, dims: number[], offset: number, type: 'int32' | 'uint8' = 'int32'): onnxProto.onnx.ITensorProto {
  const length = dims.reduce((a, b) => a * b, 1) * (type === 'int32' ? 4 : 1)
  return {
    name,
    dataType: type === 'int32' ? INT32 : UINT8,
    dims,
    dataLocation: onnx.TensorProto.DataLocation.EXTERNAL,
    externalData: [
      {key: 'location', value: file},
      {key: 'offset', value: String(offset)},
      {key: 'length', value: String(length)},
    ],
  }
}

const vector = (name: string, dims: (number | string)[], elemType = INT32): onnxProto.onnx.IValueInfoProto => ({
  name,
  type: {tensorType: {elemType, shape: {dim: dims.map((d) => (typeof d === 'number' ? {dimValue: d} : {dimParam: d}))}}},
})
const gather = (data: string, indices: string, output: string): onnxProto.onnx.INodeProto => ({
  opType: 'Gather',
  input: [data, indices],
  output: [output],
  attribute: [{name: 'axis', type: onnx.AttributeProto.AttributeType.INT, i: 0}],
})

function model(graph: onnxProto.onnx.IGraphProto): Uint8Array {
  return onnx.ModelProto.encode({irVersion: 8, opsetImport: [{domain: '', version: 17}], producerName: 'mod', graph}).finish()
}

/** probe: the bounds [from, to) of each bucket asked for (a bucket's number counts from the start of all tables). */
export function probeModel(o: {file: string; offsets: number; offsetEntries: number}): Uint8Array {
  return model({
    name: 'probe',
    initializer: [external(o.file, 'offsets', [o.offsetEntries], o.offsets), {name: 'one', dataType: INT32, dims: [1], int32Data: [1]}],
    input: [vector('buckets', ['n'])],
    output: [vector('from', ['n']), vector('to', ['n'])],
    node: [gather('offsets', 'buckets', 'from'), {opType: 'Add', input: ['buckets', 'one'], output: ['next']}, gather('offsets', 'next', 'to')],
  })
}

/**
 * fetch: for entries of the id tables, the id there and its row (hash and record); and rows asked for by
 * number (`direct`: only for touching every page of the rows when the cache is opened).
 */
export function fetchModel(o: {file: string; ids: number; idEntries: number; rows: number; count: number; rowBytes: number}): Uint8Array {
  return model({
    name: 'fetch',
    initializer: [external(o.file, 'ids', [o.idEntries], o.ids), external(o.file, 'rows', [o.count, o.rowBytes], o.rows, 'uint8')],
    input: [vector('positions', ['m']), vector('direct', ['k'])],
    output: [vector('id', ['m']), vector('row', ['m', o.rowBytes], UINT8), vector('direct_row', ['k', o.rowBytes], UINT8)],
    node: [gather('ids', 'positions', 'id'), gather('rows', 'id', 'row'), gather('rows', 'direct', 'direct_row')],
  })
}
