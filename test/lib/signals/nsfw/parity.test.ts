/**
 * The embedded specialists against nsfwjs itself: nsfwjs (the version in package.json) with its bundled
 * MobileNetV2 and InceptionV3 on its own TensorFlow.js runtime (pure JavaScript CPU backend), fed a tf.tensor3d
 * of the same decoded RGB pixels, and mod's ONNX runner with mod's preprocessing at each model's side. Every one
 * of the five probabilities agrees within 1e-4 (measured on 2026-11-28: 5.5e-6 for MobileNetV2, 3e-7 for
 * InceptionV3; the weights are nsfwjs's bit for bit, what differs is the order of float32 sums in the
 * convolutions). nsfwjs's answers are recorded by
 * scripts/nsfw/record-reference.ts (`npm run nsfw:reference`, about 40 s of CPU for MobileNetV2's 20 images and
 * as much per image for InceptionV3's handful) in test/fixtures/nsfw-reference*.json, with the sha256 of the
 * pixels each was computed from.
 */
import {readFile} from 'node:fs/promises'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {nsfwPreprocess} from '../../../../src/lib/signals/nsfw/preprocess.js'
import {openNsfw} from '../../../../src/lib/signals/nsfw/model.js'
import {NSFW_CLASSES, NSFW_MODELS, type NsfwModelName} from '../../../../src/lib/signals/nsfw/manifest.js'
import {rejection} from '../../../helpers/errors.js'
import {NSFW_REFERENCES, parityImages, pinnedVersions, pixelsSha256, type NsfwReference} from '../../../../scripts/nsfw/record-reference.js'

const TOLERANCE = 1e-4
/** nsfwjs's name for each model, as its recording states it. */
const NSFWJS_NAMES: Record<NsfwModelName, string> = {mobilenet_v2: 'MobileNetV2', inception_v3: 'InceptionV3'}

for (const name of Object.keys(NSFW_MODELS) as NsfwModelName[]) {
  const rerecord = `run \`npm run nsfw:reference -- --model ${name}\` and commit ${NSFW_REFERENCES[name]}`
  const reference = JSON.parse(await readFile(NSFW_REFERENCES[name], 'utf8')) as NsfwReference

  test(`${name}: the recording was made with the nsfwjs and TensorFlow.js versions package.json pins`, async () => {
    const pinned = await pinnedVersions()
    assert.equal({nsfwjs: reference.nsfwjs, tfjs: reference.tfjs}, pinned, rerecord)
    assert.equal({backend: reference.backend, model: reference.model}, {backend: 'cpu', model: NSFWJS_NAMES[name]})
  })

  test(`${name}: mod and nsfwjs give the same five probabilities on photos and generated images`, async () => {
    const model = await openNsfw({model: name})
    try {
      assert.is(model.side, NSFW_MODELS[name].side)
      assert.is(model.manifest.id, NSFW_MODELS[name].id)
      const images = await parityImages(name)
      assert.ok(images.length >= 6, `${images.length} images`)
      // The same images, in the same order, with the very pixels nsfwjs was fed.
      assert.equal(
        images.map(({name, image}) => ({name, width: image.width, height: image.height, pixelsSha256: pixelsSha256(image)})),
        reference.images.map(({name, width, height, pixelsSha256}) => ({name, width, height, pixelsSha256})),
        `the parity images differ from the recorded ones: ${rerecord}`,
      )
      const batch = new Float32Array(images.length * model.viewSize)
      images.forEach(({image}, i) => nsfwPreprocess(image, {side: model.side, out: batch, offset: i * model.viewSize}))
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
      process.stdout.write(`nsfw parity, ${name}: ${images.length} images, max difference ${worst.diff.toExponential(2)} (${worst.name})\n`)
      const refused = await rejection(model.classify(new Float32Array(model.viewSize - 1), 1))
      assert.match(refused.message, `expected 1 x ${model.side} x ${model.side} x 3 values`)
    } finally {
      await model.close()
    }
  })
}

test.run()
