// `mod scan` of an animation that shows more pictures than are scored (64 frames): the result says that some were
// left out (`animation_truncated`), and so do its row and the review page; one of 64 pictures or fewer says nothing.
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

test.run()
