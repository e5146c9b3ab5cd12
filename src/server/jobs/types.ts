import type {Segment, VideoResult} from '../../lib/types.js'
import type {FoundSegment} from '../../lib/video/segments.js'
import type {JobBody} from './schema.js'

/** What a worker needs to run one job; JSON, since with Redis it travels to another process. */
export interface JobSpec {
  id: string
  source: string
  /** The job's own folder under MOD_JOB_STORAGE, removed when the job ends. */
  dir: string
  /** The uploaded video inside `dir`. */
  file: string
  fps: number
  minFrames: number
  stopOnViolation: boolean
  callbackUrl?: string
  /** The name of the API key that made the job (owner.ts); absent when the server needs no key. */
  owner?: string
}

export interface RunHooks {
  /** Aborted by DELETE: the run stops and ffmpeg is killed. */
  signal: AbortSignal
  /** `open`: the runs of flagged frames still open, as segments so far (the job's `open_segments`). */
  onProgress(framesAnalyzed: number, seconds: number, open: FoundSegment[]): void
  onSegment(label: string, segment: Segment): void
}

/** Runs one job's video on the engine. */
export type JobRunner = (spec: JobSpec, hooks: RunHooks) => Promise<VideoResult>

/** An error as a job body carries it: what the client would have been answered. */
export type JobError = NonNullable<JobBody['error']>

export interface QueueHooks {
  /** The error a failed job reports (the server's mapping: internal details stay in the log). */
  describeError(e: unknown): JobError
  /** Called once per job when it reaches done, failed or cancelled, after its files are removed. */
  onEnd?(body: JobBody, spec: JobSpec): void
  /** The jobs an in-process queue stopped with, still waiting (lost with the process): each has ended cancelled. */
  onDropped?(ids: string[]): void
}

/**
 * Where jobs wait and run: one interface above two queues, the in-process one (memory.ts) and BullMQ on
 * Redis (bullmq.ts). The routes, the worker command and the callbacks only see this.
 */
export interface JobQueue {
  /** Refuses with `overloaded` when as many jobs as the limit are already waiting (checked before an upload is read). */
  checkRoom(): Promise<void>
  /** Queues the job; from now on the queue owns `spec.dir`. */
  submit(spec: JobSpec): Promise<JobBody>
  /** The job; undefined for an unknown one, and for one of another key than `owner` (owner.ts). */
  get(id: string, owner?: string): Promise<JobBody | undefined>
  /**
   * Deletes the job: a waiting one is dropped, a running one stopped (both end `cancelled`, their callback sent),
   * and whatever its state, its files and everything stored of it are removed, so that it is unknown from now
   * on. Answers the job as it was when deleted; undefined for an unknown job, and for one of another key than
   * `owner`, which is left as it is.
   */
  remove(id: string, owner?: string): Promise<JobBody | undefined>
  /** Starts running jobs with `runner` (`mod worker`, and `mod serve` unless MOD_SERVE_JOBS=false). */
  work(runner: JobRunner): void
  /**
   * The server is stopping: an in-process queue refuses new jobs from now on (`overloaded`), as they would be lost
   * with the process, starts none, and ends those waiting `cancelled` at once; a queue on Redis goes on taking them
   * (another process runs them).
   */
  stopping(): void
  /** Whether the queue reaches where its jobs wait, now: Redis is connected (an in-process queue always does). */
  reachable(): boolean
  /** Stops taking jobs; the job running here is finished first. */
  close(): Promise<void>
}

/** The body of a newly accepted job. */
export function newJob(spec: JobSpec, now = new Date()): JobBody {
  const at = now.toISOString()
  return {
    id: spec.id,
    status: 'queued',
    source: spec.source,
    created_at: at,
    updated_at: at,
    progress: {frames_analyzed: 0, seconds: 0},
    segments: [],
    open_segments: [],
  }
}
