import {lstat} from 'node:fs/promises'
import {dirname, join, resolve} from 'node:path'

/**
 * The top folder of the git repository `dir` is in (the nearest folder upwards holding `.git`: a folder, or in a
 * worktree or submodule a file), or undefined outside git. Read from the file system, so it needs no git.
 */
export async function repositoryRoot(dir: string): Promise<string | undefined> {
  for (let d = resolve(dir); ; d = dirname(d)) {
    if (await lstat(join(d, '.git')).then(() => true, () => false)) return d
    if (dirname(d) === d) return undefined
  }
}
