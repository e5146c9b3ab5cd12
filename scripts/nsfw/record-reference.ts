/**
 * `npm run nsfw:reference [-- --model inception_v3]`: records what nsfwjs itself answers on the images of the
 * NSFW parity tests (test/helpers/nsfw-images.ts: the photos of test/fixtures/photos prepared as the specialist
 * prepares every frame, decoded and resampled to its 448-pixel canonical square, and generated pictures of
 * other sizes) into test/fixtures/nsfw-reference.json (MobileNetV2, the default) or
 * test/fixtures/nsfw-reference-inception-v3.json, which test/lib/signals/nsfw/parity.test.ts compares mod's
 * outputs with. nsfwjs (the version package.json pins) runs its bundled model on TensorFlow.js's pure
 * JavaScript CPU backend, fed a tf.tensor3d of each image's decoded RGB pixels; that takes about 40 s of CPU
 * for MobileNetV2's 20 images and tens of seconds for each image on InceptionV3, which is why the test reads
 * the recordings instead of running nsfwjs, and why InceptionV3's covers a handful of the images. Each entry carries the sha256 of the pixels it was recorded from, so the test notices when the
 * images change (a new sharp, a new generated picture) and asks for a new recording. Re-run after upgrading
 * nsfwjs, @tensorflow/tfjs or sharp, or changing the images.
 */
import {createHash} from 'node:crypto'
import {readFile, writeFile} from 'node:fs/promises'
import {createRequire} from 'node:module'
import {fileURLToPath, pathToFileURL} from 'node:url'
import {parseArgs} from 'node:util'

import type {io, Tensor3D} from '@tensorflow/tfjs'

import {fixturePhotos, syntheticImages, type NamedImage} from '../../test/helpers/nsfw-images.js'
import {DEFAULT_LIMITS} from '../../src/lib/config/settings.js'
import {decodeImage} from '../../src/lib/image/decode.js'
import {frameToScore} from '../../src/lib/image/prepare.js'
import {resampleSquare} from '../../src/lib/image/square.js'
import {DEFAULT_NSFW_MODEL, NSFW_MODELS, type NsfwModelName} from '../../src/lib/signals/nsfw/manifest.js'
import {CANONICAL_SIDE} from '../../src/lib/signals/nsfw/runner.js'
import type {RgbImage} from '../../src/lib/types.js'
import {nsfwjsFiles, nsfwjsModel} from './convert.js'

/** Each model's recording. */
export const NSFW_REFERENCES: Record<NsfwModelName, string> = {
  mobilenet_v2: fileURLToPath(new URL('../../test/fixtures/nsfw-reference.json', import.meta.url)),
  inception_v3: fileURLToPath(new URL('../../test/fixtures/nsfw-reference-inception-v3.json', import.meta.url)),
}

/**
 * The handful of images InceptionV3's recording and test cover (each costs nsfwjs tens of seconds of CPU): a
 * person, an animal, skin-coloured and reddish photos, a picture smaller than the input (enlarged) and a line
 * drawing.
 */
const INCEPTION_IMAGES = new Set(['astronaut.jpg', 'chelsea.jpg', 'coffee.jpg', 'retina.jpg', 'noise 97x131', 'skin ellipse 500x700', 'line drawing 400x400'])
const PACKAGE_JSON = fileURLToPath(new URL('../../package.json', import.meta.url))

export interface NsfwReference {
  /** The versions package.json pins, which the recording was made with. */
  nsfwjs: string
  tfjs: string
  backend: 'cpu'
  /** nsfwjs's name for the model: MobileNetV2, InceptionV3. */
  model: string
  images: {name: string; width: number; height: number; pixelsSha256: string; probabilities: Record<string, number>}[]
}

interface Nsfwjs {
  classify(img: Tensor3D, topk?: number): Promise<{className: string; probability: number}[]>
  dispose(): void
}

/**
 * The photos as the specialist's models see them (nsfwjs's own resize of the square is then the same on both
 * sides): decoded as the engine decodes them for the specialist, borders kept, resampled to the canonical square.
 */
async function canonicalPhotos(): Promise<NamedImage[]> {
  return Promise.all(
    (await fixturePhotos()).map(async ({name, file}) => {
      const [decoded] = await decodeImage(file as Buffer, DEFAULT_LIMITS, undefined, CANONICAL_SIDE)
      return {name, image: await resampleSquare(frameToScore(decoded, false), CANONICAL_SIDE)}
    }),
  )
}

/** The images of a model's parity test, in its order. */
export async function parityImages(model: NsfwModelName = DEFAULT_NSFW_MODEL): Promise<NamedImage[]> {
  const all = [...(await canonicalPhotos()), ...syntheticImages()]
  return model === 'inception_v3' ? all.filter(({name}) => INCEPTION_IMAGES.has(name)) : all
}

export function pixelsSha256(image: RgbImage): string {
  return createHash('sha256').update(image.data).digest('hex')
}

/** The nsfwjs and @tensorflow/tfjs versions package.json pins (exact versions, so a recording names what it ran). */
export async function pinnedVersions(): Promise<{nsfwjs: string; tfjs: string}> {
  const pkg = JSON.parse(await readFile(PACKAGE_JSON, 'utf8')) as {devDependencies: Record<string, string>}
  return {nsfwjs: pkg.devDependencies.nsfwjs, tfjs: pkg.devDependencies['@tensorflow/tfjs']}
}

/**
 * nsfwjs with one of its models. MobileNetV2 loads by name. InceptionV3 is handed nsfwjs's own files from memory
 * with the input side nsfwjs's definition of it names (299): loading it by name runs the package's __importStar
 * over each 5.6 MB shard string, which defines one property per character. The model, its weights, the
 * preprocessing and classify() are nsfwjs's either way.
 */
async function loadNsfwjs(tf: typeof import('@tensorflow/tfjs'), model: NsfwModelName): Promise<Nsfwjs> {
  const require = createRequire(import.meta.url)
  const nsfwjs = require('nsfwjs') as {load(name: string | io.IOHandler, options?: {size: number}): Promise<Nsfwjs>}
  const {nsfwjsName, side} = nsfwjsModel(model)
  if (model === 'mobilenet_v2') return nsfwjs.load(nsfwjsName)
  const {json, weightData} = nsfwjsFiles(model)
  const handler = tf.io.fromMemory({
    modelTopology: json.modelTopology,
    weightSpecs: json.weightsManifest.flatMap((group) => group.weights) as io.WeightsManifestEntry[],
    weightData: weightData.slice().buffer,
  })
  return nsfwjs.load(handler, {size: side})
}

export async function recordNsfwReference(model: NsfwModelName = DEFAULT_NSFW_MODEL): Promise<NsfwReference> {
  // Loaded here, not at the top: the parity tests import this module's helpers without TensorFlow.js.
  const tf = await import('@tensorflow/tfjs')
  await tf.setBackend('cpu')
  const nsfwjs = await loadNsfwjs(tf, model)
  try {
    const images: NsfwReference['images'] = []
    for (const {name, image} of await parityImages(model)) {
      const pixels = tf.tensor3d(new Int32Array(image.data), [image.height, image.width, 3], 'int32')
      // classify() names each probability, so the recording does not depend on the order of nsfwjs's outputs.
      const top = await nsfwjs.classify(pixels, 5)
      pixels.dispose()
      const probabilities = Object.fromEntries([...top].sort((a, b) => a.className.localeCompare(b.className)).map((t) => [t.className, t.probability]))
      images.push({name, width: image.width, height: image.height, pixelsSha256: pixelsSha256(image), probabilities})
    }
    return {...(await pinnedVersions()), backend: 'cpu', model: nsfwjsModel(model).nsfwjsName, images}
  } finally {
    nsfwjs.dispose()
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const {values} = parseArgs({options: {model: {type: 'string', default: DEFAULT_NSFW_MODEL}, out: {type: 'string'}}})
  const model = values.model as NsfwModelName
  if (!(model in NSFW_MODELS)) throw new Error(`--model: one of ${Object.keys(NSFW_MODELS).join(', ')}`)
  const out = values.out ?? NSFW_REFERENCES[model]
  const reference = await recordNsfwReference(model)
  await writeFile(out, `${JSON.stringify(reference, null, 2)}\n`)
  process.stdout.write(`wrote ${out}: ${reference.images.length} images, nsfwjs ${reference.nsfwjs} ${reference.model} on @tensorflow/tfjs ${reference.tfjs} (cpu)\n`)
}
