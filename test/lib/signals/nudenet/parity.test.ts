/**
 * Parity with the nudenet Python package on images: the model input (channel order, padding, resize) and the
 * detections (labels, scores, boxes) against test/fixtures/nudenet-reference.json, recorded by
 * scripts/nudenet/record-reference.py. The detections need the real model file (test/helpers/nudenet.ts): skipped
 * without it.
 */
import {readFile} from 'node:fs/promises'
import {fileURLToPath} from 'node:url'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {decodeImage} from '../../../../src/lib/image/decode.js'
import {openNudenet, type NudenetDetector} from '../../../../src/lib/signals/nudenet/detector.js'
import {NUDENET_SIZE} from '../../../../src/lib/signals/nudenet/labels.js'
import {prepareNudenet} from '../../../../src/lib/signals/nudenet/preprocess.js'
import {installedNudenetFixture} from '../../../helpers/nudenet.js'
import {testUnless} from '../../../helpers/skip.js'

interface Reference {
  input_samples: [number, number][]
  images: Record<
    string,
    {
      width: number
      height: number
      input: {mean: number; samples: number[]}[]
      detections: {label: string; score: number; box: [number, number, number, number]}[]
    }
  >
}

const ROOT = new URL('../../../../', import.meta.url)
const reference = JSON.parse(await readFile(new URL('test/fixtures/nudenet-reference.json', ROOT), 'utf8')) as Reference
const names = Object.keys(reference.images)
const LIMITS = {maxBytes: 50 * 1024 * 1024, maxPixels: 50_000_000}

async function decoded(name: string) {
  const [frame] = await decodeImage(await readFile(fileURLToPath(new URL(name, ROOT))), LIMITS)
  return frame
}

test('the reference covers at least 20 images, some with detections', () => {
  assert.ok(names.length >= 20)
  assert.ok(names.filter((n) => reference.images[n].detections.length > 0).length >= 6)
})

test('the model input matches the package\'s: B, G, R planes of the padded, resized image, per pixel within 2/255', async () => {
  const plane = NUDENET_SIZE * NUDENET_SIZE
  for (const name of names) {
    const ref = reference.images[name]
    const frame = await decoded(name)
    assert.equal([frame.width, frame.height], [ref.width, ref.height], name)
    const {pixels} = prepareNudenet(frame)
    ref.input.forEach((channel, c) => {
      let sum = 0
      for (let i = c * plane; i < (c + 1) * plane; i++) sum += pixels[i]
      assert.ok(Math.abs(sum / plane - channel.mean) < 1 / 255, `${name} plane ${c}: mean ${sum / plane} vs ${channel.mean}`)
      reference.input_samples.forEach(([y, x], k) => {
        const v = pixels[c * plane + y * NUDENET_SIZE + x]
        assert.ok(Math.abs(v - channel.samples[k]) <= 2 / 255 + 1e-6, `${name} plane ${c} (${y}, ${x}): ${v} vs ${channel.samples[k]}`)
      })
    })
  }
})

test('generated PNGs, decoded alike by both sides, give the package\'s input exactly', async () => {
  const plane = NUDENET_SIZE * NUDENET_SIZE
  for (const name of names.filter((n) => n.endsWith('.png'))) {
    const ref = reference.images[name]
    const {pixels} = prepareNudenet(await decoded(name))
    ref.input.forEach((channel, c) => {
      const got = reference.input_samples.map(([y, x]) => Math.round(pixels[c * plane + y * NUDENET_SIZE + x] * 255))
      assert.equal(got, channel.samples.map((s) => Math.round(s * 255)), `${name} plane ${c}`)
    })
  }
})

const nudenet = await installedNudenetFixture()
let detector: NudenetDetector | undefined
test.before(async () => {
  if (nudenet.dir !== undefined) detector = await openNudenet({dir: nudenet.dir, threads: 1})
})
test.after(async () => {
  await detector?.close()
})

testUnless(nudenet.missing, 'detections match the package\'s: same labels in the same order, scores within 0.005, boxes within 1 pixel', async () => {
  for (const name of names) {
    const ref = reference.images[name].detections
    const [got] = await (detector as NudenetDetector).detect([prepareNudenet(await decoded(name))])
    assert.equal(got.map((d) => d.label), ref.map((d) => d.label), name)
    got.forEach((d, i) => {
      assert.ok(Math.abs(d.score - ref[i].score) < 0.005, `${name} #${i} score ${d.score} vs ${ref[i].score}`)
      d.box.forEach((v, k) => assert.ok(Math.abs(v - ref[i].box[k]) <= 1, `${name} #${i} box ${d.box} vs ${ref[i].box}`))
    })
  }
})

testUnless(nudenet.missing, 'a batch of frames gives each frame the detections it gets alone', async () => {
  const frames = await Promise.all(['test/fixtures/photos/astronaut.jpg', 'test/fixtures/nudenet/faces-collage.jpg'].map(decoded))
  const inputs = frames.map(prepareNudenet)
  const det = detector as NudenetDetector
  const alone = [...(await det.detect([inputs[0]])), ...(await det.detect([inputs[1]]))]
  const together = await det.detect(inputs)
  assert.equal(together.map((d) => d.map((x) => [x.label, x.box])), alone.map((d) => d.map((x) => [x.label, x.box])))
})

test.run()
