// `mod scan` with the NudeNet add-on pulled into the cache folder: results carry `regions`; without it, none.
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {ROOT, runInProcess, tempDir} from '../helpers/cli.js'
import {installedNudenetFixture} from '../helpers/nudenet.js'

const dir = tempDir()
test.after(() => dir.remove())
const photo = join(ROOT, 'test', 'fixtures', 'photos', 'astronaut.jpg')

test('without the add-on, results have no regions', async () => {
  const r = await runInProcess(['scan', photo, '--json'], {env: {MOD_CACHE_DIR: join(dir.path, 'empty')}})
  assert.is(r.code, 0, r.stderr)
  assert.is('regions' in JSON.parse(r.stdout)[0], false)
})

const cache = join(dir.path, 'with-nudenet')
if (await installedNudenetFixture('mod scan with the NudeNet add-on', join(cache, 'nudenet'))) {
  test('with the add-on in the cache folder, every result has regions (none on a portrait: faces are not listed)', async () => {
    const r = await runInProcess(['scan', photo, '--json'], {env: {MOD_CACHE_DIR: cache}})
    assert.is(r.code, 0, r.stderr)
    const [result] = JSON.parse(r.stdout)
    assert.equal([result.is_safe, result.regions], [true, []])
  })
}

test.run()
