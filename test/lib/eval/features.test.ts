import {readdir} from 'node:fs/promises'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {buildPolicy, validatePolicyText} from '../../../src/lib/config/policy.js'
import {DEFAULT_LIMITS} from '../../../src/lib/config/settings.js'
import {createEngine} from '../../../src/lib/engine.js'
import {openDatasetScoring} from '../../../src/lib/eval/features.js'
import {tempDir, TOY_MODEL} from '../../helpers/cli.js'
import {noisyPng} from '../../helpers/dataset.js'
import {withoutSpecialist} from '../../helpers/signals.js'
import {warmCacheDir} from '../../helpers/warm-cache.js'

const dir = tempDir()
test.after(() => dir.remove())

const {file} = validatePolicyText('categories:\n  redness:\n    prompts: ["red"]\n    negatives: ["blue"]\n')
const policy = buildPolicy(file)
const model = {modelDir: TOY_MODEL, precision: 'fp32' as const, cacheDir: warmCacheDir(join(dir.path, 'cache')), limits: DEFAULT_LIMITS}
/** The toy CLIP model alone. */
const clipOnly = withoutSpecialist()

test('concurrent extracts (embedded together in a batch) each keep their own embedding', async () => {
  const source = await openDatasetScoring(model, {policy, signals: clipOnly})
  try {
    assert.is(source.key, 'toy-clip-reduced224')
    const images = await Promise.all([noisyPng(240, 10, 10, 1), noisyPng(10, 240, 10, 2), noisyPng(10, 10, 240, 3)])
    const features = await Promise.all(images.map((b) => source.extract(b)))
    const strongest = features.map((f) => [...f.embedding].indexOf(Math.max(...f.embedding)))
    assert.equal(strongest, [0, 1, 2])
    for (const f of features) assert.equal(f.signals, {})
    assert.is(source.imagesEmbedded(), 3)
  } finally {
    await source.dispose()
  }
})

test('eval, calibrate and head train open the image encoder from the optimised graph cached in the cache folder', async () => {
  const cacheDir = join(dir.path, 'graph-cache')
  const source = await openDatasetScoring({...model, cacheDir}, {policy, signals: clipOnly})
  try {
    await source.extract(await noisyPng(200, 30, 30, 4))
  } finally {
    await source.dispose()
  }
  const entries = await readdir(join(cacheDir, 'ort'))
  assert.is(entries.length, 1)
  assert.ok((await readdir(join(cacheDir, 'ort', entries[0]))).includes('model.onnx'))
})

test('the label scorer gives the scores scan gives, and raw margins that order red above blue', async () => {
  const source = await openDatasetScoring(model, {policy, signals: clipOnly})
  const engine = createEngine({preset: 'fast', modelDir: TOY_MODEL, cacheDir: model.cacheDir, policy, limits: DEFAULT_LIMITS, signals: clipOnly})
  try {
    const scorer = source
    assert.is(scorer.labels.length, 12)
    const i = scorer.labels.findIndex((l) => l.name === 'redness')
    assert.equal(scorer.labels[i].calibration, {scale: 1, bias: 0})
    for (const [k, rgb] of [[240, 10, 10], [120, 110, 130], [10, 10, 240]].entries()) {
      const png = await noisyPng(rgb[0], rgb[1], rgb[2], 10 + k)
      const f = await source.extract(png)
      const result = await engine.moderateImage(png, 'x')
      const scores = scorer.score(f)
      for (const [j, label] of scorer.labels.entries()) {
        assert.is(scores[j], result.labels.find((l) => l.name === label.name)?.score, label.name)
      }
    }
    const raw = async (rgb: [number, number, number]) => scorer.raw(await source.extract(await noisyPng(...rgb, 5)))[i]
    assert.ok((await raw([240, 10, 10])) > 50 && (await raw([10, 10, 240])) < -50)
  } finally {
    await source.dispose()
    await engine.close()
  }
})

test('with the specialist on, its probabilities are features and the scores are still the ones scan gives', async () => {
  const source = await openDatasetScoring(model, {policy})
  const engine = createEngine({preset: 'fast', modelDir: TOY_MODEL, cacheDir: model.cacheDir, policy, limits: DEFAULT_LIMITS})
  try {
    assert.is(source.key, 'toy-clip-reduced448+nsfw-cascade-turns')
    const scorer = source
    const png = await noisyPng(200, 150, 120, 21)
    const f = await source.extract(png)
    // The gate's five probabilities, and the judge's five for each of its three views (this noise passes the gate).
    assert.is(f.signals.nsfw.length, 20)
    const result = await engine.moderateImage(png, 'x')
    const scores = scorer.score(f)
    for (const name of ['nudity', 'sexual_activity', 'suggestive', 'redness']) {
      const j = scorer.labels.findIndex((l) => l.name === name)
      assert.is(scores[j], result.labels.find((l) => l.name === name)?.score, name)
    }
  } finally {
    await source.dispose()
    await engine.close()
  }
})

test.run()
