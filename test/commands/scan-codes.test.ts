// The built CLI reads codes in its worker thread: `mod scan` as a process (bin/run.js, from dist) of an image
// with a QR code under a codes rule names the code and the hit, and exits when done (the idle thread keeps
// nothing running).
import {writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {runCli, tempDir, TOY_MODEL} from '../helpers/cli.js'
import {warmCacheDir} from '../helpers/warm-cache.js'
import {drawCode} from '../lib/signals/codes/draw.js'

const dir = tempDir()
test.after(() => dir.remove())

test('mod scan of an image with a QR code reads it, from the built package', async () => {
  const image = join(dir.path, 'menu.png')
  const policy = join(dir.path, 'policy.yaml')
  writeFileSync(image, (await drawCode('QRCode', 'https://shop.example/menu', 4)).png)
  writeFileSync(policy, 'codes:\n  rules:\n    links:\n      category: contact_info\n      any: true\n')
  const env = {MOD_MODEL_DIR: TOY_MODEL, MOD_CACHE_DIR: warmCacheDir(join(dir.path, 'cache')), MOD_THREADS: '1'}
  const r = await runCli(['scan', image, '--config', policy, '--json'], {env})
  const [result] = JSON.parse(r.stdout) as {codes: {format: string; payload: string}[]; code_hits: {rule: string}[]; codes_truncated?: boolean}[]
  assert.equal(
    [result.codes.map((c) => [c.format, c.payload]), result.code_hits.map((h) => h.rule), result.codes_truncated],
    [[['qr_code', 'https://shop.example/menu']], ['links'], undefined],
  )
  assert.is(r.code, 1, r.stderr)
})

test.run()
