import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {runCli, tempDir} from '../helpers/cli.js'

const dir = tempDir()
test.after(() => dir.remove())

test('models list --json names every preset, its model id and that none is installed in an empty cache', async () => {
  const cache = join(dir.path, 'cache')
  const r = await runCli(['models', 'list', '--json'], {env: {MOD_CACHE_DIR: cache}})
  assert.is(r.code, 0, r.stderr)
  const listing = JSON.parse(r.stdout)
  assert.is(listing.cache_dir, cache)
  assert.equal(
    listing.presets.map((p: {preset: string; model: string; installed: boolean; dir: string}) => [p.preset, p.model, p.installed, p.dir]),
    [
      ['fast', 'clip-vit-base-patch32', false, join(cache, 'fast')],
      ['balanced', 'clip-vit-base-patch16', false, join(cache, 'balanced')],
      ['accurate', 'clip-vit-large-patch14', false, join(cache, 'accurate')],
    ],
  )
})

test('models pull refuses an unknown preset as a usage error', async () => {
  const r = await runCli(['models', 'pull', 'huge'], {env: {MOD_CACHE_DIR: join(dir.path, 'cache')}})
  assert.is(r.code, 2)
  assert.match(r.stderr, /huge/)
})

test.run()
