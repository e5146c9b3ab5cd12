import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {buildPolicy} from '../../../src/lib/config/policy.js'
import {DEFAULT_LIMITS} from '../../../src/lib/config/settings.js'
import {evaluateDataset} from '../../../src/lib/eval/run.js'
import {tempDir} from '../../helpers/cli.js'
import {writeImages} from '../../helpers/dataset.js'
import {warmCacheDir} from '../../helpers/warm-cache.js'

const dir = tempDir()
test.after(() => dir.remove())

test('eval with only the embedded specialist installed scores the nudity family and names the categories it could not evaluate', async () => {
  const dataset = join(dir.path, 'dataset')
  await writeImages(dataset, 'nudity', [220, 170, 140], 2, 'skin')
  await writeImages(dataset, 'safe', [10, 10, 240], 2, 'blue', 1)
  const report = await evaluateDataset({
    dataset,
    model: {modelDir: join(dir.path, 'not-pulled'), precision: 'fp32', cacheDir: warmCacheDir(join(dir.path, 'cache')), limits: DEFAULT_LIMITS},
    policy: buildPolicy(),
  })
  assert.equal(report.labels.map((l) => l.name), ['nudity', 'sexual_activity', 'suggestive'])
  assert.equal(report.not_evaluated, ['violence', 'gore', 'weapons', 'hate_symbols', 'drugs', 'self_harm', 'alcohol', 'tobacco'])
  assert.is(report.images, 4)
  assert.is(report.images_embedded, 4)
  assert.equal(report.metrics.labels.map((l) => l.name), ['nudity', 'sexual_activity', 'suggestive'])
})

test.run()
