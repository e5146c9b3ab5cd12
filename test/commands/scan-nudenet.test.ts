// `mod scan` with the NudeNet add-on pulled into the cache folder: results carry `regions`; without it, none.
import {createHash} from 'node:crypto'
import {copyFileSync, mkdirSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {ROOT, runInProcess, tempDir} from '../helpers/cli.js'
import {installedNudenetFixture} from '../helpers/nudenet.js'
import {testUnless} from '../helpers/skip.js'
import {warmCacheDir} from '../helpers/warm-cache.js'

const dir = tempDir()
test.after(() => dir.remove())
const photo = join(ROOT, 'test', 'fixtures', 'photos', 'astronaut.jpg')

test('without the add-on, results have no regions', async () => {
  const r = await runInProcess(['scan', photo, '--json'], {env: {MOD_CACHE_DIR: warmCacheDir(join(dir.path, 'empty'))}})
  assert.is(r.code, 0, r.stderr)
  assert.is('regions' in JSON.parse(r.stdout)[0], false)
})

test('an installed add-on whose file is not the pinned one stops the scan (exit 2), instead of running on without it', async () => {
  const broken = join(dir.path, 'broken', 'nudenet')
  mkdirSync(broken, {recursive: true})
  copyFileSync(join(ROOT, 'models', 'nudenet.json'), join(broken, 'manifest.json'))
  writeFileSync(join(broken, '320n.onnx'), 'not a model\n')
  const sha = createHash('sha256').update('not a model\n').digest('hex')
  const r = await runInProcess(['scan', photo, '--json'], {env: {MOD_CACHE_DIR: warmCacheDir(join(dir.path, 'broken'))}})
  assert.is(r.code, 2)
  assert.match(r.stderr, `mod: model_unavailable: ${join(broken, '320n.onnx')} has sha256 ${sha}, not the c15d8273`)
  assert.match(r.stderr, ' of nudenet-320n; run `mod models pull nudenet` again\n')
  const list = await runInProcess(['models', 'list', '--json'], {env: {MOD_CACHE_DIR: warmCacheDir(join(dir.path, 'broken'))}})
  assert.equal(
    JSON.parse(list.stdout).addons.map((a: {installed: boolean; verified: boolean}) => [a.installed, a.verified]),
    [[true, false]],
  )
})

const cache = join(dir.path, 'with-nudenet')
const nudenet = await installedNudenetFixture(join(cache, 'nudenet'))
testUnless(nudenet.missing, 'with the add-on in the cache folder, every result has regions (none on a portrait: faces are not listed)', async () => {
  const r = await runInProcess(['scan', photo, '--json'], {env: {MOD_CACHE_DIR: cache}})
  assert.is(r.code, 0, r.stderr)
  const [result] = JSON.parse(r.stdout)
  assert.equal([result.is_safe, result.regions], [true, []])
})

test.run()
