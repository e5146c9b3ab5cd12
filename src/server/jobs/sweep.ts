import {lstat, readdir} from 'node:fs/promises'
import {join} from 'node:path'

import {isJobId, removeJobFolder} from './storage.js'

/** An orphan folder is left this long after its last change: an upload still arriving or just queued is not one. */
export const SWEEP_GRACE_MS = 60 * 60 * 1000

/** How often a job-running process looks for orphan folders (besides once at start). */
export const SWEEP_INTERVAL_MS = 10 * 60 * 1000

export interface SweepOptions {
  /** MOD_JOB_STORAGE. */
  storage: string
  graceMs: number
  /** Whether the queue still has a job with this id (in any state); an error stops the sweep. */
  isKnown(id: string): Promise<boolean>
  now?: number
}

/** The newest change in a job folder: its own, or of what is in it (an upload being written). */
async function lastChange(dir: string): Promise<number> {
  const names = await readdir(dir).catch(() => [])
  const stats = await Promise.all([dir, ...names.map((name) => join(dir, name))].map((path) => lstat(path).catch(() => undefined)))
  return Math.max(0, ...stats.map((s) => s?.mtimeMs ?? 0))
}

/**
 * Removes the job folders whose job the queue no longer has (lost with a Redis that kept nothing, or left by a
 * removal that failed), once unchanged for `graceMs`. Only folders named by a job id are looked at: other
 * files, other folders and links in the storage are never touched. Returns the ids removed.
 */
export async function sweepJobFolders(o: SweepOptions): Promise<string[]> {
  const entries = await readdir(o.storage, {withFileTypes: true}).catch(() => [])
  const removed: string[] = []
  for (const entry of entries) {
    if (!entry.isDirectory() || !isJobId(entry.name)) continue
    const age = (o.now ?? Date.now()) - (await lastChange(join(o.storage, entry.name)))
    if (age < o.graceMs || (await o.isKnown(entry.name))) continue
    await removeJobFolder(o.storage, entry.name)
    removed.push(entry.name)
  }
  return removed
}

/**
 * Runs `sweep` now and every `intervalMs` until the answered timer is cleared. One sweep at a time: on a slow disk or
 * a busy machine a sweep can outlast the interval, and two sweeps of the same folders would both count (and try to
 * remove) the same orphans.
 */
export function sweepEvery(sweep: () => Promise<void>, intervalMs: number, onError: (e: Error) => void): NodeJS.Timeout {
  let sweepRunning = false
  const sweeping = (): void => {
    if (sweepRunning) return
    sweepRunning = true
    void sweep()
      .catch(onError)
      .finally(() => (sweepRunning = false))
  }
  sweeping()
  const timer = setInterval(sweeping, intervalMs)
  timer.unref()
  return timer
}
