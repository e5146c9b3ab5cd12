// The README's first line runs the main job on a fresh machine: no model pulled, no cache, no MOD_* settings.
import {readFileSync, readdirSync} from 'node:fs'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {ROOT, runCli, tempDir} from './helpers/cli.js'

const home = tempDir('mod-readme-home-')
test.after(() => home.remove())

test("the README's first command scans its folder with the embedded specialist alone, with no download", async () => {
  const first = readFileSync(join(ROOT, 'README.md'), 'utf8').split('\n').find((l) => l.startsWith('    npm ci'))
  assert.ok(first, 'the README starts with the install-and-scan line')
  const command = first.trim().split(' && ').at(-1) as string
  const [node, bin, ...args] = command.split(' ')
  assert.equal([node, bin, args[0]], ['node', 'bin/run.js', 'scan'])
  // A fresh machine: HOME (and so the default cache and model folders) is empty.
  const r = await runCli(args, {env: {HOME: home.path, XDG_CACHE_HOME: join(home.path, '.cache')}})
  assert.is(r.code, 0, r.stderr)
  const images = readdirSync(join(ROOT, args[1])).filter((f) => f.endsWith('.jpg'))
  const rows = r.stdout.trim().split('\n').filter((l) => /^SAFE\s/.test(l))
  assert.is(rows.length, images.length, r.stdout)
  assert.match(r.stderr, /^mod: not evaluated: violence, gore, weapons, hate_symbols, drugs, self_harm, alcohol, tobacco \(no CLIP model installed; run `mod models pull fast`/)
  assert.match(r.stderr, new RegExp(`${images.length} scanned: ${images.length} safe, 0 unsafe, 0 errors`))
})

test.run()
