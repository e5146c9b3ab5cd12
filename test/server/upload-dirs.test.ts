import {spawnSync} from 'node:child_process'
import {mkdirSync, readdirSync, writeFileSync} from 'node:fs'
import {hostname} from 'node:os'
import {join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {isRunning, processUploadDir, sweepUploads, uploadsRoot} from '../../src/server/upload-dirs.js'
import {tempDir} from './harness.js'

const dir = tempDir('mod-upload-dirs-')
test.after(() => dir.remove())

/** The id of a process that has ended. */
function endedPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], {encoding: 'utf8'})
  return Number(child.stdout)
}

/** A process folder under `root` with an upload in it, as the video route leaves it. */
function leftover(root: string, name: string): void {
  mkdirSync(join(root, name, 'mod-video-abc'), {recursive: true})
  writeFileSync(join(root, name, 'mod-video-abc', 'upload'), 'partial video')
}

test('uploads go to a folder of this user under the temp folder, one folder per process named <pid>@<host>', () => {
  const root = uploadsRoot('/tmp')
  assert.is(root, `/tmp/mod-uploads-${process.getuid?.()}`)
  assert.is(processUploadDir(root), join(root, `${process.pid}@${hostname()}`))
  assert.is(processUploadDir(root, 42, 'box'), join(root, '42@box'))
})

test('a process that ended is not running; this one is', () => {
  assert.is(isRunning(endedPid()), false)
  assert.is(isRunning(process.pid), true)
})

test('the sweep removes the folders of ended processes of this host and keeps everything else', async () => {
  const root = join(dir.path, 'sweep')
  const host = hostname()
  const ended = endedPid()
  leftover(root, `${ended}@${host}`)
  leftover(root, `${process.pid}@${host}`)
  leftover(root, `${ended}@another-host`)
  leftover(root, 'notes')
  writeFileSync(join(root, `${ended + 1}@${host}`), 'a file, not a process folder')
  const removed = await sweepUploads(root, {running: (pid) => pid !== ended && pid !== ended + 1})
  assert.equal(removed, [`${ended}@${host}`])
  assert.equal(readdirSync(root).sort(), [`${ended + 1}@${host}`, `${ended}@another-host`, `${process.pid}@${host}`, 'notes'].sort())
})

test('a folder of a process still running is kept (the real check)', async () => {
  const root = join(dir.path, 'real')
  const ended = endedPid()
  leftover(root, `${ended}@${hostname()}`)
  leftover(root, `1@${hostname()}`)
  assert.equal(await sweepUploads(root), [`${ended}@${hostname()}`])
  assert.equal(readdirSync(root), [`1@${hostname()}`])
})

test('no uploads folder yet: nothing to sweep', async () => {
  assert.equal(await sweepUploads(join(dir.path, 'never-made')), [])
})

test.run()
