// makeDir: a folder and its missing parents, and an error (never a hang) where the file system refuses one.
import {existsSync, mkdtempSync, rmSync, statSync, symlinkSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {makeDir} from '../../src/lib/make-dir.js'

const dir = mkdtempSync(join(tmpdir(), 'mod-make-dir-'))
test.after(() => rmSync(dir, {recursive: true, force: true}))

/** The error `work` ends with, or 'still running' after 5 s (Node's recursive mkdir under /proc never ends). */
async function outcome(work: Promise<void>): Promise<string> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<string>((resolve) => (timer = setTimeout(() => resolve('still running'), 5000)))
  try {
    return await Promise.race([work.then(() => 'made', (e: NodeJS.ErrnoException) => e.code ?? e.message), late])
  } finally {
    clearTimeout(timer)
  }
}

test('makes a folder and its missing parents, with the mode asked; a folder already there is fine', async () => {
  const deep = join(dir, 'a', 'b', 'c')
  await makeDir(deep, 0o700)
  assert.ok(statSync(deep).isDirectory())
  assert.is(statSync(join(dir, 'a')).mode & 0o777, 0o700)
  await makeDir(deep)
  await makeDir(dir)
})

test('a path the file system refuses ends with its error at once: under /proc, through a link to nowhere, through a file, a loop of links', async () => {
  if (existsSync('/proc/self')) assert.is(await outcome(makeDir('/proc/mod-make-dir-test/sub')), 'ENOENT')
  symlinkSync(join(dir, 'nowhere'), join(dir, 'dangling'))
  assert.is(await outcome(makeDir(join(dir, 'dangling', 'sub'))), 'ENOENT')
  writeFileSync(join(dir, 'file'), '')
  assert.is(await outcome(makeDir(join(dir, 'file', 'sub'))), 'ENOTDIR')
  assert.is(await outcome(makeDir(join(dir, 'file'))), 'ENOTDIR')
  symlinkSync(join(dir, 'loop'), join(dir, 'loop'))
  assert.is(await outcome(makeDir(join(dir, 'loop', 'sub'))), 'ELOOP')
})

test.run()
