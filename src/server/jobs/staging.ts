import {randomBytes} from 'node:crypto'
import {rename, rm} from 'node:fs/promises'
import {hostname} from 'node:os'
import {basename, join} from 'node:path'

import {makeDir} from '../../lib/make-dir.js'
import {defaultJobStorage} from '../../lib/config/jobs.js'
import {makeUploadDir} from '../upload-dirs.js'
import {jobPaths} from './storage.js'

/**
 * A job's upload is written apart while it arrives, in `MOD_JOB_STORAGE/.upload.<pid>@<host>.<run>.<id>`, and that folder
 * becomes the job's folder (storage.ts) by a rename once the upload is whole. A process killed mid-upload leaves its
 * half-written files under a name that says which process wrote them: the next process to start on this host
 * removes them, and the cluster primary as soon as it sees the worker die (lifecycle.ts, upload-dirs.ts
 * `sweepUploads`). The job folder sweep (sweep.ts) looks only at folders named by a job id, so it never touches an
 * upload still arriving.
 */

/** The name of an upload still arriving: the process (`pid@host`, and its run) that writes it, and the job's id. */
export const STAGING_NAME = /^\.upload\.(\d+)@(.+)\.([0-9a-f]{8})\.([0-9a-f-]{36})$/

/**
 * Tells this process's uploads from those of an earlier process with the same id on the same host: a restarted
 * container often gets the process id its previous run had.
 */
const RUN = randomBytes(4).toString('hex')

/** Whether a name of STAGING_NAME is of an upload this very process writes. */
export const ownStaging = (name: string, pid: number): boolean => pid === process.pid && STAGING_NAME.exec(name)?.[3] === RUN

/** Where job `id`'s upload is written by this process while it arrives. */
export const stagingDir = (storage: string, id: string): string =>
  join(storage, `.upload.${process.pid}@${hostname()}.${RUN}.${basename(jobPaths(storage, id).dir)}`)

/**
 * Makes the folder the upload of job `id` is written to, and answers it. Folders made here are this user's only
 * (0700). The default storage has a predictable name in the shared temp folder: as for the upload folders, one that
 * another user made first (or a link they put there) is refused, never written to.
 */
export async function startStaging(storage: string, id: string): Promise<string> {
  if (storage === defaultJobStorage()) await makeUploadDir(storage)
  const dir = stagingDir(storage, id)
  await makeDir(dir, 0o700)
  return dir
}

/** Makes the whole upload of job `id` the job's folder: from now on it is the job's (or its queue's) to remove. */
export async function moveIntoPlace(storage: string, id: string): Promise<void> {
  await rename(stagingDir(storage, id), jobPaths(storage, id).dir)
}

/** Removes what there is of the upload of job `id`, wherever it got to. */
export async function dropUpload(storage: string, id: string): Promise<void> {
  await Promise.all([rm(stagingDir(storage, id), {recursive: true, force: true}), rm(jobPaths(storage, id).dir, {recursive: true, force: true})])
}
