import {readdirSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {decodeFeatures, encodeFeatures, openFeatureCache} from '../../../src/lib/eval/feature-cache.js'
import {tempDir} from '../../helpers/cli.js'

const sha = 'ab'.repeat(32)
const features = {embedding: Float32Array.from([0.6, -0.8, 0]), signals: {nsfw: Float32Array.from([0.1, 0.2, 0.3, 0.2, 0.2])}}

test('features round-trip through the binary form, signals included', () => {
  const back = decodeFeatures(encodeFeatures(features))
  assert.ok(back)
  assert.equal([...back.embedding], [...features.embedding])
  assert.equal(Object.keys(back.signals), ['nsfw'])
  assert.equal([...back.signals.nsfw], [...features.signals.nsfw])
  assert.equal(decodeFeatures(encodeFeatures({embedding: new Float32Array(2), signals: {}}))?.signals, {})
})

test('an animation with pictures left out is said so after the round trip; a file of the version before, which cannot say it, decodes to nothing', () => {
  const animation = {...features, later: [features, features], picturesLeftOut: true as const}
  const back = decodeFeatures(encodeFeatures(animation))
  assert.is(back?.picturesLeftOut, true)
  assert.is(back?.later?.length, 2)
  assert.is(decodeFeatures(encodeFeatures(features))?.picturesLeftOut, undefined)
  // Version 3: the same layout without the flags word.
  const bytes = encodeFeatures(features)
  const three = Buffer.concat([bytes.subarray(0, 12), bytes.subarray(16)])
  three.writeUInt32LE(3, 4)
  assert.is(decodeFeatures(three), undefined)
  assert.is(bytes.readUInt32LE(4), 5)
})

test("a file of version 4, the same layout, decodes to nothing: its features were of an AVIF's or a PNG's colour as read before", () => {
  const four = Buffer.from(encodeFeatures(features))
  four.writeUInt32LE(4, 4)
  assert.is(decodeFeatures(four), undefined)
})

test('a truncated or foreign file decodes to nothing', () => {
  const bytes = encodeFeatures(features)
  assert.is(decodeFeatures(bytes.subarray(0, bytes.length - 1)), undefined)
  assert.is(decodeFeatures(Buffer.concat([bytes, Buffer.from([0])])), undefined)
  assert.is(decodeFeatures(Buffer.from('not a feature file')), undefined)
})

test('the cache stores under <cacheDir>/features/<model key>/<sha[0:2]>/<sha>.bin and leaves no temp file', async () => {
  const dir = tempDir()
  try {
    const cache = openFeatureCache(dir.path, 'toy-clip/int8')
    assert.is(await cache.get(sha), undefined)
    await Promise.all([cache.put(sha, features), cache.put(sha, features)])
    const folder = join(dir.path, 'features', 'toy-clip_int8', 'ab')
    assert.equal(readdirSync(folder), [`${sha}.bin`])
    const back = await cache.get(sha)
    assert.equal([...(back?.embedding ?? [])], [...features.embedding])
    writeFileSync(join(folder, `${sha}.bin`), 'broken')
    assert.is(await cache.get(sha), undefined)
  } finally {
    dir.remove()
  }
})

test('an unwritable cache folder does not fail a put', async () => {
  const dir = tempDir()
  try {
    writeFileSync(join(dir.path, 'features'), 'a file where the folder should be')
    const cache = openFeatureCache(dir.path, 'toy')
    await cache.put(sha, features)
    assert.is(await cache.get(sha), undefined)
  } finally {
    dir.remove()
  }
})

test.run()
