/** The messages between the process and its inference thread (inference-thread.ts, inference-worker.ts). */
import * as ort from 'onnxruntime-node'

/** A tensor as it crosses to or from the thread (copied by structured clone): toWire, fromWire. */
export interface WireTensor {
  type: string
  data: ort.Tensor['data']
  dims: readonly number[]
}

export type Ask =
  | {id: number; op: 'open'; path: string; options: ort.InferenceSession.SessionOptions}
  | {id: number; op: 'run'; session: number; feeds: Record<string, WireTensor>; fetches?: string[]}
  | {id: number; op: 'release'; session: number}

/** Tells the thread to end once every task it has begun is done (it answers nothing more). */
export interface Leave {
  op: 'leave'
}

export type Answer =
  | {id: number; error: string}
  | {
      id: number
      session: number
      inputNames: readonly string[]
      outputNames: readonly string[]
      inputMetadata: readonly ort.InferenceSession.ValueMetadata[]
    }
  | {id: number; outputs: Record<string, WireTensor>}
  | {id: number}

/** Tensors as they cross, either way. A view into a larger buffer is sent as its own part: a clone would copy the whole buffer. */
export function toWire(tensors: Readonly<Record<string, ort.Tensor>>): Record<string, WireTensor> {
  return Object.fromEntries(
    Object.entries(tensors).map(([name, {type, data, dims}]) => {
      const own = ArrayBuffer.isView(data) && data.byteLength !== data.buffer.byteLength ? (data as Float32Array).slice() : data
      return [name, {type, data: own, dims}]
    }),
  )
}

/** The tensors toWire sent, on the other side. */
export function fromWire(tensors: Readonly<Record<string, WireTensor>>): Record<string, ort.Tensor> {
  return Object.fromEntries(Object.entries(tensors).map(([name, t]) => [name, new ort.Tensor(t.type as 'float32', t.data as Float32Array, t.dims)]))
}
