import {rmSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {scanInputs, type ScanItem} from '../../src/cli/inputs.js'
import {buildPolicy} from '../../src/lib/config/policy.js'
import {DEFAULT_LIMITS} from '../../src/lib/config/settings.js'
import {createEngine, type ItemResult} from '../../src/lib/engine.js'
import {solidPng, tempDir, TOY_MODEL} from '../helpers/cli.js'
import {warmCacheDir} from '../helpers/warm-cache.js'

const dir = tempDir('mod-inputs-')
test.after(() => dir.remove())

test('a file removed after the walk listed it is an error entry in its place, and the scan goes on', async () => {
  const png = await solidPng(0, 0, 255)
  for (const name of ['a.png', 'b.png', 'c.png']) writeFileSync(join(dir.path, name), png)
  const items: ScanItem[] = []
  for await (const item of scanInputs([dir.path], DEFAULT_LIMITS.maxBytes, new Map())) items.push(item)
  assert.equal(items.map((i) => 'input' in i), [true, true, true])
  rmSync(join(dir.path, 'b.png'))
  const engine = createEngine({preset: 'fast', modelDir: TOY_MODEL, cacheDir: warmCacheDir(join(dir.path, 'cache')), policy: buildPolicy(), limits: DEFAULT_LIMITS})
  const results: ItemResult[] = []
  try {
    for await (const r of engine.moderateMany(items.flatMap((i) => ('input' in i ? [i.input] : [])))) results.push(r)
  } finally {
    await engine.close()
  }
  assert.equal(
    results.map((r) => ('error' in r ? r.error.code : 'scored')),
    ['scored', 'unreadable_image', 'scored'],
  )
  const removed = results[1] as {error: {message: string}}
  assert.is(removed.error.message, `cannot read ${join(dir.path, 'b.png')}: it was removed after it was listed`)
})

test.run()
