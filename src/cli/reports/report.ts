import {isAbsolute, relative, resolve, sep} from 'node:path'

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

/**
 * A source as a path relative to the working folder with `/` separators (how CI systems name a repository's
 * files), or undefined for stdin.
 */
export function relativePath(source: string, cwd: string): string | undefined {
  if (source === '-') return undefined
  const rel = relative(cwd, resolve(cwd, source))
  return isAbsolute(rel) ? rel : rel.split(sep).join('/')
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
