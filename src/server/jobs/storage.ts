import {lstat, rm} from 'node:fs/promises'
import {join} from 'node:path'

import {ModError} from '../../lib/errors.js'

/**
 * A job's files in MOD_JOB_STORAGE: one folder named by the job id, holding the upload. Paths are always
 * derived from the id here, never read from where the job waits (Redis may be written by others), so a job
 * can only ever read or remove its own folder.
 */

/** The form of the ids the server gives jobs (crypto.randomUUID): nothing else names a job folder. */
const JOB_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

export const isJobId = (id: unknown): id is string => typeof id === 'string' && JOB_ID.test(id)

/** Name of the uploaded video inside its job's folder. */
const UPLOAD = 'upload'

export interface JobPaths {
  dir: string
  file: string
}

/** Where the job with this id keeps its upload; the id must have the form of a job id. */
export function jobPaths(storage: string, id: string): JobPaths {
  if (!isJobId(id)) throw new ModError('internal', `${JSON.stringify(id)} is not a job id`)
  const dir = join(storage, id)
  return {dir, file: join(dir, UPLOAD)}
}

/** Whether the job's folder is a real folder (not a link) and its upload a regular file. */
export async function jobFilesInPlace(paths: JobPaths): Promise<boolean> {
  const [dir, file] = await Promise.all([lstat(paths.dir).catch(() => undefined), lstat(paths.file).catch(() => undefined)])
  return dir !== undefined && dir.isDirectory() && file !== undefined && file.isFile()
}

/**
 * Removes the job's folder and what is in it. Anything else at that name (a link, a file) is left alone: only
 * a folder this server made is removed, and links inside it are removed, not followed.
 */
export async function removeJobFolder(storage: string, id: string): Promise<void> {
  const {dir} = jobPaths(storage, id)
  const found = await lstat(dir).catch(() => undefined)
  if (found?.isDirectory()) await rm(dir, {recursive: true, force: true})
}
