/**
 * One installer at a time in a model's folder. Two pulls (or a pull and an add) into the same folder wrote the same
 * part file, each hashing the bytes it received rather than the bytes on disk: one could install a corrupt file under
 * a manifest naming the pinned hash, the other fail with a missing part. The lock is a file naming its holder's
 * process; one whose process has gone (killed mid-install), or that names this process without its holding it, is
 * taken over.
 */
import {open, readFile, rm} from 'node:fs/promises'
import {resolve} from 'node:path'

import {ModError} from '../errors.js'

const LOCK_FILE = '.install.lock'

/** The locks this process holds: a lock naming this process and not among them was left by another with its pid. */
const held = new Set<string>()

/** Whether process `pid` is running on this machine (EPERM: it is, as another user's). */
function running(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/** Creates the lock file; its holder's pid when another live process holds it. */
async function take(path: string): Promise<number | undefined> {
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const handle = await open(path, 'wx')
      await handle.writeFile(`${process.pid}\n`)
      await handle.close()
      return undefined
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e
    }
    const holder = Number.parseInt(await readFile(path, 'utf8').catch(() => ''), 10)
    // A container's processes get the same pids at each start (node as 1, or under tini as 7): a lock left by a pull
    // that was killed names this very process in the next container on the same cache.
    const live = holder === process.pid ? held.has(path) : running(holder)
    if (Number.isInteger(holder) && holder > 0 && live) return holder
    await rm(path, {force: true})
  }
  throw new ModError('download_failed', `cannot take the install lock ${path}: another installer keeps creating it`, {local: true})
}

/**
 * Runs `work` holding the install lock of `destDir` (which must exist); `what` names the installation in the
 * message when another process holds it: `download_failed` naming its pid.
 */
export async function withInstallLock<T>(destDir: string, what: string, work: () => Promise<T>): Promise<T> {
  const path = resolve(destDir, LOCK_FILE)
  const holder = await take(path)
  if (holder !== undefined) {
    // A pid the system gave again to another program (after a reboot) counts as alive: the user can tell.
    throw new ModError(
      'download_failed',
      `cannot install ${what} into ${destDir}: another mod (process ${holder}) is installing there; wait for it to finish, or stop it and run this again (if process ${holder} is no mod, delete ${path})`,
      {local: true},
    )
  }
  held.add(path)
  try {
    return await work()
  } finally {
    held.delete(path)
    await rm(path, {force: true})
  }
}
