// `mod scan` of an animation that shows more pictures than are scored (64 frames): the result says that some were
// left out (`animation_truncated`), and so do its row and the review page; one of 64 pictures or fewer says nothing.
// With --strict, a gate's flag, such an animation fails the run (exit 2): a check that was not whole.
import {readFileSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {runInProcess, tempDir, TOY_MODEL} from '../helpers/cli.js'
import {slideshowWebp} from '../helpers/slideshow.js'
import {warmCacheDir} from '../helpers/warm-cache.js'

const dir = tempDir('mod-scan-animations-')
test.after(() => dir.remove())

test('an animation of more other pictures than are scored is animation_truncated, and its SAFE row and review page say so', async () => {
  // The specialist off: 128 frames of it would be most of this test's time, and which frames are scored does not
  // depend on the signals.
  const policy = join(dir.path, 'policy.yaml')
  writeFileSync(policy, 'specialists: {nsfw: false}\n')
  const env = {MOD_MODEL_DIR: TOY_MODEL, MOD_CACHE_DIR: warmCacheDir(join(dir.path, 'cache')), MOD_CONFIG: policy}
  writeFileSync(join(dir.path, 'seventy.webp'), await slideshowWebp(70))
  writeFileSync(join(dir.path, 'sixty-four.webp'), await slideshowWebp(64))
  const json = await runInProcess(['scan', join(dir.path, 'seventy.webp'), join(dir.path, 'sixty-four.webp'), '--json'], {env})
  assert.is(json.code, 0, json.stderr)
  const [seventy, sixtyFour] = JSON.parse(json.stdout) as {source: string; is_safe: boolean; animation_truncated?: true}[]
  assert.equal([seventy.is_safe, seventy.animation_truncated], [true, true])
  assert.is('animation_truncated' in sixtyFour, false)
  const table = await runInProcess(['scan', join(dir.path, 'seventy.webp'), join(dir.path, 'sixty-four.webp')], {env})
  const rows = table.stdout.split('\n')
  assert.match(rows.find((r) => r.includes('seventy.webp')) ?? '', /^SAFE {4}\S+seventy\.webp {2}\(some pictures of the animation not scored; highest: \w+ \d\.\d\d\)$/)
  assert.not.match(rows.find((r) => r.includes('sixty-four.webp')) ?? '', 'not scored')
  // The review page (both safe, shown as samples) notes it too.
  const page = join(dir.path, 'report.html')
  const report = await runInProcess(['scan', join(dir.path, 'seventy.webp'), join(dir.path, 'sixty-four.webp'), '--report', page, '--report-sample', '2'], {env})
  assert.is(report.code, 0, report.stderr)
  const html = readFileSync(page, 'utf8')
  const items = JSON.parse(/<script id="report-items" type="application\/json">([^]*?)<\/script>/.exec(html)?.[1] ?? '[]') as {path: string; notes?: string[]}[]
  const notes = new Map(items.map((i) => [i.path.split('/').pop(), i.notes ?? []]))
  assert.equal(notes.get('seventy.webp'), ['some pictures of the animation not scored'])
  assert.equal(notes.get('sixty-four.webp'), [])
})

test('--strict: an animation not scored whole exits 2 after every result, naming how many; one scored whole exits 0', async () => {
  const policy = join(dir.path, 'policy.yaml')
  writeFileSync(policy, 'specialists: {nsfw: false}\n')
  const env = {MOD_MODEL_DIR: TOY_MODEL, MOD_CACHE_DIR: warmCacheDir(join(dir.path, 'cache-strict')), MOD_CONFIG: policy}
  const [seventy, sixtyFour] = [join(dir.path, 'strict-seventy.webp'), join(dir.path, 'strict-sixty-four.webp')]
  writeFileSync(seventy, await slideshowWebp(70))
  writeFileSync(sixtyFour, await slideshowWebp(64))
  const partial = await runInProcess(['scan', seventy, sixtyFour, '--json', '--strict'], {env})
  assert.is(partial.code, 2, partial.stderr)
  assert.equal((JSON.parse(partial.stdout) as {animation_truncated?: true}[]).map((r) => r.animation_truncated ?? false), [true, false])
  assert.match(partial.stderr, 'mod: --strict: 1 animation had pictures left unscored (more than are scored per animation)\n')
  const whole = await runInProcess(['scan', sixtyFour, '--strict'], {env})
  assert.is(whole.code, 0, whole.stderr)
  assert.not.match(whole.stderr, 'left unscored')
  // Without --strict the result says it, and the run passes.
  assert.is((await runInProcess(['scan', seventy], {env})).code, 0)
})

test.run()
