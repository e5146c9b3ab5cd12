import {lstat, readdir, rm} from 'node:fs/promises'
import {hostname, tmpdir} from 'node:os'
import {dirname, join} from 'node:path'

import {ModError} from '../lib/errors.js'
import {isRunning} from '../lib/processes.js'
import {makeDir} from '../lib/make-dir.js'

/**
 * Where video uploads stream to: a folder of this user under the OS temp folder (`mod-uploads-<uid>`), holding one
 * folder per serving process named `<pid>@<host>`. A process killed mid-upload cannot remove its files; whoever
 * serves next removes the folders of processes of this host that no longer run (sweepUploads).
 */
export function uploadsRoot(base = tmpdir()): string {
  return join(base, `mod-uploads-${process.getuid?.() ?? 'user'}`)
}

/** This process's folder under `root`: its request folders go inside. */
export function processUploadDir(root: string, pid = process.pid, host = hostname()): string {
  return join(root, `${pid}@${host}`)
}

const PROCESS_DIR = /^(\d+)@(.+)$/

/**
 * Makes `dir`, a process's upload folder, if needed, and checks it can be trusted with uploads: a folder (not a
 * link) of user `uid` that only it can write, in a folder of the same user that not everyone can write (they
 * could swap the folder for their own; a group-writable one of a user's private group is common) or in a sticky
 * folder of root's or of that user's, shared or not (/tmp; a TMPDIR the user made 1777): there, no one else can
 * rename or remove what the user made. The uploads root has a predictable name, so in a temp folder shared with
 * other users someone else could have made it first to read what is written there.
 */
export async function makeUploadDir(dir: string, uid = process.getuid?.()): Promise<void> {
  await makeDir(dir, 0o700)
  if (uid === undefined) return
  const [own, parent] = await Promise.all([lstat(dir), lstat(dirname(dir))])
  const mine = own.isDirectory() && own.uid === uid && (own.mode & 0o022) === 0
  const sticky = (parent.uid === 0 || parent.uid === uid) && (parent.mode & 0o1000) !== 0
  const parentMine = parent.uid === uid && (parent.mode & 0o002) === 0
  if (!mine || !parent.isDirectory() || (!parentMine && !sticky)) {
    throw new ModError('internal', `the upload folder ${dir} or its parent belongs to another user or can be written by others: uploads are not written there`)
  }
}

export interface SweepOptions {
  host?: string
  running?: (pid: number) => boolean
  /** The names swept: the process id is the first group, its host the second. Default: `<pid>@<host>`. */
  names?: RegExp
  /**
   * Whether a name is this process's own, and kept. Default: it carries this process's id. A name with this
   * process's id that is not its own was left by an earlier process that had the same id (a restarted container).
   */
  mine?: (name: string, pid: number) => boolean
}

/**
 * Removes the folders under `root` of processes of this host that no longer run, and returns their names. Only
 * folders named `<pid>@<host>` (or as `names` says) and owned by this user are touched: those of running processes (this one included)
 * and of other hosts sharing the folder are kept, and so is anything else found there. A process id reused by
 * an unrelated process keeps its folder until that one ends too.
 */
export async function sweepUploads(root: string, options: SweepOptions = {}): Promise<string[]> {
  const {host = hostname(), running = isRunning, names: pattern = PROCESS_DIR, mine = (_name, pid) => pid === process.pid} = options
  let names: string[]
  try {
    names = await readdir(root)
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return []
    throw e
  }
  const uid = process.getuid?.()
  const removed: string[] = []
  for (const name of names) {
    const m = pattern.exec(name)
    if (!m || m[2] !== host) continue
    const pid = Number(m[1])
    if (mine(name, pid) || (pid !== process.pid && running(pid))) continue
    const path = join(root, name)
    const stat = await lstat(path).catch(() => undefined)
    if (!stat?.isDirectory() || (uid !== undefined && stat.uid !== uid)) continue
    await rm(path, {recursive: true, force: true})
    removed.push(name)
  }
  return removed
}
