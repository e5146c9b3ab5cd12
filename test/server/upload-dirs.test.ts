import {spawnSync} from 'node:child_process'
import {chmodSync, chownSync, mkdirSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync} from 'node:fs'
import {hostname} from 'node:os'
import {basename, join} from 'node:path'

import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {defaultJobStorage} from '../../src/lib/config/jobs.js'
import {startStaging} from '../../src/server/jobs/staging.js'
import {isRunning} from '../../src/lib/processes.js'
import {makeUploadDir, processUploadDir, sweepUploads, uploadsRoot} from '../../src/server/upload-dirs.js'
import {runServer} from '../../src/server/run.js'
import {fakeEngine, tempDir, testSettings} from './harness.js'

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

test('the upload folder is made for this user only, in a folder of its own or in a shared sticky one like /tmp', async () => {
  const root = join(dir.path, 'made', 'mod-uploads')
  const mine = join(root, `${process.pid}@${hostname()}`)
  await makeUploadDir(mine)
  assert.is(statSync(mine).mode & 0o777, 0o700)
  assert.is(statSync(root).mode & 0o777, 0o700)
  await makeUploadDir(mine)
  const shared = join('/tmp', `mod-upload-dirs-test-${process.pid}`)
  try {
    await makeUploadDir(shared)
    assert.is(statSync(shared).isDirectory(), true)
  } finally {
    rmSync(shared, {recursive: true, force: true})
  }
})

const refusal = (folder: string) =>
  `the upload folder ${folder} or its parent belongs to another user or can be written by others: uploads are not written there`

test('an upload folder others can write to, or one of another user, is refused', async () => {
  const open = join(dir.path, 'open', `1@${hostname()}`)
  mkdirSync(open, {recursive: true})
  chmodSync(open, 0o777)
  const opened = await makeUploadDir(open).catch((e: Error & {code: string}) => [e.code, e.message])
  assert.equal(opened, ['internal', refusal(open)])
  const theirs = join(dir.path, 'theirs', `1@${hostname()}`)
  const other = await makeUploadDir(theirs, 4242).catch((e: Error & {code: string}) => [e.code, e.message])
  assert.equal(other, ['internal', refusal(theirs)])
})

test("a sticky folder of the user's own (a TMPDIR made 1777) may hold the upload folder; another user's may not", async () => {
  const uid = process.getuid?.() ?? 0
  // Run as root, the folders are made another user's: root's own sticky folders are the shared ones, like /tmp.
  const user = uid === 0 ? 4242 : uid
  const made = (path: string, mode: number, owner: number): string => {
    mkdirSync(path)
    chmodSync(path, mode)
    if (uid === 0) chownSync(path, owner, owner)
    return path
  }
  const mine = made(join(made(join(dir.path, 'own-sticky'), 0o1777, user), 'uploads'), 0o700, user)
  assert.is(await makeUploadDir(mine, user), undefined)
  if (uid !== 0) return
  const inTheirs = made(join(made(join(dir.path, 'their-sticky'), 0o1777, 4343), 'uploads'), 0o700, user)
  assert.equal(await makeUploadDir(inTheirs, user).catch((e: Error & {code: string}) => [e.code, e.message]), ['internal', refusal(inTheirs)])
})

test('a root made first by another user (a shared temp folder) is refused', async () => {
  if (process.getuid?.() !== 0) return
  const root = join(dir.path, 'planted')
  mkdirSync(root, {mode: 0o755})
  chownSync(root, 4242, 4242)
  const mine = join(root, `${process.pid}@${hostname()}`)
  const planted = await makeUploadDir(mine).catch((e: Error & {code: string}) => [e.code, e.message])
  assert.equal(planted, ['internal', refusal(mine)])
})

test('job uploads: the default storage is this user\'s own (mod-jobs-<uid>, 0700) under the temp folder; a link planted there is refused', async () => {
  const savedTmp = process.env.TMPDIR
  const tmp = join(dir.path, 'tmp')
  mkdirSync(tmp, {mode: 0o1777})
  chmodSync(tmp, 0o1777)
  process.env.TMPDIR = tmp
  try {
    const storage = defaultJobStorage()
    assert.is(storage, join(tmp, `mod-jobs-${process.getuid?.()}`))
    const staged = await startStaging(storage, '0b6f1b0e-7d2f-4f4e-9a51-1f6c7a2b9c11')
    assert.equal([statSync(storage).mode & 0o777, statSync(staged).mode & 0o777], [0o700, 0o700])
    rmSync(storage, {recursive: true})
    // Another user's folder, linked where this user's storage goes: nothing is written through the link.
    const theirs = join(dir.path, 'theirs-jobs')
    mkdirSync(theirs)
    symlinkSync(theirs, storage)
    const planted = await startStaging(storage, '0b6f1b0e-7d2f-4f4e-9a51-1f6c7a2b9c12').catch((e: Error & {code: string}) => [e.code, e.message])
    assert.equal(planted, ['internal', refusal(storage)])
    assert.equal(readdirSync(theirs), [])
  } finally {
    if (savedTmp === undefined) delete process.env.TMPDIR
    else process.env.TMPDIR = savedTmp
  }
})

/** Runs `fn` with TMPDIR set to `tmp` (made if needed), as a process started there would see it. */
async function withTmpdir(tmp: string, fn: () => Promise<void>): Promise<void> {
  const savedTmp = process.env.TMPDIR
  mkdirSync(tmp, {recursive: true})
  process.env.TMPDIR = tmp
  try {
    await fn()
  } finally {
    if (savedTmp === undefined) delete process.env.TMPDIR
    else process.env.TMPDIR = savedTmp
  }
}

/**
 * runServer on the fake engine, stopped as soon as it listens (so that a server that should not have started fails
 * the test instead of holding it); `listening` runs first. Resolves with its exit code, and whether it listened.
 */
async function serveOnce(name: string, o: {storage?: string; log?: (line: string) => void; listening?: () => void} = {}): Promise<[number, boolean]> {
  let stop = () => {}
  const stopped = new Promise<void>((resolve) => (stop = resolve))
  let listened = false
  const settings = testSettings(join(dir.path, `cache-${name}`), {preload: false})
  const code = await runServer({
    engine: fakeEngine(),
    settings: o.storage === undefined ? settings : {...settings, jobs: {...settings.jobs, storage: o.storage}},
    host: '127.0.0.1',
    port: 0,
    log: o.log ?? (() => {}),
    onListening: () => {
      listened = true
      o.listening?.()
      stop()
    },
    stop: stopped,
  })
  return [code, listened]
}

test('mod serve does not start when its upload folder could be read by others: it says so, and how to mend it', async () => {
  const tmp = join(dir.path, 'tmp-open')
  await withTmpdir(tmp, async () => {
    mkdirSync(uploadsRoot(tmp))
    chmodSync(uploadsRoot(tmp), 0o777)
    const logs: string[] = []
    assert.equal(await serveOnce('open', {log: (line) => logs.push(line)}), [2, false])
    assert.equal(logs.filter((l) => l.includes('upload folder')), [`${refusal(processUploadDir(uploadsRoot(tmp)))} (start mod with TMPDIR set to a folder of its own user)`])
  })
})

test('a mod serve that stops leaves nothing in the temp folder: its upload folder goes, and the shared root when empty', async () => {
  const tmp = join(dir.path, 'tmp-clean')
  await withTmpdir(tmp, async () => {
    let during: string[] = []
    assert.equal(await serveOnce('clean', {listening: () => (during = readdirSync(uploadsRoot(tmp)))}), [0, true])
    assert.equal(during, [basename(processUploadDir(uploadsRoot(tmp)))])
    assert.equal(readdirSync(tmp), [])
  })
})

test('the default job storage, once empty, is removed when mod serve stops; one that holds a job stays', async () => {
  const tmp = join(dir.path, 'tmp-jobs')
  await withTmpdir(tmp, async () => {
    mkdirSync(defaultJobStorage(), {mode: 0o700})
    assert.equal(await serveOnce('jobs', {storage: defaultJobStorage()}), [0, true])
    assert.equal(readdirSync(tmp), [])
    mkdirSync(join(defaultJobStorage(), 'a-job'), {recursive: true, mode: 0o700})
    assert.equal(await serveOnce('jobs', {storage: defaultJobStorage()}), [0, true])
    assert.equal(readdirSync(defaultJobStorage()), ['a-job'])
  })
})

test.run()
