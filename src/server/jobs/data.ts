import {isKeyName} from '../../lib/config/api-keys.js'
import {ModError} from '../../lib/errors.js'
import {MAX_FPS, MAX_MIN_FRAMES, MIN_FPS} from '../../lib/video/options.js'
import {isJobId, jobPaths} from './storage.js'
import type {JobSpec} from './types.js'

/**
 * A job as it waits in Redis: what the worker needs besides its files, which are found from the id. Anyone who
 * can write to that Redis can write a job, so what is read back is checked field by field before it is used.
 */
export type JobData = Omit<JobSpec, 'dir' | 'file'> & {
  created_at: string
  /** Set by DELETE on a job Redis cannot drop yet (a worker holds it): the job is unknown from then on. */
  deleted?: true
}

/** Longest callback URL or file name a job carries (the server's own limits on fields are far below this). */
const MAX_TEXT = 8192

/** What is stored of a job: no paths. */
export function jobData(spec: JobSpec, createdAt: Date): JobData {
  return {
    id: spec.id,
    source: spec.source,
    fps: spec.fps,
    minFrames: spec.minFrames,
    stopOnViolation: spec.stopOnViolation,
    ...(spec.callbackUrl === undefined ? {} : {callbackUrl: spec.callbackUrl}),
    ...(spec.owner === undefined ? {} : {owner: spec.owner}),
    created_at: createdAt.toISOString(),
  }
}

const KEYS = new Set(['id', 'source', 'fps', 'minFrames', 'stopOnViolation', 'callbackUrl', 'owner', 'created_at', 'deleted', 'dir', 'file'])

function problem(raw: Record<string, unknown>, id: string, storage: string): string | undefined {
  const extra = Object.keys(raw).find((key) => !KEYS.has(key))
  if (extra !== undefined) return `it has an unknown field ${JSON.stringify(extra)}`
  if (!isJobId(raw.id) || raw.id !== id) return 'its id is not the id of a job of this server'
  // Jobs queued by earlier versions name their files; only the ones their id gives are accepted.
  const paths = jobPaths(storage, raw.id)
  if (raw.dir !== undefined && raw.dir !== paths.dir) return `its folder is not ${paths.dir}`
  if (raw.file !== undefined && raw.file !== paths.file) return `its upload is not ${paths.file}`
  if (typeof raw.source !== 'string' || raw.source.length > MAX_TEXT) return 'its file name is not valid'
  const {fps, minFrames} = raw
  if (typeof fps !== 'number' || !(fps >= MIN_FPS && fps <= MAX_FPS)) return `its fps is not from ${MIN_FPS} to ${MAX_FPS}`
  if (!Number.isInteger(minFrames) || (minFrames as number) < 1 || (minFrames as number) > MAX_MIN_FRAMES) {
    return `its min_frames is not a whole number from 1 to ${MAX_MIN_FRAMES}`
  }
  if (typeof raw.stopOnViolation !== 'boolean') return 'its stop_on_violation is not true or false'
  if (raw.callbackUrl !== undefined && !isHttpUrl(raw.callbackUrl)) return 'its callback URL is not an http(s) URL'
  if (raw.owner !== undefined && !isKeyName(raw.owner)) return 'its owner is not the name of an API key'
  if (typeof raw.created_at !== 'string' || Number.isNaN(Date.parse(raw.created_at))) return 'its creation time is not a date'
  if (raw.deleted !== undefined && raw.deleted !== true) return 'its deleted mark is not true'
  return undefined
}

function isHttpUrl(value: unknown): boolean {
  if (typeof value !== 'string' || value.length > MAX_TEXT) return false
  try {
    return ['http:', 'https:'].includes(new URL(value).protocol)
  } catch {
    return false
  }
}

/**
 * The spec of the job `id` (BullMQ's id of it) from its data, with its paths derived from the id under
 * `storage`; a job that is not one this server could have queued is refused (`internal`, saying why).
 */
export function readJobData(raw: unknown, id: string | undefined, storage: string): JobSpec & {created_at: string; deleted: boolean} {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw refused(id, 'its data is not an object')
  const record = raw as Record<string, unknown>
  const why = problem(record, String(id), storage)
  if (why !== undefined) throw refused(id, why)
  const data = record as unknown as JobData
  return {
    id: data.id,
    source: data.source,
    fps: data.fps,
    minFrames: data.minFrames,
    stopOnViolation: data.stopOnViolation,
    ...(data.callbackUrl === undefined ? {} : {callbackUrl: data.callbackUrl}),
    ...(data.owner === undefined ? {} : {owner: data.owner}),
    created_at: data.created_at,
    deleted: data.deleted === true,
    ...jobPaths(storage, data.id),
  }
}

const refused = (id: string | undefined, why: string): ModError =>
  new ModError('internal', `job ${JSON.stringify(id)} in the queue was refused: ${why}`)
