/**
 * The runner of the embedded NSFW specialists (nsfwjs's MobileNetV2 and InceptionV3, converted to ONNX by
 * scripts/nsfw/convert.ts and shipped in models/nsfw/): checks the chosen model's file against its manifest
 * entry, opens one onnxruntime session with the options of the CLIP runner, and turns preprocessed views into
 * five class probabilities each (NSFW_CLASSES order).
 */
import {createHash} from 'node:crypto'
import {readFile} from 'node:fs/promises'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'

import * as ort from 'onnxruntime-node'

import {disposer} from '../../dispose.js'
import {ModError} from '../../errors.js'
import {nsfwViewSize} from './preprocess.js'
import {formatSizeExact} from '../../sizes.js'
import {openSession} from '../../model/session.js'
import {
  DEFAULT_NSFW_MODEL,
  NSFW_CLASSES,
  NSFW_INPUT,
  NSFW_MODELS,
  NSFW_OUTPUT,
  type NsfwManifest,
  type NsfwManifests,
  type NsfwModelName,
} from './manifest.js'
import {defaultThreads} from '../../model/threads.js'

/** The folder holding the shipped models: four levels below the package root both as src/…/*.ts and dist/…/*.js. */
export function nsfwModelDir(): string {
  return fileURLToPath(new URL('../../../../models/nsfw/', import.meta.url))
}

export interface NsfwOptions {
  /** Which model (NSFW_MODELS): mobilenet_v2 (224 px, the default) or inception_v3 (299 px). */
  model?: NsfwModelName
  /** onnxruntime intra-op threads; default: chosen for the machine (threads.ts). */
  threads?: number
  /** A folder with manifest.json and the ONNX files it names; default: the shipped one. */
  dir?: string
  /**
   * MOD_CACHE_DIR: the optimised graph is cached there as CLIP's is. Creating the session from the file costs
   * ~150 ms of a scan's start-up for MobileNetV2 and ~600 ms for InceptionV3 (onnxruntime expands the uint8
   * weights to float32); from the cache, ~50 ms and ~100 ms.
   */
  cacheDir?: string
}

export interface NsfwModel {
  readonly manifest: NsfwManifest
  /** Side of the square input in pixels (224, 299): nsfwPreprocess's `side` for this model. */
  readonly side: number
  /** Floats of one view: side x side x 3. */
  readonly viewSize: number
  /** `pixels` holds n views from nsfwPreprocess, [n, side, side, 3]; returns n arrays of five probabilities. */
  classify(pixels: Float32Array, n: number): Promise<Float32Array[]>
  close(): Promise<void>
}

async function readBytes(path: string, what: string): Promise<Buffer> {
  try {
    return await readFile(path)
  } catch (e) {
    throw new ModError('model_missing', `the NSFW model's ${what} ${path} cannot be read (${(e as NodeJS.ErrnoException).code ?? (e as Error).message}); reinstall mod`)
  }
}

/** The manifest entry of `model`, checked: its file, size, sha256, classes and input side. */
async function readManifest(dir: string, model: NsfwModelName): Promise<NsfwManifest> {
  const path = join(dir, 'manifest.json')
  const text = (await readBytes(path, 'manifest')).toString('utf8')
  let manifests: NsfwManifests
  try {
    manifests = JSON.parse(text) as NsfwManifests
  } catch (e) {
    throw new ModError('invalid_config', `${path} is not JSON: ${(e as Error).message}`)
  }
  const {id, side} = NSFW_MODELS[model]
  const m = Array.isArray(manifests?.models) ? manifests.models.find((entry) => entry?.id === id) : undefined
  if (!m) throw new ModError('model_missing', `${path} lists no model ${id}; reinstall mod`)
  const classes = JSON.stringify(m.classes)
  const shape = JSON.stringify(m.input?.shape)
  if (typeof m.file !== 'string' || typeof m.sha256 !== 'string' || typeof m.size !== 'number' || classes !== JSON.stringify(NSFW_CLASSES) || shape !== JSON.stringify(['batch', side, side, 3])) {
    throw new ModError('invalid_config', `${path}: ${id} is not an NSFW model entry (file, size, sha256, classes ${NSFW_CLASSES.join(', ')}, input [batch, ${side}, ${side}, 3])`)
  }
  return m
}

/** The model's bytes, refused unless their size and sha256 are the manifest's: a wrong file is a missing model. */
async function verifiedModel(dir: string, m: NsfwManifest): Promise<void> {
  const path = join(dir, m.file)
  const bytes = await readBytes(path, 'file')
  if (bytes.length !== m.size) {
    throw new ModError('model_missing', `${path} is ${formatSizeExact(bytes.length)}, not the ${formatSizeExact(m.size)} of ${m.id}; reinstall mod`)
  }
  const sha = createHash('sha256').update(bytes).digest('hex')
  if (sha !== m.sha256) {
    throw new ModError('model_missing', `${path} has sha256 ${sha}, not the ${m.sha256} of ${m.id}; reinstall mod`)
  }
}

export async function openNsfw(opts: NsfwOptions = {}): Promise<NsfwModel> {
  const dir = opts.dir ?? nsfwModelDir()
  const {side} = NSFW_MODELS[opts.model ?? DEFAULT_NSFW_MODEL]
  const viewSize = nsfwViewSize(side)
  const manifest = await readManifest(dir, opts.model ?? DEFAULT_NSFW_MODEL)
  await verifiedModel(dir, manifest)
  const threads = opts.threads ?? (await defaultThreads())
  const session = await openSession(join(dir, manifest.file), {threads, keepArena: true, cacheDir: opts.cacheDir})
  const classes = NSFW_CLASSES.length

  return {
    manifest,
    side,
    viewSize,
    async classify(pixels, n) {
      if (!Number.isInteger(n) || n < 0 || pixels.length !== n * viewSize) {
        throw new ModError('internal', `classify: expected ${n} x ${side} x ${side} x 3 values, got ${pixels.length}`)
      }
      if (n === 0) return []
      const out = await session.run({[NSFW_INPUT]: new ort.Tensor('float32', pixels, [n, side, side, 3])})
      const probs = out[NSFW_OUTPUT]
      if (!probs || probs.type !== 'float32' || probs.data.length !== n * classes) {
        throw new ModError('invalid_config', `${manifest.file} gave no [${n}, ${classes}] float32 '${NSFW_OUTPUT}'`)
      }
      const data = probs.data as Float32Array
      return Array.from({length: n}, (_, i) => data.slice(i * classes, (i + 1) * classes))
    },
    close: disposer(() => session.release()).dispose,
  }
}
