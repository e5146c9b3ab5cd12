/**
 * `npm run nsfw:convert [-- --out models/nsfw]`: converts the MobileNetV2 NSFW classifier shipped in the npm
 * package nsfwjs (a TensorFlow.js Keras layers-model with uint8-quantised weights, stored as JavaScript modules)
 * to the ONNX file `mod` embeds, and writes its manifest (source package, version and tarball integrity, file
 * size and sha256) and the package's licence beside it. Reads only node_modules and package-lock.json; the bytes
 * are the same on every run (no timestamps, layers and weights in the package's order), which
 * test/scripts/nsfw-convert.test.ts checks against the committed file.
 */
import {createHash} from 'node:crypto'
import {mkdir, readFile, writeFile} from 'node:fs/promises'
import {createRequire} from 'node:module'
import {dirname, join} from 'node:path'
import {fileURLToPath, pathToFileURL} from 'node:url'
import {parseArgs} from 'node:util'

import {NSFW_CLASSES, NSFW_INPUT, NSFW_OUTPUT, NSFW_SIZE, type NsfwManifest} from '../../src/lib/model/nsfw-manifest.js'
import {kerasToOnnx, readQuantizedWeights, type KerasModelConfig, type WeightSpec} from '../onnx/keras.js'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
export const NSFW_MODEL_DIR = join(ROOT, 'models', 'nsfw')
export const NSFW_ONNX = 'nsfw-mobilenet-v2.onnx'
const PACKAGE = 'nsfwjs'
const MODEL_ID = 'nsfwjs-mobilenet-v2'

interface ModelJson {
  modelTopology: {model_config: {class_name: string; config: KerasModelConfig}}
  weightsManifest: {paths: string[]; weights: WeightSpec[]}[]
}

/**
 * The package's MobileNetV2 files: the model JSON and its weight shards, each a browserify bundle whose export is
 * the JSON object or the shard's base64 text. They are required directly: the package's own loaders wrap each
 * export with TypeScript's __importStar, which on a 3.5 MB string defines one property per character (4 s of CPU).
 */
const MODEL_JSON = 'dist/models/mobilenet_v2/model.min.js'
const WEIGHT_SHARDS = ['dist/models/mobilenet_v2/group1-shard1of1.min.js']

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

async function sourceFacts(): Promise<NsfwManifest['source']> {
  const pkg = JSON.parse(await readFile(join(packageDir(), 'package.json'), 'utf8')) as {version: string; license: string}
  const lock = JSON.parse(await readFile(join(ROOT, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, {version?: string; integrity?: string}>
  }
  const locked = lock.packages[`node_modules/${PACKAGE}`]
  if (locked?.version !== pkg.version || !locked.integrity) {
    throw new Error(`installed ${PACKAGE} ${pkg.version} is not the one package-lock.json pins (${locked?.version}); run npm ci`)
  }
  return {
    package: PACKAGE,
    version: pkg.version,
    integrity: locked.integrity,
    license: pkg.license,
    files: [MODEL_JSON, ...WEIGHT_SHARDS],
  }
}

/** The model bytes, converted from the package's MobileNetV2 (the model nsfwjs loads by default). */
export async function convertNsfwjs(version: string): Promise<Uint8Array> {
  const {MobileNetV2Model} = require(`${PACKAGE}/models/mobilenet_v2`) as {MobileNetV2Model: {numOfWeightBundles: number}}
  if (MobileNetV2Model.numOfWeightBundles !== WEIGHT_SHARDS.length) {
    throw new Error(`${PACKAGE} ${version} has ${MobileNetV2Model.numOfWeightBundles} weight shards for MobileNetV2, expected ${WEIGHT_SHARDS.length}`)
  }
  const dir = packageDir()
  const json = require(join(dir, MODEL_JSON)) as ModelJson
  const shards = WEIGHT_SHARDS.map((file) => Buffer.from(require(join(dir, file)) as string, 'base64'))
  const {model_config: config} = json.modelTopology
  if (config.class_name !== 'Model') throw new Error(`expected a functional Keras Model, got ${config.class_name}`)
  const weights = readQuantizedWeights(
    json.weightsManifest.flatMap((group) => group.weights),
    new Uint8Array(Buffer.concat(shards)),
  )
  return kerasToOnnx(config.config, weights, {
    graphName: 'nsfw_mobilenet_v2',
    input: NSFW_INPUT,
    output: NSFW_OUTPUT,
    docString:
      `MobileNetV2 NSFW classifier of the npm package ${PACKAGE} ${version} (MIT, Infinite Red, Inc.), converted by mod ` +
      `scripts/nsfw/convert.ts. ${NSFW_INPUT}: float32 NHWC [batch, ${NSFW_SIZE}, ${NSFW_SIZE}, 3], RGB in [0, 1]; ` +
      `${NSFW_OUTPUT}: softmax over ${NSFW_CLASSES.join(', ')}.`,
  })
}

export function sha256(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex')
}

/** Writes the ONNX file, manifest.json and LICENSE into `dir`; returns the manifest. */
export async function writeNsfwModel(dir: string): Promise<NsfwManifest> {
  const source = await sourceFacts()
  const bytes = await convertNsfwjs(source.version)
  const manifest: NsfwManifest = {
    id: MODEL_ID,
    file: NSFW_ONNX,
    size: bytes.length,
    sha256: sha256(bytes),
    source,
    input: {name: NSFW_INPUT, dtype: 'float32', shape: ['batch', NSFW_SIZE, NSFW_SIZE, 3], layout: 'NHWC'},
    output: {name: NSFW_OUTPUT, dtype: 'float32', shape: ['batch', NSFW_CLASSES.length]},
    classes: [...NSFW_CLASSES],
    preprocess:
      'RGB, 8-bit values divided by 255, then resized to 224x224 with bilinear interpolation and aligned corners ' +
      '(tf.image.resizeBilinear(x, [224, 224], true), as nsfwjs does); no mean or std normalisation.',
  }
  const licence = await readFile(join(packageDir(), 'LICENSE'), 'utf8')
  await mkdir(dir, {recursive: true})
  await writeFile(join(dir, NSFW_ONNX), bytes)
  await writeFile(join(dir, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`)
  await writeFile(
    join(dir, 'LICENSE'),
    `${NSFW_ONNX} is converted from the MobileNetV2 model of the npm package ${PACKAGE} ${source.version}, whose licence follows.\n\n${licence}`,
  )
  return manifest
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const {values} = parseArgs({options: {out: {type: 'string', default: NSFW_MODEL_DIR}}})
  const dir = values.out ?? NSFW_MODEL_DIR
  const m = await writeNsfwModel(dir)
  process.stdout.write(`wrote ${join(dir, m.file)}: ${m.size} bytes, sha256 ${m.sha256} (from ${m.source.package} ${m.source.version})\n`)
}
