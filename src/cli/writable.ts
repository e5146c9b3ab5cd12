import {randomBytes} from 'node:crypto'
import {constants, fstatSync} from 'node:fs'
import {access, open, readFile, readdir, realpath, rename, rm, stat, writeFile} from 'node:fs/promises'
import {basename, dirname, join, resolve} from 'node:path'

import {isMap, isScalar, parseDocument} from 'yaml'

import {whyUnreadable} from '../lib/errno.js'
import {ModError} from '../lib/errors.js'
import {readHead} from '../lib/input/sniff.js'
import {MAX_POLICY_BYTES} from '../lib/policy/load.js'
import {isRunning} from '../lib/processes.js'

/** Why `file`, given with `flag`, cannot be written: the system's code (ENOENT, EACCES). */
export function cannotWrite(flag: string, file: string, e: unknown): ModError {
  return new ModError('bad_request', `${flag} ${file}: cannot write there (${(e as NodeJS.ErrnoException).code ?? 'error'})`)
}

/** Refuses a folder given as the file to write: the rename that ends an atomic write would fail on it at the end. */
export async function refuseFolder(flag: string, file: string): Promise<void> {
  const info = await stat(file).catch(() => undefined)
  if (info?.isDirectory()) throw new ModError('bad_request', `${flag} ${file}: is a folder; give a file name`)
}

/**
 * What a command writes and replaces only where it finds one of its kind, as its refusal names them: a report, a
 * baseline, a tuned policy or a head replaces an earlier one, while anything else there is most likely an input put
 * after the flag by the shell (`--report *.jpg` names the first image), which the write would destroy. An empty
 * file, a device or a pipe is written as before.
 */
interface OwnKind {
  /** What a file of the kind is: `an HTML page`, `a baseline (a JSON object)`. */
  is: string
  /** What the command writes, and what of it it replaces: `a report`, `a page`. */
  writes: string
  replaces: string
}

function otherFile(flag: string, file: string, kind: OwnKind): ModError {
  return new ModError(
    'bad_request',
    `${flag} ${file}: the file there is not ${kind.is}, and ${kind.writes} replaces only ${kind.replaces} (a shell pattern after ${flag} names its first match): give a new file name`,
  )
}

/** Refuses a file there whose text does not start as the kind's does (`first`). */
async function refuseByStart(flag: string, file: string, first: string, kind: OwnKind): Promise<void> {
  const head = await textHead(file)
  if (head === undefined || head === '' || head.startsWith(first)) return
  throw otherFile(flag, file, kind)
}

/** `--report`: an HTML page. */
export const refuseNonHtml = (flag: string, file: string): Promise<void> => refuseByStart(flag, file, '<', {is: 'an HTML page', writes: 'a report', replaces: 'a page'})

/** `--write-baseline`: a JSON object. */
export const refuseNonBaseline = (flag: string, file: string): Promise<void> =>
  refuseByStart(flag, file, '{', {is: 'a baseline (a JSON object)', writes: 'a baseline', replaces: 'a baseline'})

/** `mod head train --out`: a JSON object. */
export const refuseNonHead = (flag: string, file: string): Promise<void> => refuseByStart(flag, file, '{', {is: 'a head (a JSON object)', writes: 'a head', replaces: 'a head'})

/**
 * `mod calibrate --out`: a policy, a YAML or JSON mapping (the --config file itself among them), or no content at
 * all (comments alone, after a `---` or not).
 */
export async function refuseNonPolicy(flag: string, file: string): Promise<void> {
  const info = await stat(file).catch(() => undefined)
  if (!info?.isFile() || info.size === 0) return
  const head = await readHead(file).catch(() => undefined)
  if (head === undefined) return
  // A NUL byte is in every image header and never in a policy; a file larger than a policy may be is not one either.
  if (!head.includes(0) && info.size <= MAX_POLICY_BYTES) {
    const contents = parseDocument(await readFile(file, 'utf8')).contents
    if (contents === null || isMap(contents) || (isScalar(contents) && contents.value === null)) return
  }
  throw otherFile(flag, file, {is: 'a policy (a YAML mapping)', writes: 'a policy', replaces: 'a policy'})
}

/** The start of a regular file as text (a byte order mark and leading white space dropped); undefined for none. */
async function textHead(file: string): Promise<string | undefined> {
  if (!(await stat(file).catch(() => undefined))?.isFile()) return undefined
  const bytes = await readHead(file).catch(() => undefined)
  return bytes?.subarray(0, 256).toString('utf8').replace(/^\uFEFF/, '').trimStart()
}

/**
 * Whether `file` is where this process's stdout goes (`--out /dev/stdout`, or the pipe or file stdout is): what the
 * command would print there then lands inside the file it writes.
 */
export async function isStdout(file: string): Promise<boolean> {
  const target = await stat(file).catch(() => undefined)
  if (target === undefined) return false
  try {
    const out = fstatSync(1)
    return out.dev === target.dev && out.ino === target.ino
  } catch {
    return false
  }
}

/** Why `file`, given with `flag`, could not be written once writing began: the reason in words (the disk is full). */
export function writeFailed(flag: string, file: string, e: unknown, kept = false): ModError {
  return new ModError('bad_request', `${flag} ${file}: cannot write it: ${whyUnreadable(e)}${kept ? '; the file there was left as it was' : ''}`)
}

/** A temporary file beside `file`, in the same folder, so that renaming it onto `file` is atomic. */
export function besideTemp(file: string): string {
  return `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`
}

/**
 * Removes the temporary files beside `file` (besideTemp) left by runs that are gone: one killed (SIGKILL, out of
 * memory) before its last rename cannot remove its own, and its name says which process it was.
 */
export async function removeAbandonedTemps(file: string): Promise<void> {
  const folder = dirname(resolve(file))
  const prefix = `${basename(file)}.`
  for (const name of await readdir(folder).catch(() => [])) {
    const pid = name.startsWith(prefix) ? /^(\d+)\.[0-9a-f]{8}\.tmp$/.exec(name.slice(prefix.length))?.[1] : undefined
    if (pid !== undefined && !isRunning(Number(pid))) await rm(join(folder, name), {force: true})
  }
}

/**
 * Refuses, before any work, a file the command would write only at its end (`--out`, `--report`,
 * `--write-baseline`): a missing or read-only folder, or a path that is a folder, would otherwise fail once the
 * scoring or training is done, its result lost. Creates and removes a file beside it; the file itself is left as
 * it is.
 */
export async function checkWritable(flag: string, file: string): Promise<void> {
  await refuseFolder(flag, file)
  const info = await stat(file).catch(() => undefined)
  if (info !== undefined && !info.isFile()) {
    // A device or a pipe (/dev/stdout) is written in place, so its own permission is what counts.
    await access(file, constants.W_OK).catch((e: unknown) => {
      throw cannotWrite(flag, file, e)
    })
    return
  }
  // Beside the file a link names, where writeWhole writes: `--out /dev/stdout` with stdout a file (`> head.json`)
  // probed /dev, where a user may not create files.
  const probe = besideTemp(info === undefined ? file : await realpath(file).catch(() => file))
  try {
    await (await open(probe, 'wx')).close()
  } catch (e) {
    throw cannotWrite(flag, file, e)
  }
  await rm(probe, {force: true})
}

/**
 * Writes `text` to `file` (given with `flag`) whole or not at all: into a temporary file beside it, synced, then
 * renamed over it, so that a full disk or a crash leaves the previous file as it was. A link is followed (the file
 * it names is replaced, the link kept), and the previous file's permissions are kept. A device or a pipe
 * (/dev/stdout) is written in place: renaming over it would replace the device. A failure is `bad_request`, in
 * words (`the disk is full (ENOSPC)`).
 */
export async function writeWhole(flag: string, file: string, text: string): Promise<void> {
  const info = await stat(file).catch(() => undefined)
  if (info !== undefined && !info.isFile()) {
    await writeFile(file, text).catch((e: unknown) => {
      throw writeFailed(flag, file, e)
    })
    return
  }
  const target = info === undefined ? file : await realpath(file)
  const temp = besideTemp(target)
  try {
    const handle = await open(temp, 'wx')
    try {
      await handle.writeFile(text)
      if (info !== undefined) await handle.chmod(info.mode & 0o7777)
      await handle.sync()
    } finally {
      await handle.close()
    }
    await rename(temp, target)
  } catch (e) {
    await rm(temp, {force: true})
    throw writeFailed(flag, file, e, info !== undefined)
  }
  await removeAbandonedTemps(target)
}
