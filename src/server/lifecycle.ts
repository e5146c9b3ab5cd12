/**
 * What both the cluster primary and a serving process need to start and stop, kept apart from the server
 * (run.ts) so that the primary of `mod serve --workers N` loads neither the server nor the engine.
 */
import {endBySignal} from '../lib/processes.js'
import {describe, type Log} from './errors.js'
import {ownStaging, STAGING_NAME} from './jobs/staging.js'
import {sweepUploads, uploadsRoot} from './upload-dirs.js'

/** A folder where processes write uploads, each in folders named by the process (`names` and `mine`, see sweepUploads). */
export interface UploadRoot {
  root: string
  names?: RegExp
  mine?: (name: string, pid: number) => boolean
}

/**
 * Where processes write uploads: the OS temp folder's (moderation requests) and MOD_JOB_STORAGE (job uploads still
 * arriving, jobs/staging.ts).
 */
export const uploadRoots = (jobStorage: string): UploadRoot[] => [{root: uploadsRoot()}, jobUploadRoot(jobStorage)]

export const jobUploadRoot = (jobStorage: string): UploadRoot => ({root: jobStorage, names: STAGING_NAME, mine: ownStaging})

/** Removes the uploads of ended `mod serve` processes of this host under each of `roots` (upload-dirs.ts); never fails. */
export async function sweepLeftovers(log: Log, roots: UploadRoot[]): Promise<void> {
  for (const {root, names, mine} of roots) {
    try {
      const removed = await sweepUploads(root, {names, mine})
      if (removed.length > 0) log(`removed the uploads left by ended processes in ${root}: ${removed.join(', ')}`, 'info')
    } catch (e) {
      log(`the uploads left by ended processes could not be removed from ${root}: ${describe(e)}`, 'warn')
    }
  }
}

/** Exit codes of `mod serve`: 0 after a graceful stop, 2 when it could not start. */
export const EXIT_OK = 0
export const EXIT_START_FAILED = 2

/**
 * Settles on the first SIGTERM, SIGINT or SIGHUP (a closed terminal or ssh session: its default would end the
 * process at once, cutting the requests in flight); a second one ends the process at once of that signal (an
 * impatient Ctrl-C, or an orchestrator that gave up waiting; endBySignal: an exit aborted while a model ran), after
 * `beforeExit` (the primary kills its workers).
 */
export function stopSignals(log: Log, beforeExit: () => void = () => {}): Promise<string> {
  return new Promise((resolve) => {
    let received = false
    const onSignal = (signal: 'SIGINT' | 'SIGTERM' | 'SIGHUP') => {
      if (received) {
        log(`${signal} again: exiting without waiting`, 'warn')
        beforeExit()
        void endBySignal(signal)
        return
      }
      received = true
      resolve(signal)
    }
    process.on('SIGTERM', onSignal)
    process.on('SIGINT', onSignal)
    process.on('SIGHUP', onSignal)
  })
}
