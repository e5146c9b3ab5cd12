/**
 * `npm run nsfw:convert [-- --out models/nsfw]`: converts the NSFW classifiers shipped in the npm package nsfwjs
 * (MobileNetV2 and InceptionV3: TensorFlow.js Keras layers-models with uint8-quantised weights, stored as
 * JavaScript modules) to the ONNX files `mod` embeds, and writes their manifest (per model: source package,
 * version and tarball integrity, file size and sha256) and the package's licence beside them. Reads only
 * node_modules and package-lock.json; the bytes are the same on every run (no timestamps, layers and weights in
 * the package's order), which test/scripts/nsfw-convert.test.ts checks against the committed files.
 */
import {createHash} from 'node:crypto'
import {mkdir, readFile, writeFile} from 'node:fs/promises'
import {createRequire} from 'node:module'
import {dirname, join} from 'node:path'
import {fileURLToPath, pathToFileURL} from 'node:url'
import {parseArgs} from 'node:util'

import {
  NSFW_CLASSES,
  NSFW_INPUT,
  NSFW_MODELS,
  NSFW_OUTPUT,
  type NsfwManifest,
  type NsfwManifests,
  type NsfwModelName,
} from '../../src/lib/signals/nsfw/manifest.js'
import {kerasToOnnx, readQuantizedWeights, type KerasModelConfig, type WeightSpec} from '../onnx/keras.js'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
export const NSFW_MODEL_DIR = join(ROOT, 'models', 'nsfw')
const PACKAGE = 'nsfwjs'

/** The ONNX file of each model, in models/nsfw/. */
export const NSFW_ONNX: Record<NsfwModelName, string> = {
  mobilenet_v2: 'nsfw-mobilenet-v2.onnx',
  inception_v3: 'nsfw-inception-v3.onnx',
}

export interface ModelJson {
  modelTopology: {model_config: {class_name: string; config: KerasModelConfig}}
  weightsManifest: {paths: string[]; weights: WeightSpec[]}[]
}

/** What nsfwjs's own definition of a model says (dist/cjs/models/<name>.js): its name, shards and input side. */
interface NsfwjsDefinition {
  name: string
  numOfWeightBundles: number
  options?: {size?: number}
}

/** nsfwjs's input side when a model names none (IMAGE_SIZE in its core.js). */
const NSFWJS_DEFAULT_SIZE = 224

const require = createRequire(import.meta.url)

/** The package folder: its `exports` map hides package.json, so go up from the resolved entry point. */
function packageDir(): string {
  let dir = dirname(require.resolve(PACKAGE))
  while (!dir.endsWith(`node_modules/${PACKAGE}`)) {
    const up = dirname(dir)
    if (up === dir) throw new Error(`cannot find the ${PACKAGE} package folder`)
    dir = up
  }
  return dir
}

/** One model of the package: nsfwjs's name for it, its input side, and its files (model JSON, then the shards). */
export interface NsfwjsModel {
  nsfwjsName: string
  side: number
  files: string[]
}

export function nsfwjsModel(model: NsfwModelName): NsfwjsModel {
  const module = require(`${PACKAGE}/models/${model}`) as Record<string, NsfwjsDefinition>
  const [definition] = Object.values(module)
  const side = definition.options?.size ?? NSFWJS_DEFAULT_SIZE
  if (side !== NSFW_MODELS[model].side) throw new Error(`${PACKAGE}'s ${definition.name} takes ${side} px, mod expects ${NSFW_MODELS[model].side}`)
  const n = definition.numOfWeightBundles
  const shards = Array.from({length: n}, (_, i) => `dist/models/${model}/group1-shard${i + 1}of${n}.min.js`)
  return {nsfwjsName: definition.name, side, files: [`dist/models/${model}/model.min.js`, ...shards]}
}

/**
 * The model JSON and the weight bytes (shards concatenated), each file a browserify bundle whose export is the
 * JSON object or the shard's base64 text. They are required directly: the package's own loaders wrap each export
 * with TypeScript's __importStar, which on a multi-megabyte string defines one property per character.
 */
export function nsfwjsFiles(model: NsfwModelName): {json: ModelJson; weightData: Uint8Array} {
  const dir = packageDir()
  const [jsonFile, ...shardFiles] = nsfwjsModel(model).files
  const json = require(join(dir, jsonFile)) as ModelJson
  const shards = shardFiles.map((file) => Buffer.from(require(join(dir, file)) as string, 'base64'))
  const paths = json.weightsManifest.flatMap((group) => group.paths)
  if (paths.length !== shards.length) throw new Error(`${model}: the model names ${paths.length} shards, nsfwjs loads ${shards.length}`)
  return {json, weightData: new Uint8Array(Buffer.concat(shards))}
}

async function sourceFacts(files: string[]): Promise<NsfwManifest['source']> {
  const pkg = JSON.parse(await readFile(join(packageDir(), 'package.json'), 'utf8')) as {version: string; license: string}
  const lock = JSON.parse(await readFile(join(ROOT, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, {version?: string; integrity?: string}>
  }
  const locked = lock.packages[`node_modules/${PACKAGE}`]
  if (locked?.version !== pkg.version || !locked.integrity) {
    throw new Error(`installed ${PACKAGE} ${pkg.version} is not the one package-lock.json pins (${locked?.version}); run npm ci`)
  }
  return {package: PACKAGE, version: pkg.version, integrity: locked.integrity, license: pkg.license, files}
}

/** The model bytes, converted from the package's model of that name. */
export function convertNsfwjs(model: NsfwModelName, version: string): Uint8Array {
  const {nsfwjsName, side} = nsfwjsModel(model)
  const {json, weightData} = nsfwjsFiles(model)
  const {model_config: config} = json.modelTopology
  if (config.class_name !== 'Model') throw new Error(`expected a functional Keras Model, got ${config.class_name}`)
  const weights = readQuantizedWeights(
    json.weightsManifest.flatMap((group) => group.weights),
    weightData,
  )
  return kerasToOnnx(config.config, weights, {
    graphName: `nsfw_${model}`,
    input: NSFW_INPUT,
    output: NSFW_OUTPUT,
    docString:
      `${nsfwjsName} NSFW classifier of the npm package ${PACKAGE} ${version} (MIT, Infinite Red, Inc.), converted by mod ` +
      `scripts/nsfw/convert.ts. ${NSFW_INPUT}: float32 NHWC [batch, ${side}, ${side}, 3], RGB in [0, 1]; ` +
      `${NSFW_OUTPUT}: softmax over ${NSFW_CLASSES.join(', ')}.`,
  })
}

export function sha256(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex')
}

/** Converts one model and returns its bytes with its manifest entry. */
export async function nsfwModel(model: NsfwModelName): Promise<{bytes: Uint8Array; manifest: NsfwManifest}> {
  const {side, files} = nsfwjsModel(model)
  const source = await sourceFacts(files)
  const bytes = convertNsfwjs(model, source.version)
  const manifest: NsfwManifest = {
    id: NSFW_MODELS[model].id,
    file: NSFW_ONNX[model],
    size: bytes.length,
    sha256: sha256(bytes),
    source,
    input: {name: NSFW_INPUT, dtype: 'float32', shape: ['batch', side, side, 3], layout: 'NHWC'},
    output: {name: NSFW_OUTPUT, dtype: 'float32', shape: ['batch', NSFW_CLASSES.length]},
    classes: [...NSFW_CLASSES],
    preprocess:
      `RGB, 8-bit values divided by 255, then resized to ${side}x${side} with bilinear interpolation and aligned corners ` +
      `(tf.image.resizeBilinear(x, [${side}, ${side}], true), as nsfwjs does); no mean or std normalisation.`,
  }
  return {bytes, manifest}
}

/** Writes the ONNX files, manifest.json and LICENSE into `dir`; returns the manifest. */
export async function writeNsfwModels(dir: string): Promise<NsfwManifests> {
  await mkdir(dir, {recursive: true})
  const models: NsfwManifest[] = []
  for (const model of Object.keys(NSFW_MODELS) as NsfwModelName[]) {
    const {bytes, manifest} = await nsfwModel(model)
    await writeFile(join(dir, manifest.file), bytes)
    models.push(manifest)
  }
  const manifests: NsfwManifests = {models}
  const licence = await readFile(join(packageDir(), 'LICENSE'), 'utf8')
  const version = models[0].source.version
  await writeFile(join(dir, 'manifest.json'), `${JSON.stringify(manifests, null, 2)}\n`)
  await writeFile(
    join(dir, 'LICENSE'),
    `${models.map((m) => m.file).join(' and ')} are converted from the MobileNetV2 and InceptionV3 models of the npm package ${PACKAGE} ${version}, whose licence follows.\n\n${licence}`,
  )
  return manifests
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const {values} = parseArgs({options: {out: {type: 'string', default: NSFW_MODEL_DIR}}})
  const dir = values.out ?? NSFW_MODEL_DIR
  for (const m of (await writeNsfwModels(dir)).models) {
    process.stdout.write(`wrote ${join(dir, m.file)}: ${m.size} bytes, sha256 ${m.sha256} (from ${m.source.package} ${m.source.version})\n`)
  }
}
