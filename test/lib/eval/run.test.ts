import {copyFileSync, symlinkSync} from 'node:fs'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {buildPolicy} from '../../../src/lib/config/policy.js'
import {DEFAULT_LIMITS} from '../../../src/lib/config/settings.js'
import {ModError} from '../../../src/lib/errors.js'
import {evaluateDataset} from '../../../src/lib/eval/run.js'
import {tempDir} from '../../helpers/cli.js'
import {writeImages} from '../../helpers/dataset.js'
import {warmCacheDir} from '../../helpers/warm-cache.js'

const dir = tempDir()
test.after(() => dir.remove())

test('eval with only the embedded specialist installed scores the nudity family, says no CLIP model scored, and names the categories it could not evaluate', async () => {
  const dataset = join(dir.path, 'dataset')
  await writeImages(dataset, 'nudity', [220, 170, 140], 2, 'skin')
  await writeImages(dataset, 'safe', [10, 10, 240], 2, 'blue', 1)
  const report = await evaluateDataset({
    dataset,
    model: {modelDir: join(dir.path, 'not-pulled'), precision: 'fp32', cacheDir: warmCacheDir(join(dir.path, 'cache')), limits: DEFAULT_LIMITS},
    policy: buildPolicy(),
  })
  assert.equal(report.labels.map((l) => l.name), ['nudity', 'sexual_activity', 'suggestive'])
  assert.is(report.model, 'no CLIP model (the NSFW specialist)')
  assert.equal(report.not_evaluated, ['violence', 'gore', 'weapons', 'hate_symbols', 'drugs', 'self_harm', 'alcohol', 'tobacco'])
  assert.is(report.images, 4)
  assert.is(report.images_embedded, 4)
  assert.equal(report.metrics.labels.map((l) => l.name), ['nudity', 'sexual_activity', 'suggestive'])
})

test('the same image under other labels in two places, copied or linked, stops the run naming each place; a copy with the same labels does not', async () => {
  const dataset = join(dir.path, 'clash')
  const [skin0, skin1] = await writeImages(dataset, 'nudity', [220, 170, 140], 2, 'skin')
  await writeImages(dataset, 'safe', [10, 10, 240], 1, 'blue', 1)
  copyFileSync(skin0, join(dataset, 'safe', 'copy.png'))
  symlinkSync(skin1, join(dataset, 'safe', 'link.png'))
  copyFileSync(skin0, join(dataset, 'nudity', 'again.png'))
  const error = await evaluateDataset({
    dataset,
    model: {modelDir: join(dir.path, 'not-pulled'), precision: 'fp32', cacheDir: warmCacheDir(join(dir.path, 'cache')), limits: DEFAULT_LIMITS},
    policy: buildPolicy(),
  }).then(
    () => undefined,
    (e: unknown) => e,
  )
  assert.instance(error, ModError)
  assert.is((error as ModError).code, 'invalid_config')
  assert.equal((error as ModError).context?.problems, [
    'safe/copy.png (safe) is the same image as nudity/again.png (nudity): keep one, and give it every label it has in labels.csv',
    'safe/link.png (safe) is the same image as nudity/skin1.png (nudity): keep one, and give it every label it has in labels.csv',
  ])
})

test.run()
