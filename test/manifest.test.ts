// The committed oclif.manifest.json (read by oclif at start-up instead of loading every command) is the one
// `npm run build` writes, on any machine: `npm test` builds first, so a stale or reordered file shows here.
import {execFileSync} from 'node:child_process'
import {readFileSync} from 'node:fs'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {ROOT} from './helpers/cli.js'

test('the build writes the committed oclif.manifest.json, commands in name order', () => {
  const built = readFileSync(join(ROOT, 'oclif.manifest.json'), 'utf8')
  const committed = execFileSync('git', ['show', 'HEAD:oclif.manifest.json'], {cwd: ROOT, encoding: 'utf8'})
  const names = Object.keys(JSON.parse(built).commands)
  assert.equal(names, [...names].sort((a, b) => a.localeCompare(b)))
  assert.ok(names.includes('scan') && names.includes('models:pull'), names.join(' '))
  assert.is(built, committed, 'oclif.manifest.json differs from the committed one: commit what npm run build wrote')
})

test.run()
