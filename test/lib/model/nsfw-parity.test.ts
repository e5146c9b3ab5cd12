/**
 * The embedded specialist against nsfwjs itself: nsfwjs (the version in package.json) with its bundled MobileNetV2 on its own
 * TensorFlow.js runtime (pure JavaScript CPU backend), fed a tf.tensor3d of the same decoded RGB pixels, and
 * mod's ONNX runner with mod's preprocessing. Every one of the five probabilities agrees within 0.01.
 */
import {createRequire} from 'node:module'

import * as tf from '@tensorflow/tfjs'
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {NSFW_VIEW_SIZE, nsfwPreprocess} from '../../../src/lib/image/nsfw-preprocess.js'
import {openNsfw} from '../../../src/lib/model/nsfw.js'
import {NSFW_CLASSES} from '../../../src/lib/model/nsfw-manifest.js'
import {fixturePhotos, syntheticImages} from '../../helpers/nsfw-images.js'

interface Nsfwjs {
  classify(img: tf.Tensor3D, topk?: number): Promise<{className: string; probability: number}[]>
  dispose(): void
}

const TOLERANCE = 0.01

const require = createRequire(import.meta.url)
const nsfwjs = require('nsfwjs') as {load(name: string): Promise<Nsfwjs>}

test('mod and nsfwjs give the same five probabilities on photos and generated images', async () => {
  await tf.setBackend('cpu')
  const reference = await nsfwjs.load('MobileNetV2')
  const model = await openNsfw()
  try {
    const images = [...(await fixturePhotos()), ...syntheticImages()]
    assert.ok(images.length >= 20, `${images.length} images`)
    const batch = new Float32Array(images.length * NSFW_VIEW_SIZE)
    images.forEach(({image}, i) => nsfwPreprocess(image, {out: batch, offset: i * NSFW_VIEW_SIZE}))
    const ours = await model.classify(batch, images.length)

    let worst = {diff: 0, name: ''}
    for (const [i, {name, image}] of images.entries()) {
      const pixels = tf.tensor3d(new Int32Array(image.data), [image.height, image.width, 3], 'int32')
      // classify() runs infer() and names each probability, so the class order mod assumes is checked too.
      const top = await reference.classify(pixels, NSFW_CLASSES.length)
      pixels.dispose()
      assert.is(top.length, NSFW_CLASSES.length)
      for (const {className, probability} of top) {
        const k = NSFW_CLASSES.indexOf(className as (typeof NSFW_CLASSES)[number])
        assert.ok(k >= 0, `unknown class ${className}`)
        const diff = Math.abs(ours[i][k] - probability)
        if (diff > worst.diff) worst = {diff, name}
        assert.ok(diff <= TOLERANCE, `${name} ${className}: mod ${ours[i][k]} vs nsfwjs ${probability}`)
      }
    }
    process.stdout.write(`nsfw parity: ${images.length} images, max difference ${worst.diff.toExponential(2)} (${worst.name})\n`)
  } finally {
    reference.dispose()
    await model.close()
  }
})

test.run()
