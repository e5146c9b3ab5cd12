// A serving process sets V8's heap growing factor to 3 (src/server/heap.ts), unless node was started with a factor of
// its own. Read from V8's own trace (--trace-gc-verbose) of a real `mod serve` under request load: Node 20 and 22 print
// the factor a limit was set with as "Limit: ... (3.0)", Node 24 and 26 as "[HeapController] factor 3.0".
import {spawn} from 'node:child_process'
import {join} from 'node:path'

import sharp from 'sharp'
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {growHeapForServing, HEAP_GROWING_FLAG} from '../../src/server/heap.js'
import {BIN, ROOT, tempDir, TOY_MODEL} from '../helpers/cli.js'
import {warmCacheDir} from '../helpers/warm-cache.js'

const dir = tempDir('mod-heap-')
test.after(() => dir.remove())

test('growHeapForServing sets the factor once, and leaves a factor given in the node options alone', () => {
  const set: string[] = []
  assert.is(growHeapForServing(['--max-semi-space-size=4'], (flags) => set.push(flags)), true)
  assert.equal(set, [HEAP_GROWING_FLAG])
  for (const own of ['--heap-growing-percent=50', '--heap_growing_percent=0']) assert.is(growHeapForServing([own], (flags) => set.push(flags)), false)
  assert.equal(set, [HEAP_GROWING_FLAG])
})

/** The factors V8 set heap limits with while `mod serve` (node started with `nodeFlags`) answered 1280x720 JPEGs. */
async function factorsUnderLoad(nodeFlags: string[]): Promise<string[]> {
  // Its TMPDIR is the test's: the server is killed at the end, and its upload folder goes with the test's folder.
  const env = {...process.env, MOD_MODEL_DIR: TOY_MODEL, MOD_CACHE_DIR: warmCacheDir(join(dir.path, 'cache')), NO_COLOR: '1', TMPDIR: dir.path}
  const child = spawn(process.execPath, ['--trace-gc', '--trace-gc-verbose', ...nodeFlags, BIN, 'serve', '--port', '0'], {cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe']})
  let trace = ''
  let log = ''
  child.stdout.setEncoding('utf8').on('data', (d: string) => (trace += d))
  try {
    const url = await new Promise<string>((resolve, reject) => {
      child.stderr.setEncoding('utf8').on('data', (d: string) => {
        log += d
        const m = /listening on (http:\/\/[^\s"]+)/.exec(log)
        if (m) resolve(m[1])
      })
      child.once('exit', (code) => reject(new Error(`mod serve exited ${code}:\n${log}`)))
    })
    const served = trace.length
    const jpeg = await sharp({create: {width: 1280, height: 720, channels: 3, background: '#808080', noise: {type: 'gaussian', mean: 128, sigma: 40}}}).jpeg().toBuffer()
    // Each answer leaves the decoded 2.7 MB behind: enough of them make V8 collect and set a new limit.
    // The "factor" lines of Node 20 and 22 give the factor V8 would have chosen, before the flag's: their "Limit" lines are read.
    const factors = () => {
      const since = trace.slice(served)
      const limits = [...since.matchAll(/\[HeapController\] Limit: .*\((\d+\.\d)\)/g)]
      return (limits.length > 0 ? limits : [...since.matchAll(/\[HeapController\] factor (\d+\.\d)/g)]).map((m) => m[1])
    }
    for (let i = 0; i < 200 && factors().length === 0; i++) {
      const form = new FormData()
      form.append('file', new Blob([new Uint8Array(jpeg)], {type: 'image/jpeg'}), 'noise.jpg')
      const res = await fetch(`${url}/v1/moderate`, {method: 'POST', body: form})
      assert.is(res.status, 200)
      await res.arrayBuffer()
    }
    return factors()
  } finally {
    child.kill('SIGKILL')
  }
}

test('mod serve sets its heap limits with a factor of 3 under load', async () => {
  const factors = await factorsUnderLoad([])
  assert.ok(factors.length > 0, 'V8 set no heap limit in 200 requests')
  assert.ok(factors.includes('3.0'), `factors: ${factors.join(', ')}`)
})

test("a factor node was started with is V8's, not mod's", async () => {
  const factors = await factorsUnderLoad(['--heap-growing-percent=50'])
  assert.ok(factors.length > 0, 'V8 set no heap limit in 200 requests')
  assert.ok(factors.includes('1.5') && !factors.includes('3.0'), `factors: ${factors.join(', ')}`)
})

test.run()
