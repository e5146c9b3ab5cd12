// `mod scan` (the built CLI, default specialists: toy CLIP and the NSFW specialist) over a folder holding every
// shape of the sweep, 1 to 10^7 px both ways: an entry per file, a side over 65 535 px an error entry, any
// other sliver the result of its centre 20 : 1 part scanned on its own. The same from stdin.
import {mkdirSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {MAX_ASPECT_RATIO} from '../../src/lib/image/aspect.js'
import {MAX_SIDE} from '../../src/lib/image/decode.js'
import {runCli, runInProcess, tempDir, TOY_MODEL} from '../helpers/cli.js'
import {greyPng, sweepShapes} from '../helpers/hostile-images.js'
import {warmCacheDir} from '../helpers/warm-cache.js'

const dir = tempDir('mod-scan-shapes-')
const env = {MOD_MODEL_DIR: TOY_MODEL, MOD_CACHE_DIR: warmCacheDir(join(dir.path, 'cache'))}
const shapes = join(dir.path, 'shapes')
const centres = join(dir.path, 'centres')

test.after(() => dir.remove())

type Entry = {source: string; error?: {code: string; message: string}}

/**
 * Entries by file name; exit 2 when an input was refused (and nothing was unsafe: the toy model finds grey safe).
 * Folders are scanned in this process; stdin needs a real one.
 */
async function scan(args: string[], exit: number, stdin?: Buffer): Promise<Map<string, Entry>> {
  const command = ['scan', ...args, '--ndjson']
  const r = stdin ? await runCli(command, {env, stdin}) : await runInProcess(command, {env})
  assert.is(r.code, exit, r.stderr)
  const entries = r.stdout.trim().split('\n').map((line) => JSON.parse(line) as Entry)
  return new Map(entries.map((e) => [e.source.split('/').pop() as string, e]))
}

test('every shape of the sweep gets its entry: the centre part scored, or refused over the longest side', async () => {
  mkdirSync(shapes)
  mkdirSync(centres)
  for (const {width, height} of sweepShapes()) {
    const name = `${width}x${height}.png`
    writeFileSync(join(shapes, name), greyPng(width, height))
    if (Math.max(width, height) <= MAX_SIDE) {
      writeFileSync(join(centres, name), greyPng(Math.min(width, MAX_ASPECT_RATIO * height), Math.min(height, MAX_ASPECT_RATIO * width)))
    }
  }
  const scanned = await scan([shapes], 2)
  const expected = await scan([centres], 0)
  assert.is(scanned.size, sweepShapes().length)
  for (const {width, height} of sweepShapes()) {
    const name = `${width}x${height}.png`
    const {source, ...entry} = scanned.get(name) as Entry
    assert.is(source, join(shapes, name))
    if (Math.max(width, height) > MAX_SIDE) {
      assert.equal(entry, {error: {code: 'payload_too_large', message: `image is ${width}x${height}; a side may be at most ${MAX_SIDE} pixels`}}, name)
    } else {
      const {source: _, ...centre} = expected.get(name) as Entry
      assert.equal(entry, centre, name)
    }
  }
})

test('from stdin: the same answers', async () => {
  assert.equal(await scan(['-'], 0, greyPng(5000, 1)), await scan(['-'], 0, greyPng(20, 1)))
  const refused = await scan(['-'], 2, greyPng(1, 100_000))
  assert.equal([...refused.values()].map((e) => e.error), [{code: 'payload_too_large', message: `image is 1x100000; a side may be at most ${MAX_SIDE} pixels`}])
})

test.run()
