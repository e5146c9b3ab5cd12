/**
 * The embedded OCR models (PaddleOCR PP-OCRv4, shipped in models/ocr/ with their licence): a text detector
 * giving a probability map and a recogniser giving per-step symbol probabilities, each in one onnxruntime
 * session opened like every other session of `mod`.
 */
import {readFile} from 'node:fs/promises'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'

import * as ort from 'onnxruntime-node'

import {ModError} from '../../errors.js'
import {openSession} from '../../model/session.js'
import {symbolsFromKeys} from './ctc.js'
import {REC_HEIGHT} from './preprocess.js'

/** The folder holding the shipped models: four levels below the package root both as src/…/*.ts and dist/…/*.js. */
export function textModelDir(): string {
  return fileURLToPath(new URL('../../../../models/ocr/', import.meta.url))
}

export interface TextModelOptions {
  threads: number
  /** A folder with det.onnx, rec.onnx and keys.txt; default: the shipped one. */
  dir?: string
}

export interface TextModel {
  /** `tensor` is [1, 3, height, width]; returns the probability map, height × width. */
  detect(tensor: Float32Array, width: number, height: number): Promise<Float32Array>
  /** `tensor` is [n, 3, 48, width]; returns [n, steps, classes] probabilities. */
  recognise(tensor: Float32Array, n: number, width: number): Promise<{probs: Float32Array; steps: number; classes: number}>
  /** The recogniser's symbols: class i ≥ 1 is symbols[i - 1]. */
  readonly symbols: readonly string[]
  close(): Promise<void>
}

export async function openTextModel(o: TextModelOptions): Promise<TextModel> {
  const dir = o.dir ?? textModelDir()
  const keysPath = join(dir, 'keys.txt')
  const keys = await readFile(keysPath, 'utf8').catch((e: NodeJS.ErrnoException) => {
    throw new ModError('model_missing', `the text model's dictionary ${keysPath} cannot be read (${e.code ?? e.message}); reinstall mod`)
  })
  const symbols = symbolsFromKeys(keys)
  // Without the cache of optimised graphs: onnxruntime crashes running the OCR graphs it saved there (the
  // prepacked weights), and the two models are small (15 MiB) and quick to load from their own files.
  const session = {threads: o.threads, keepArena: true}
  const det = await openSession(join(dir, 'det.onnx'), session)
  const rec = await openSession(join(dir, 'rec.onnx'), session).catch(async (e: unknown) => {
    await det.release()
    throw e
  })
  return {
    symbols,
    async detect(tensor, width, height) {
      const out = await det.run({[det.inputNames[0]]: new ort.Tensor('float32', tensor, [1, 3, height, width])})
      return out[det.outputNames[0]].data as Float32Array
    },
    async recognise(tensor, n, width) {
      const out = await rec.run({[rec.inputNames[0]]: new ort.Tensor('float32', tensor, [n, 3, REC_HEIGHT, width])})
      const t = out[rec.outputNames[0]]
      return {probs: t.data as Float32Array, steps: t.dims[1], classes: t.dims[2]}
    },
    async close() {
      await det.release()
      await rec.release()
    },
  }
}
