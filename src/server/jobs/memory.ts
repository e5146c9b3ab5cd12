import {rm} from 'node:fs/promises'

import {queueFull} from './admission.js'
import {memoryBackend, type MemoryBackend} from './memory-backend.js'
import {closedSegment, openSegments, type JobBody} from './schema.js'
import {attempt, inProcessStop, jobSkeleton} from './skeleton.js'
import {newJob, type JobQueue, type JobRunner, type JobSpec, type QueueHooks} from './types.js'

export interface MemoryQueueOptions extends QueueHooks {
  /** Jobs waiting (not running) before submit refuses with `overloaded`. */
  limit: number
  /** Seconds a finished job stays readable. */
  ttlSeconds: number
}

interface Entry {
  body: JobBody
  spec: JobSpec
}

/** The in-process video jobs; a unit of work is a whole job, named by its id. */
type Jobs = MemoryBackend<Entry, string>

function touch(entry: Entry, change: Partial<JobBody>): void {
  entry.body = {...entry.body, ...change, updated_at: new Date().toISOString()}
}

async function end(jobs: Jobs, o: MemoryQueueOptions, entry: Entry, change: Partial<JobBody>): Promise<void> {
  // The files go first, so a client that sees the job ended never finds its upload.
  await rm(entry.spec.dir, {recursive: true, force: true})
  touch(entry, {...change, open_segments: []})
  jobs.expire(entry.body.id, o.ttlSeconds)
  o.onEnd?.(entry.body, entry.spec)
}

async function run(jobs: Jobs, o: MemoryQueueOptions, id: string, work: JobRunner, controller: AbortController): Promise<void> {
  const entry = jobs.entry(id)
  if (!entry) return
  touch(entry, {status: 'running'})
  const {signal} = controller
  const ran = await attempt(signal, () =>
    work(entry.spec, {
      signal,
      onProgress: (frames, seconds, open) =>
        touch(entry, {progress: {frames_analyzed: frames, seconds}, open_segments: openSegments(open)}),
      onSegment: (label, segment) => touch(entry, closedSegment(entry.body, label, segment)),
    }),
  )
  // A run stopped by DELETE ends as cancelled, whatever its runner returned.
  if (ran.status === 'cancelled' || signal.aborted) await end(jobs, o, entry, {status: 'cancelled'})
  else if (ran.status === 'done') await end(jobs, o, entry, {status: 'done', result: ran.value})
  else await end(jobs, o, entry, {status: 'failed', error: o.describeError(ran.error)})
}

/**
 * The embedded queue: jobs live in this process and run one at a time, in order of arrival (memory-backend.ts), each
 * through the job skeleton (skeleton.ts).
 */
export function createMemoryQueue(o: MemoryQueueOptions): JobQueue {
  const jobs: Jobs = memoryBackend<Entry, string>((id) => id)
  /** Jobs left waiting when the queue closed. */
  const dropped: string[] = []
  const skeleton = jobSkeleton<string, JobRunner, void>(jobs.source, {
    jobOf: (id) => id,
    process: (id, work, controller) => run(jobs, o, id, work, controller),
    async discard(id) {
      const entry = jobs.entry(id)
      if (!entry) return
      // Its client learns it will not run (callback), rather than waiting for a job gone with the process.
      await end(jobs, o, entry, {status: 'cancelled'})
      dropped.push(id)
    },
  })
  const stop = inProcessStop(() => jobs.refuse(), skeleton, dropped, o.onDropped)

  return {
    async checkRoom() {
      jobs.admit()
      if (jobs.waiting() >= o.limit) throw queueFull(o.limit)
    },
    async submit(spec) {
      jobs.admit()
      await this.checkRoom()
      const entry: Entry = {body: newJob(spec), spec}
      const accepted = entry.body
      jobs.add(spec.id, entry, [spec.id])
      return accepted
    },
    async get(id, owner) {
      return jobs.find(id, owner)?.body
    },
    async remove(id, owner) {
      const entry = jobs.find(id, owner)
      if (!entry) return undefined
      // Unknown from now on, also to a second DELETE that comes while this one waits for the run to stop.
      jobs.forget(id)
      if (entry.body.status === 'queued') {
        await end(jobs, o, entry, {status: 'cancelled'})
      } else if (entry.body.status === 'running') {
        await skeleton.cancel(id)
        await skeleton.runningHere(id)
      }
      return entry.body
    },
    work: (runner) => skeleton.work(runner),
    stopping: stop.stopping,
    reachable: () => true,
    close: stop.close,
  }
}
