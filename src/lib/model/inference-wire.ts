/** The messages between the process and its inference thread (inference-thread.ts, inference-worker.ts). */
import type * as ort from 'onnxruntime-node'

/** A tensor as it crosses to or from the thread (copied by structured clone). */
export interface WireTensor {
  type: string
  data: ort.Tensor['data']
  dims: readonly number[]
}

export type Ask =
  | {id: number; op: 'open'; path: string; options: ort.InferenceSession.SessionOptions}
  | {id: number; op: 'run'; session: number; feeds: Record<string, WireTensor>; fetches?: string[]}
  | {id: number; op: 'release'; session: number}

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
