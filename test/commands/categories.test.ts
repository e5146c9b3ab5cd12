// `mod categories`: each category's threshold, origin and signals, and whether the models installed here
// evaluate it (by which signals) or not (why, and what adds it), without loading a model.
import {writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {runInProcess, tempDir} from '../helpers/cli.js'
import {TOY_MODEL} from '../server/harness.js'
import {warmCacheDir} from '../helpers/warm-cache.js'

const dir = tempDir()
test.after(() => dir.remove())

test('a fresh install: the specialist\'s three categories are evaluated, the others say to pull the CLIP model', async () => {
  const r = await runInProcess(['categories'], {env: {MOD_CACHE_DIR: warmCacheDir(join(dir.path, 'empty-cache'))}})
  assert.is(r.code, 0)
  const lines = r.stdout.split('\n')
  assert.is(lines[0], 'preset fast, model clip-vit-base-patch32; 3 of 11 categories evaluated')
  assert.is(lines[1], 'nudity           threshold 0.50  builtin  clip+nsfw                        evaluated by nsfw')
  assert.is(
    lines[5],
    'gore             threshold 0.50  builtin  clip            parent violence  NOT EVALUATED: needs the CLIP model: not installed, run `mod models pull fast`',
  )
})

test('a policy whose hash list a scan would refuse (invalid or missing) is refused here too: exit 2, each problem named', async () => {
  writeFileSync(join(dir.path, 'bad-list.txt'), 'zzzz\n')
  const env = {MOD_MODEL_DIR: TOY_MODEL, MOD_CACHE_DIR: warmCacheDir(join(dir.path, 'cache'))}
  for (const [file, problem] of [['bad-list.txt', 'bad-list.txt:1: not a PDQ hash'], ['absent.txt', 'absent.txt']]) {
    writeFileSync(join(dir.path, 'lists.yaml'), `hash_lists:\n  bad:\n    file: ${file}\n`)
    const r = await runInProcess(['categories', '--config', 'lists.yaml'], {cwd: dir.path, env})
    assert.is(r.code, 2, r.stdout)
    assert.is(r.stdout, '')
    const lines = r.stderr.trimEnd().split('\n')
    assert.match(lines[0], /^mod: invalid_config: policy .*lists\.yaml: a file it names is not valid:$/)
    assert.is(lines.length, 2, r.stderr)
    assert.match(lines[1], problem)
  }
})

test('--json carries the same state per category and the coverage', async () => {
  const r = await runInProcess(['categories', '--json'], {env: {MOD_CACHE_DIR: warmCacheDir(join(dir.path, 'empty-cache'))}})
  const listing = JSON.parse(r.stdout)
  assert.equal(listing.coverage.evaluated, 3)
  const weapons = listing.categories.find((c: {name: string}) => c.name === 'weapons')
  assert.equal([weapons.evaluated, weapons.evaluated_by, weapons.reason], [false, [], 'needs the CLIP model: not installed, run `mod models pull fast`'])
})

test('with a CLIP model every category is evaluated, the sexual-content ones by both signals', async () => {
  const r = await runInProcess(['categories'], {env: {MOD_MODEL_DIR: TOY_MODEL, MOD_CACHE_DIR: warmCacheDir(join(dir.path, 'cache'))}})
  const lines = r.stdout.split('\n')
  assert.is(lines[0], 'preset fast, model toy-clip; 11 of 11 categories evaluated')
  assert.is(lines[1], 'nudity           threshold 0.50  builtin  clip+nsfw                        evaluated by clip+nsfw')
  assert.is(lines[4], 'violence         threshold 0.50  builtin  clip                             evaluated by clip')
})

test.run()
