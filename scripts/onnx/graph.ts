/**
 * A small ONNX graph writer over the protobuf types of `onnx-proto`: declare inputs and outputs (symbolic
 * dims allowed), add initializers from typed arrays, chain nodes, and encode the model to bytes that
 * onnxruntime loads. Model builders (the toy CLIP, a random-weight ViT…) sit beside this file and use it.
 */
import onnxProto from 'onnx-proto'

const {onnx} = onnxProto

export const DEFAULT_OPSET = 17

/** The IR version the ONNX release that introduced an opset wrote (opset 17-18: 8, 19-20: 9, 21-22: 10). */
function irVersionFor(opset: number): number {
  if (opset <= 18) return 8
  if (opset <= 20) return 9
  return opset <= 22 ? 10 : 11
}

export type ElementType = 'float32' | 'float16' | 'int64' | 'int32' | 'int8' | 'uint8' | 'bool'
/** A fixed size, or a name for a size chosen at run time ("batch"). */
export type Dim = number | string

/** ONNX element type codes, e.g. for Cast's `to` attribute. */
export const DATA_TYPE: Record<ElementType, number> = {
  float32: onnx.TensorProto.DataType.FLOAT,
  float16: onnx.TensorProto.DataType.FLOAT16,
  int64: onnx.TensorProto.DataType.INT64,
  int32: onnx.TensorProto.DataType.INT32,
  int8: onnx.TensorProto.DataType.INT8,
  uint8: onnx.TensorProto.DataType.UINT8,
  bool: onnx.TensorProto.DataType.BOOL,
}

export type Tensor = onnxProto.onnx.ITensorProto
export type Attribute = onnxProto.onnx.IAttributeProto

type TensorData = Float32Array | BigInt64Array | Int32Array | Uint16Array | Int8Array | Uint8Array

function rawBytes(data: TensorData): Uint8Array {
  return new Uint8Array(data.buffer, data.byteOffset, data.byteLength)
}

function checkSize(name: string, length: number, dims: number[]): void {
  const expected = dims.reduce((a, b) => a * b, 1)
  if (length !== expected) throw new Error(`tensor ${name}: ${length} values for dims [${dims}] (${expected})`)
}

/** A float32 tensor; the values are stored as little-endian raw data, as ONNX requires. */
export function floatTensor(name: string, values: Float32Array | number[], dims: number[]): Tensor {
  const data = values instanceof Float32Array ? values : Float32Array.from(values)
  checkSize(name, data.length, dims)
  return {name, dataType: DATA_TYPE.float32, dims, rawData: rawBytes(data)}
}

export function int64Tensor(name: string, values: BigInt64Array | number[], dims: number[]): Tensor {
  const data = values instanceof BigInt64Array ? values : BigInt64Array.from(values, (v) => BigInt(v))
  checkSize(name, data.length, dims)
  return {name, dataType: DATA_TYPE.int64, dims, rawData: rawBytes(data)}
}

export function int32Tensor(name: string, values: Int32Array | number[], dims: number[]): Tensor {
  const data = values instanceof Int32Array ? values : Int32Array.from(values)
  checkSize(name, data.length, dims)
  return {name, dataType: DATA_TYPE.int32, dims, rawData: rawBytes(data)}
}

/** The values of a float32 tensor, whether stored as raw data or as float_data (a copy when unaligned). */
export function floatValues(t: Tensor): Float32Array {
  if (t.dataType !== DATA_TYPE.float32) throw new Error(`tensor ${t.name}: not float32`)
  if (t.dataLocation === onnx.TensorProto.DataLocation.EXTERNAL) throw new Error(`tensor ${t.name}: external data`)
  const raw = t.rawData
  if (!raw || raw.byteLength === 0) return Float32Array.from(t.floatData ?? [])
  if (raw.byteOffset % 4 === 0) return new Float32Array(raw.buffer, raw.byteOffset, raw.byteLength / 4)
  return new Float32Array(new Uint8Array(raw).buffer)
}

/** A float16 tensor from its IEEE half-precision bit patterns (JavaScript has no Float16Array in Node 20). */
export function float16Tensor(name: string, bits: Uint16Array, dims: number[]): Tensor {
  checkSize(name, bits.length, dims)
  return {name, dataType: DATA_TYPE.float16, dims, rawData: rawBytes(bits)}
}

export function int8Tensor(name: string, values: Int8Array, dims: number[]): Tensor {
  checkSize(name, values.length, dims)
  return {name, dataType: DATA_TYPE.int8, dims, rawData: rawBytes(values)}
}

export function uint8Tensor(name: string, values: Uint8Array, dims: number[]): Tensor {
  checkSize(name, values.length, dims)
  return {name, dataType: DATA_TYPE.uint8, dims, rawData: rawBytes(values)}
}

const A = onnx.AttributeProto.AttributeType

/** Typed attribute values: ONNX tells ints from floats, JavaScript numbers do not. */
export const attr = {
  int: (i: number): Attribute => ({type: A.INT, i}),
  ints: (ints: number[]): Attribute => ({type: A.INTS, ints}),
  float: (f: number): Attribute => ({type: A.FLOAT, f}),
  floats: (floats: number[]): Attribute => ({type: A.FLOATS, floats}),
  string: (s: string): Attribute => ({type: A.STRING, s: new TextEncoder().encode(s)}),
  tensor: (t: Tensor): Attribute => ({type: A.TENSOR, t}),
}

export type Model = onnxProto.onnx.IModelProto
export type Node = onnxProto.onnx.INodeProto

/** Decodes ONNX bytes for rewriting (quantisation, precision changes); tensors' raw data are views, not copies. */
export function decodeModel(bytes: Uint8Array): Model {
  return onnx.ModelProto.decode(bytes)
}

export function encodeModel(model: Model): Uint8Array {
  return onnx.ModelProto.encode(model).finish()
}

export interface ModelOptions {
  producer?: string
  docString?: string
}

export interface GraphBuilder {
  /** The default-domain opset this graph targets (some ops take axes as inputs from 13 or 18 on). */
  readonly opset: number
  /** Declares a graph input and returns its name. */
  input(name: string, type: ElementType, dims: Dim[]): string
  /** Declares a graph output; some node must produce a value of that name. */
  output(name: string, type: ElementType, dims: Dim[]): void
  /** Adds an initializer under its own name (weights) and returns that name. */
  initializer(tensor: Tensor): string
  /** A float32 constant under a fresh name. */
  floats(values: Float32Array | number[], dims: number[], hint?: string): string
  /** An int64 constant under a fresh name (shapes, axes, indices). */
  int64s(values: number[], dims?: number[], hint?: string): string
  /** Adds a node with several outputs and returns their names (fresh unless given). */
  node(opType: string, inputs: string[], attributes?: Record<string, Attribute>, outputs?: number | string[]): string[]
  /** Adds a one-output node and returns the output's name (`output` names it, e.g. after a graph output). */
  op(opType: string, inputs: string[], attributes?: Record<string, Attribute>, output?: string): string
  /** The encoded ModelProto. */
  encode(options?: ModelOptions): Uint8Array
}

function valueInfo(name: string, type: ElementType, dims: Dim[]): onnxProto.onnx.IValueInfoProto {
  return {
    name,
    type: {
      tensorType: {
        elemType: DATA_TYPE[type],
        shape: {dim: dims.map((d) => (typeof d === 'number' ? {dimValue: d} : {dimParam: d}))},
      },
    },
  }
}

export function createGraph(name: string, opset = DEFAULT_OPSET): GraphBuilder {
  const inputs: onnxProto.onnx.IValueInfoProto[] = []
  const outputs: onnxProto.onnx.IValueInfoProto[] = []
  const initializers: Tensor[] = []
  const nodes: onnxProto.onnx.INodeProto[] = []
  const used = new Set<string>()
  let counter = 0

  function claim(valueName: string): string {
    if (used.has(valueName)) throw new Error(`graph ${name}: the name "${valueName}" is already taken`)
    used.add(valueName)
    return valueName
  }

  function fresh(hint: string): string {
    let candidate = `${hint}_${counter++}`
    while (used.has(candidate)) candidate = `${hint}_${counter++}`
    return claim(candidate)
  }

  function initializer(tensor: Tensor): string {
    const tensorName = claim(tensor.name ?? '')
    initializers.push(tensor)
    return tensorName
  }

  function constant(hint: string, make: (constName: string) => Tensor): string {
    const constName = fresh(hint)
    initializers.push(make(constName))
    return constName
  }

  function node(
    opType: string,
    nodeInputs: string[],
    attributes: Record<string, Attribute> = {},
    nodeOutputs: number | string[] = 1,
  ): string[] {
    const outs =
      typeof nodeOutputs === 'number' ? Array.from({length: nodeOutputs}, () => fresh(opType)) : nodeOutputs.map(claim)
    nodes.push({
      name: `${opType}_node_${nodes.length}`,
      opType,
      input: nodeInputs,
      output: outs,
      attribute: Object.entries(attributes).map(([key, value]) => ({...value, name: key})),
    })
    return outs
  }

  return {
    opset,
    input(inputName, type, dims) {
      inputs.push(valueInfo(inputName, type, dims))
      return claim(inputName)
    },
    output(outputName, type, dims) {
      outputs.push(valueInfo(outputName, type, dims))
    },
    initializer,
    floats: (values, dims, hint = 'const') => constant(hint, (n) => floatTensor(n, values, dims)),
    int64s: (values, dims = [values.length], hint = 'const') => constant(hint, (n) => int64Tensor(n, values, dims)),
    node,
    op: (opType, opInputs, attributes, output) => node(opType, opInputs, attributes, output ? [output] : 1)[0],
    encode(options = {}) {
      const model = onnx.ModelProto.create({
        irVersion: irVersionFor(opset),
        opsetImport: [{domain: '', version: opset}],
        producerName: options.producer ?? 'mod scripts/onnx',
        docString: options.docString ?? '',
        graph: {name, node: nodes, initializer: initializers, input: inputs, output: outputs},
      })
      return onnx.ModelProto.encode(model).finish()
    },
  }
}
