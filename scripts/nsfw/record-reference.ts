/**
 * `npm run nsfw:reference`: records what nsfwjs itself answers on the images of the NSFW parity test
 * (test/helpers/nsfw-images.ts: the photos of test/fixtures/photos decoded as mod decodes uploads, and generated
 * pictures) into test/fixtures/nsfw-reference.json, which test/lib/model/nsfw-parity.test.ts compares mod's
 * outputs with. nsfwjs (the version package.json pins) runs its bundled MobileNetV2 on TensorFlow.js's pure
 * JavaScript CPU backend, fed a tf.tensor3d of each image's decoded RGB pixels; that takes about 40 s of CPU,
 * which is why the test reads the recording instead of running nsfwjs. Each entry carries the sha256 of the
 * pixels it was recorded from, so the test notices when the images change (a new sharp, a new generated picture)
 * and asks for a new recording. Re-run after upgrading nsfwjs, @tensorflow/tfjs or sharp, or changing the images.
 */
import {createHash} from 'node:crypto'
import {readFile, writeFile} from 'node:fs/promises'
import {createRequire} from 'node:module'
import {fileURLToPath, pathToFileURL} from 'node:url'
import {parseArgs} from 'node:util'

import type {Tensor3D} from '@tensorflow/tfjs'

import {fixturePhotos, syntheticImages, type NamedImage} from '../../test/helpers/nsfw-images.js'
import type {RgbImage} from '../../src/lib/types.js'

export const NSFW_REFERENCE = fileURLToPath(new URL('../../test/fixtures/nsfw-reference.json', import.meta.url))
const PACKAGE_JSON = fileURLToPath(new URL('../../package.json', import.meta.url))

export interface NsfwReference {
  /** The versions package.json pins, which the recording was made with. */
  nsfwjs: string
  tfjs: string
  backend: 'cpu'
  model: 'MobileNetV2'
  images: {name: string; width: number; height: number; pixelsSha256: string; probabilities: Record<string, number>}[]
}

interface Nsfwjs {
  classify(img: Tensor3D, topk?: number): Promise<{className: string; probability: number}[]>
  dispose(): void
}

/** The images of the parity test, in its order. */
export async function parityImages(): Promise<NamedImage[]> {
  return [...(await fixturePhotos()), ...syntheticImages()]
}

export function pixelsSha256(image: RgbImage): string {
  return createHash('sha256').update(image.data).digest('hex')
}

/** The nsfwjs and @tensorflow/tfjs versions package.json pins (exact versions, so a recording names what it ran). */
export async function pinnedVersions(): Promise<{nsfwjs: string; tfjs: string}> {
  const pkg = JSON.parse(await readFile(PACKAGE_JSON, 'utf8')) as {devDependencies: Record<string, string>}
  return {nsfwjs: pkg.devDependencies.nsfwjs, tfjs: pkg.devDependencies['@tensorflow/tfjs']}
}

export async function recordNsfwReference(): Promise<NsfwReference> {
  // Loaded here, not at the top: the parity test imports this module's helpers without TensorFlow.js.
  const tf = await import('@tensorflow/tfjs')
  const require = createRequire(import.meta.url)
  const nsfwjs = require('nsfwjs') as {load(name: string): Promise<Nsfwjs>}
  await tf.setBackend('cpu')
  const model = await nsfwjs.load('MobileNetV2')
  try {
    const images: NsfwReference['images'] = []
    for (const {name, image} of await parityImages()) {
      const pixels = tf.tensor3d(new Int32Array(image.data), [image.height, image.width, 3], 'int32')
      // classify() names each probability, so the recording does not depend on the order of nsfwjs's outputs.
      const top = await model.classify(pixels, 5)
      pixels.dispose()
      const probabilities = Object.fromEntries([...top].sort((a, b) => a.className.localeCompare(b.className)).map((t) => [t.className, t.probability]))
      images.push({name, width: image.width, height: image.height, pixelsSha256: pixelsSha256(image), probabilities})
    }
    return {...(await pinnedVersions()), backend: 'cpu', model: 'MobileNetV2', images}
  } finally {
    model.dispose()
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const {values} = parseArgs({options: {out: {type: 'string', default: NSFW_REFERENCE}}})
  const out = values.out ?? NSFW_REFERENCE
  const reference = await recordNsfwReference()
  await writeFile(out, `${JSON.stringify(reference, null, 2)}\n`)
  process.stdout.write(`wrote ${out}: ${reference.images.length} images, nsfwjs ${reference.nsfwjs} on @tensorflow/tfjs ${reference.tfjs} (cpu)\n`)
}
