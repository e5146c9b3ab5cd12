/**
 * Every onnxruntime session of `mod` is created here, with the same options, so that each model runner (CLIP,
 * and any other) runs alike and a benchmark can open a bare session exactly as the runners do.
 *
 * The optimised graph is not cached on disk (onnxruntime's `optimizedModelFilePath`): on the CLIP ViT-B/32
 * encoder, creating a session from a saved optimised model (ONNX or ORT format, with optimisation off) took as
 * much CPU time as from the original with every optimisation on, because the optimisation is a small part of
 * a session's creation: most of it is reading and laying out the weights (bench/README.md, startup).
 */
import * as ort from 'onnxruntime-node'

import {ModError} from '../errors.js'

export interface SessionOptions {
  /** onnxruntime intra-op threads. */
  threads: number
  /**
   * Keep onnxruntime's memory arena and memory patterns: buffers stay allocated between runs (faster repeated
   * runs) but never shrink. For sessions used for a short while (the text encoder), leave it off so that they
   * leave nothing behind.
   */
  keepArena: boolean
}

/** The options of every session. */
export function sessionOptions(o: SessionOptions): ort.InferenceSession.SessionOptions {
  return {
    executionProviders: ['cpu'],
    intraOpNumThreads: o.threads,
    // One graph at a time per process: parallel branches would only compete with the intra-op threads.
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
    enableCpuMemArena: o.keepArena,
    enableMemPattern: o.keepArena,
  }
}

/** Opens an ONNX file; a file onnxruntime cannot load is `invalid_config`, naming the file. */
export async function openSession(path: string, o: SessionOptions): Promise<ort.InferenceSession> {
  try {
    return await ort.InferenceSession.create(path, sessionOptions(o))
  } catch (e) {
    throw new ModError('invalid_config', `cannot load ${path}: ${(e as Error).message}`)
  }
}
