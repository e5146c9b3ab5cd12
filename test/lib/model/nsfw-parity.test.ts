/**
 * The embedded specialist against nsfwjs itself: nsfwjs (the version in package.json) with its bundled MobileNetV2 on its own
 * TensorFlow.js runtime (pure JavaScript CPU backend), fed a tf.tensor3d of the same decoded RGB pixels, and
 * mod's ONNX runner with mod's preprocessing. Every one of the five probabilities agrees within 0.01.
 * nsfwjs's answers are recorded by scripts/nsfw/record-reference.ts (`npm run nsfw:reference`, about 40 s of
 * CPU) in test/fixtures/nsfw-reference.json, with the sha256 of the pixels each was computed from.
 */
import {readFile} from 'node:fs/promises'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {NSFW_VIEW_SIZE, nsfwPreprocess} from '../../../src/lib/image/nsfw-preprocess.js'
import {openNsfw} from '../../../src/lib/model/nsfw.js'
import {NSFW_CLASSES} from '../../../src/lib/model/nsfw-manifest.js'
import {NSFW_REFERENCE, parityImages, pinnedVersions, pixelsSha256, type NsfwReference} from '../../../scripts/nsfw/record-reference.js'

const TOLERANCE = 0.01
const RERECORD = 'run `npm run nsfw:reference` and commit test/fixtures/nsfw-reference.json'

const reference = JSON.parse(await readFile(NSFW_REFERENCE, 'utf8')) as NsfwReference

test('the recording was made with the nsfwjs and TensorFlow.js versions package.json pins', async () => {
  const pinned = await pinnedVersions()
  assert.equal({nsfwjs: reference.nsfwjs, tfjs: reference.tfjs}, pinned, RERECORD)
  assert.equal({backend: reference.backend, model: reference.model}, {backend: 'cpu', model: 'MobileNetV2'})
})

test('mod and nsfwjs give the same five probabilities on photos and generated images', async () => {
  const model = await openNsfw()
  try {
    const images = await parityImages()
    assert.ok(images.length >= 20, `${images.length} images`)
    // The same images, in the same order, with the very pixels nsfwjs was fed.
    assert.equal(
      images.map(({name, image}) => ({name, width: image.width, height: image.height, pixelsSha256: pixelsSha256(image)})),
      reference.images.map(({name, width, height, pixelsSha256}) => ({name, width, height, pixelsSha256})),
      `the parity images differ from the recorded ones: ${RERECORD}`,
    )
    const batch = new Float32Array(images.length * NSFW_VIEW_SIZE)
    images.forEach(({image}, i) => nsfwPreprocess(image, {out: batch, offset: i * NSFW_VIEW_SIZE}))
    const ours = await model.classify(batch, images.length)

    let worst = {diff: 0, name: ''}
    for (const [i, {name, probabilities}] of reference.images.entries()) {
      // nsfwjs's classify() named each probability, so the class order mod assumes is checked too.
      assert.equal(Object.keys(probabilities).sort(), [...NSFW_CLASSES].sort())
      for (const [className, probability] of Object.entries(probabilities)) {
        const k = NSFW_CLASSES.indexOf(className as (typeof NSFW_CLASSES)[number])
        const diff = Math.abs(ours[i][k] - probability)
        if (diff > worst.diff) worst = {diff, name}
        assert.ok(diff <= TOLERANCE, `${name} ${className}: mod ${ours[i][k]} vs nsfwjs ${probability}`)
      }
    }
    process.stdout.write(`nsfw parity: ${images.length} images, max difference ${worst.diff.toExponential(2)} (${worst.name})\n`)
  } finally {
    await model.close()
  }
})

test.run()
