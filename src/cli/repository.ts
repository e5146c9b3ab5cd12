import {execFile} from 'node:child_process'
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

/** Whether git tracks a file, or a folder holding a tracked file, by its path. */
export type Tracked = (path: string, isDir: boolean) => boolean

/** What git tracks in a repository, or, where git cannot say, why not. */
export type TrackedFiles = {tracked: Tracked} | {unknown: string}

/**
 * What git tracks in the repository at `root` (`git ls-files`). Ignore files do not hide these: git applies its
 * ignore files to untracked files only, so an image committed with `git add -f` beside a .gitignore naming it is in
 * the repository, and a change under review must not hide it from a scan so. Where git cannot say (not installed,
 * or a repository it refuses: "dubious ownership" in a CI container), why not, from git's own first line.
 */
export function trackedFiles(root: string): Promise<TrackedFiles> {
  return new Promise((done) => {
    // A repository's own configuration may name a program for git to run (core.fsmonitor): a scanned download's must not.
    execFile('git', ['-c', 'core.fsmonitor=false', '-C', root, 'ls-files', '-z'], {encoding: 'buffer', maxBuffer: 1024 * 1024 * 1024}, (error, stdout, stderr) => {
      if (error) {
        const missing = (error as NodeJS.ErrnoException).code === 'ENOENT'
        const said = stderr.toString('utf8').split('\n').find((l) => l.trim() !== '')?.trim()
        return done({unknown: missing ? 'git is not on PATH' : (said ?? error.message)})
      }
      const files = new Set<string>()
      const folders = new Set<string>()
      for (const name of stdout.toString('utf8').split('\0')) {
        if (name === '') continue
        const path = join(root, name)
        files.add(path)
        for (let d = dirname(path); d.length > root.length && !folders.has(d); d = dirname(d)) folders.add(d)
      }
      done({tracked: (path, isDir) => (isDir ? folders : files).has(resolve(path))})
    })
  })
}
