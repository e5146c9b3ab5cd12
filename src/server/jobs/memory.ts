import {rm} from 'node:fs/promises'

import {ModError} from '../../lib/errors.js'
import {visibleTo} from './owner.js'
import {jobSegment, type JobBody} from './schema.js'
import {newJob, type JobQueue, type JobRunner, type JobSpec, type QueueHooks} from './types.js'
import {plural} from '../../lib/plural.js'

export interface MemoryQueueOptions extends QueueHooks {
  /** Jobs waiting (not running) before submit refuses with `overloaded`. */
  limit: number
  /** Seconds a finished job stays readable. */
  ttlSeconds: number
}

interface Entry {
  body: JobBody
  spec: JobSpec
  controller: AbortController
  /** Forgets the job MOD_JOB_TTL after it ended. */
  expiry?: NodeJS.Timeout
}

export const queueFull = (limit: number): ModError =>
  new ModError('overloaded', `the job queue is full (${plural(limit, 'job')} waiting); retry later`)

/**
 * The embedded queue: jobs live in this process and run one at a time, in order of arrival. Nothing
 * survives a restart; a deployment that needs that, or more than one process, sets MOD_REDIS_URL.
 */
export function createMemoryQueue(o: MemoryQueueOptions): JobQueue {
  const jobs = new Map<string, Entry>()
  const waiting: string[] = []
  let runner: JobRunner | undefined
  let running: Promise<void> | undefined
  let closed = false

  const touch = (entry: Entry, change: Partial<JobBody>) => {
    entry.body = {...entry.body, ...change, updated_at: new Date().toISOString()}
  }

  async function end(entry: Entry, change: Partial<JobBody>): Promise<void> {
    // The files go first, so a client that sees the job ended never finds its upload.
    await rm(entry.spec.dir, {recursive: true, force: true})
    touch(entry, change)
    entry.expiry = setTimeout(() => jobs.delete(entry.body.id), o.ttlSeconds * 1000)
    entry.expiry.unref()
    o.onEnd?.(entry.body, entry.spec)
  }

  async function run(entry: Entry, work: JobRunner): Promise<void> {
    touch(entry, {status: 'running'})
    try {
      const result = await work(entry.spec, {
        signal: entry.controller.signal,
        onProgress: (frames, seconds) => touch(entry, {progress: {frames_analyzed: frames, seconds}}),
        onSegment: (label, segment) => touch(entry, {segments: [...entry.body.segments, jobSegment(label, segment)]}),
      })
      await end(entry, entry.controller.signal.aborted ? {status: 'cancelled'} : {status: 'done', result})
    } catch (e) {
      await end(entry, entry.controller.signal.aborted ? {status: 'cancelled'} : {status: 'failed', error: o.describeError(e)})
    }
  }

  function next(): void {
    if (running || closed || !runner) return
    const id = waiting.shift()
    const entry = id === undefined ? undefined : jobs.get(id)
    if (!entry) return
    const work = runner
    running = run(entry, work).finally(() => {
      running = undefined
      next()
    })
  }

  return {
    async checkRoom() {
      if (waiting.length >= o.limit) throw queueFull(o.limit)
    },
    async submit(spec) {
      if (closed) throw new ModError('overloaded', 'the server is stopping; retry on another one')
      await this.checkRoom()
      const entry: Entry = {body: newJob(spec), spec, controller: new AbortController()}
      jobs.set(spec.id, entry)
      waiting.push(spec.id)
      const accepted = entry.body
      next()
      return accepted
    },
    async get(id, owner) {
      const entry = jobs.get(id)
      return entry && visibleTo(entry.spec.owner, owner) ? entry.body : undefined
    },
    async remove(id, owner) {
      const entry = jobs.get(id)
      if (!entry || !visibleTo(entry.spec.owner, owner)) return undefined
      // Unknown from now on, also to a second DELETE that comes while this one waits for the run to stop.
      jobs.delete(id)
      if (entry.body.status === 'queued') {
        waiting.splice(waiting.indexOf(id), 1)
        await end(entry, {status: 'cancelled'})
      } else if (entry.body.status === 'running') {
        // The run ends as cancelled, whatever its runner returns now.
        entry.controller.abort()
        await running
      }
      clearTimeout(entry.expiry)
      return entry.body
    },
    work(r) {
      runner = r
      next()
    },
    async close() {
      closed = true
      await running
      for (const entry of jobs.values()) clearTimeout(entry.expiry)
      for (const id of waiting.splice(0)) {
        const entry = jobs.get(id)
        if (entry) await rm(entry.spec.dir, {recursive: true, force: true})
      }
    },
  }
}
