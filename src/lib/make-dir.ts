/**
 * A folder and its missing parents, made one at a time from the nearest one that exists. Node's own
 * `mkdir(path, {recursive: true})` never returns for a path on a file system that refuses a new entry with
 * ENOENT (procfs: `MOD_CACHE_DIR=/proc/mod-cache` spun at full CPU forever, retrying the parent): here the first
 * refusal is thrown as it is, with the path it is about.
 */
import {mkdir, stat} from 'node:fs/promises'
import {dirname, resolve} from 'node:path'

async function kindOf(path: string): Promise<'folder' | 'other' | undefined> {
  try {
    return (await stat(path)).isDirectory() ? 'folder' : 'other'
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw e
  }
}

/** Makes `path` and its missing parents (with `mode`, as `mkdir` applies it); a folder already there is fine. */
export async function makeDir(path: string, mode?: number): Promise<void> {
  const missing: string[] = []
  let at = resolve(path)
  for (;;) {
    const kind = await kindOf(at)
    if (kind === 'folder') break
    if (kind === 'other') throw Object.assign(new Error(`ENOTDIR: not a directory, mkdir '${path}'`), {code: 'ENOTDIR', path: at, syscall: 'mkdir'})
    missing.push(at)
    const parent = dirname(at)
    if (parent === at) break
    at = parent
  }
  for (const dir of missing.reverse()) {
    try {
      await mkdir(dir, mode === undefined ? undefined : {mode})
    } catch (e) {
      // Made meanwhile by another process (or a link to a folder): the next step says if it is no folder.
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e
    }
  }
}
