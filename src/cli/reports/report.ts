import {realpathSync} from 'node:fs'
import {basename, dirname, isAbsolute, join, relative, resolve, sep} from 'node:path'

import type {ItemResult} from '../../lib/engine.js'
import type {ScanEntry} from '../inputs.js'

/** One scanned input as the CI reports see it: the engine's answer, whether a baseline accepts it, its bytes' sha256. */
export interface ReportItem {
  item: ItemResult | ScanEntry
  accepted: boolean
  sha256?: string
}

/** What a report needs to know about the run besides its items. */
export interface RunInfo {
  /** The policy's categories, each a rule of the report. */
  categories: readonly {name: string; threshold: number; parent: string | null}[]
  version: string
  cwd: string
  /** The folder report paths are relative to where the format wants a repository's paths (SARIF). */
  root: string
}

/** Whether a relative path (of path.relative) leads out of its folder. */
const leadsOut = (rel: string): boolean => rel === '..' || rel.startsWith(`..${sep}`) || isAbsolute(rel)

/**
 * A source as a path relative to the working folder with `/` separators (how CI systems name a repository's
 * files), or undefined for stdin. The working folder is its real path (the system's), so an absolute path given
 * through a link to it (`$PWD/a.png` or `$GITHUB_WORKSPACE/a.png` where a link leads to the folder) leads out of
 * it as written: then the real path of the file's folder says where it is.
 */
export function relativePath(source: string, cwd: string): string | undefined {
  if (source === '-') return undefined
  const file = resolve(cwd, source)
  let rel = relative(cwd, file)
  if (leadsOut(rel)) {
    const real = realFolderPath(file)
    if (real !== undefined && !leadsOut(relative(cwd, real))) rel = relative(cwd, real)
  }
  return isAbsolute(rel) ? rel : rel.split(sep).join('/')
}

/** A file's path through the real path of its folder (the file itself, a link, not followed); undefined when unknown. */
function realFolderPath(file: string): string | undefined {
  try {
    return join(realpathSync(dirname(file)), basename(file))
  } catch {
    return undefined
  }
}

/**
 * A source's path relative to the repository root ("/"-separated), or undefined when it lies outside the root: the
 * path code scanning and the runner's annotations read a file by.
 */
export function repositoryPath(source: string, run: RunInfo): string | undefined {
  const path = relativePath(resolve(run.cwd, source), run.root) as string
  return path.startsWith('../') || path === '..' || isAbsolute(path) ? undefined : path
}

/** Whether an item is an animation whose pictures were not all scored (`animation_truncated`). */
export function animationTruncated(item: ItemResult | ScanEntry): boolean {
  return !('error' in item) && item.animation_truncated === true
}

/** "redness 0.93 >= 0.5, weapons 0.71 >= 0.6": what an item violates. */
export function violationText(item: ItemResult | ScanEntry): string {
  if ('error' in item) return `${item.error.code}: ${item.error.message}`
  return item.violations.map((v) => `${v.name} ${v.confidence.toFixed(2)} >= ${v.threshold}`).join(', ')
}
