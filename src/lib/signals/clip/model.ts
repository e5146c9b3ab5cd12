/**
 * The CLIP runner: onnxruntime sessions for the image and text encoders of one model folder. The image session
 * is opened at once; the text session and tokenizer only when texts are first embedded, and `releaseText()`
 * gives their memory back once prompt embeddings are cached.
 */
import {join} from 'node:path'

import * as ort from 'onnxruntime-node'

import {disposer} from '../../dispose.js'
import {ModError} from '../../errors.js'
import {normaliseInPlace} from '../../scoring/vector.js'
import {lazy} from '../../lazy.js'
import {fileWithRole} from '../../model/manifest.js'
import type {Manifest} from '../../model/manifest-types.js'
import {chooseInt8Weights, signedModelFile} from '../../model/int8-weights.js'
import type {Int8Weights} from '../../model/manifest-types.js'
import {openSession, type ModelSession} from '../../model/session.js'
import {defaultThreads} from '../../model/threads.js'
import {loadTokenizer, type ClipTokenizer} from '../../model/tokenizer.js'

/** Prompts per text-encoder run: big enough to amortise a run, small enough to bound the activations. */
const TEXT_BATCH = 32

export interface ClipOptions {
  /** onnxruntime intra-op threads; default: chosen for the machine (threads.ts). */
  threads?: number
  /** MOD_CACHE_DIR: the image encoder's optimised graph is cached there (session.ts). */
  cacheDir?: string
  /**
   * The manifest's image encoder is int8: run it with these weights. Signed weights are a copy made in the cache
   * folder (int8-weights.ts), so without one the file runs as it is.
   */
  int8Weights?: Int8Weights
}

export interface ClipModel {
  readonly manifest: Manifest
  readonly id: string
  /** `pixels` holds n preprocessed images, [n, 3, crop, crop]; returns n L2-normalised embeddings. */
  embedImages(pixels: Float32Array, n: number): Promise<Float32Array[]>
  /** L2-normalised text embeddings, in input order (a zero output stays zero). */
  embedTexts(texts: string[]): Promise<Float32Array[]>
  /** Frees the text encoder and tokenizer (call it with no embedTexts in flight); a later embedTexts loads them again. */
  releaseText(): Promise<void>
  close(): Promise<void>
}

interface TextEncoder {
  session: ModelSession
  tokenizer: ClipTokenizer
  /** Some exports also take an attention mask; it is fed when the graph has that input. */
  withMask: boolean
  int32: boolean
}

function requireNames(session: ModelSession, path: string, input: string, output: string): void {
  if (!session.inputNames.includes(input)) {
    throw new ModError('invalid_config', `${path} has no input '${input}' (it has: ${session.inputNames.join(', ')})`)
  }
  if (!session.outputNames.includes(output)) {
    throw new ModError('invalid_config', `${path} has no output '${output}' (it has: ${session.outputNames.join(', ')})`)
  }
}

function inputMeta(session: ModelSession, name: string): ort.InferenceSession.TensorValueMetadata | undefined {
  const meta = session.inputMetadata.find((m) => m.name === name)
  return meta?.isTensor ? meta : undefined
}

function rows(output: ort.Tensor | undefined, n: number, dim: number, what: string): Float32Array[] {
  if (!output || output.type !== 'float32' || output.data.length !== n * dim) {
    const shape = output ? `[${output.dims.join(', ')}] ${output.type}` : 'nothing'
    throw new ModError('invalid_config', `${what} gave ${shape}; expected [${n}, ${dim}] float32`)
  }
  const data = output.data as Float32Array
  return Array.from({length: n}, (_, i) => normaliseInPlace(data.slice(i * dim, (i + 1) * dim)))
}

function idTensor(values: BigInt64Array, int32: boolean, shape: number[]): ort.Tensor {
  return int32 ? new ort.Tensor('int32', Int32Array.from(values, Number), shape) : new ort.Tensor('int64', values, shape)
}

async function imageEncoderFile(path: string, opts: ClipOptions): Promise<string> {
  if (opts.int8Weights === undefined || opts.cacheDir === undefined) return path
  return (await chooseInt8Weights(opts.int8Weights)) === 'signed' ? signedModelFile(path, opts.cacheDir) : path
}

/** Only the image encoder's graph is cached: the text encoder runs only while prompt embeddings are missing. */
async function openImage(dir: string, manifest: Manifest, threads: number, opts: ClipOptions): Promise<ModelSession> {
  const imagePath = fileWithRole(manifest, 'image_encoder').path
  const image = await openSession(await imageEncoderFile(join(dir, imagePath), opts), {threads, keepArena: true, cacheDir: opts.cacheDir})
  try {
    requireNames(image, imagePath, manifest.image.input, manifest.image.output)
    return image
  } catch (e) {
    await image.release()
    throw e
  }
}

async function openText(dir: string, manifest: Manifest, threads: number): Promise<TextEncoder> {
  const textPath = fileWithRole(manifest, 'text_encoder').path
  const session = await openSession(join(dir, textPath), {threads, keepArena: false})
  try {
    requireNames(session, textPath, manifest.text.input, manifest.text.output)
    return {
      session,
      tokenizer: await loadTokenizer(dir),
      withMask: session.inputNames.includes('attention_mask'),
      int32: inputMeta(session, manifest.text.input)?.type === 'int32',
    }
  } catch (e) {
    await session.release()
    throw e
  }
}

async function runTexts(manifest: Manifest, t: TextEncoder, texts: string[]): Promise<Float32Array[]> {
  const ctx = manifest.context_length
  const shape = [texts.length, ctx]
  const feeds: Record<string, ort.Tensor> = {}
  if (t.withMask) {
    const {inputIds, attentionMask} = t.tokenizer.encodeBatchWithMask(texts, ctx)
    feeds[manifest.text.input] = idTensor(inputIds, t.int32, shape)
    feeds.attention_mask = idTensor(attentionMask, t.int32, shape)
  } else {
    feeds[manifest.text.input] = idTensor(t.tokenizer.encodeBatch(texts, ctx), t.int32, shape)
  }
  const out = await t.session.run(feeds)
  return rows(out[manifest.text.output], texts.length, manifest.embedding_size, fileWithRole(manifest, 'text_encoder').path)
}

export async function openClip(dir: string, manifest: Manifest, opts: ClipOptions = {}): Promise<ClipModel> {
  const threads = opts.threads ?? (await defaultThreads())
  const dim = manifest.embedding_size
  const {crop} = manifest.preprocess
  const imageSize = 3 * crop * crop
  const imagePath = fileWithRole(manifest, 'image_encoder').path
  const image = await openImage(dir, manifest, threads, opts)
  // Image by image: an export with a fixed batch of 1 cannot take [n, …]; and an int8 encoder quantises its
  // activations with one scale for the whole input, so in a batch an image's scores would depend on the other images
  // of its run (on the server, another client's upload), and two runs of the same image could differ.
  const oneByOne = inputMeta(image, manifest.image.input)?.shape[0] === 1 || opts.int8Weights !== undefined
  const imageBatch = oneByOne ? 1 : Number.POSITIVE_INFINITY

  const text = lazy(() => openText(dir, manifest, threads))

  async function runImages(pixels: Float32Array, n: number): Promise<Float32Array[]> {
    const input = new ort.Tensor('float32', pixels, [n, 3, crop, crop])
    const out = await image.run({[manifest.image.input]: input})
    return rows(out[manifest.image.output], n, dim, imagePath)
  }

  async function releaseText(): Promise<void> {
    const pending = text.current()
    text.reset()
    if (!pending) return
    const t = await pending.catch(() => undefined)
    await t?.session.release()
  }

  return {
    manifest,
    id: manifest.id,
    releaseText,

    async embedImages(pixels, n) {
      if (!Number.isInteger(n) || n < 0 || pixels.length !== n * imageSize) {
        throw new ModError('internal', `embedImages: expected ${n} × 3 × ${crop} × ${crop} values, got ${pixels.length}`)
      }
      if (n === 0) return []
      if (n <= imageBatch) return runImages(pixels, n)
      const out: Float32Array[] = []
      for (let i = 0; i < n; i++) {
        out.push(...(await runImages(pixels.subarray(i * imageSize, (i + 1) * imageSize), 1)))
      }
      return out
    },

    async embedTexts(texts) {
      if (texts.length === 0) return []
      const t = await text.get()
      const out: Float32Array[] = []
      for (let i = 0; i < texts.length; i += TEXT_BATCH) {
        out.push(...(await runTexts(manifest, t, texts.slice(i, i + TEXT_BATCH))))
      }
      return out
    },

    close: disposer(async () => {
      await releaseText()
      await image.release()
    }).dispose,
  }
}
