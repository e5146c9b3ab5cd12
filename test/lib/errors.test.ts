// A ModError thrown inside a test is reported by uvu as the failure it is, with its message: uvu reads an error's
// `details` as its diff text and stopped the file without a word when an error carried an object there.
import {spawnSync} from 'node:child_process'
import {mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {pathToFileURL} from 'node:url'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {ROOT} from '../helpers/cli.js'

test('a ModError with context thrown in a uvu test is reported as a failure with its message, and the next test runs', () => {
  const dir = mkdtempSync(join(tmpdir(), 'mod-errors-'))
  try {
    const file = join(dir, 'throws.test.mjs')
    const uvu = pathToFileURL(join(ROOT, 'node_modules', 'uvu', 'dist', 'index.mjs')).href
    const errors = pathToFileURL(join(ROOT, 'dist', 'lib', 'errors.js')).href
    writeFileSync(
      file,
      `import {test} from ${JSON.stringify(uvu)}\nimport {ModError} from ${JSON.stringify(errors)}\n` +
        `test('throws', () => { throw new ModError('bad_request', 'the reason given', {status: 404}) })\n` +
        `test('runs after it', () => {})\ntest.run()\n`,
    )
    const run = spawnSync(process.execPath, [file], {encoding: 'utf8', env: {...process.env, NO_COLOR: '1', FORCE_COLOR: '0'}})
    const out = run.stdout.replace(/\x1b\[[0-9;]*m/g, '')
    assert.match(out, /FAIL\s+"throws"/, out)
    assert.match(out, /the reason given/)
    assert.match(out, /Total:\s+2\n\s+Passed:\s+1\n/)
  } finally {
    rmSync(dir, {recursive: true, force: true})
  }
})

test.run()
