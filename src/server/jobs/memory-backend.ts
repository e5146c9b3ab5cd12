import {serverStopping} from './admission.js'
import {visibleTo} from './owner.js'
import type {WorkSource} from './skeleton.js'

/**
 * The storage of an in-process job queue (either kind): its jobs in a map, each forgotten MOD_JOB_TTL after it ended,
 * and the units of work waiting in order of arrival, run one at a time. Nothing survives a restart; a deployment
 * that needs that, or more than one process, sets MOD_REDIS_URL.
 */
export interface MemoryBackend<Entry, Unit> {
  /** The job, if the asker (the name of its API key, owner.ts) may see it. */
  find(id: string, asker: string | undefined): Entry | undefined
  /** The job whatever its owner (a unit about to run, or a job the queue itself looks at). */
  entry(id: string): Entry | undefined
  /** Every job still known. */
  entries(): Iterable<Entry>
  /** Keeps the job and queues its units. */
  add(id: string, entry: Entry, units: Unit[]): void
  /** Makes the job unknown at once and stops its expiry; its waiting units are dropped. */
  forget(id: string): void
  /** Forgets the job `ttlSeconds` from now (it has ended); one already forgotten (deleted) stays so. */
  expire(id: string, ttlSeconds: number): void
  /** Units waiting to run. */
  waiting(): number
  /** Refuses a job (`overloaded`) once the queue is stopping or closing. */
  admit(): void
  /** The server is stopping: no job is admitted, and no unit started, from now on; answers the units that were waiting. */
  refuse(): Unit[]
  source: WorkSource<Unit, void>
}

export function memoryBackend<Entry extends {spec: {owner?: string}}, Unit>(jobOf: (unit: Unit) => string): MemoryBackend<Entry, Unit> {
  const jobs = new Map<string, Entry>()
  const expiries = new Map<string, NodeJS.Timeout>()
  const waiting: Unit[] = []
  let process: ((unit: Unit) => Promise<void>) | undefined
  let running: Promise<void> | undefined
  let closed = false
  let refusing = false

  function next(): void {
    if (running || closed || refusing || !process) return
    const unit = waiting.shift()
    if (unit === undefined) return
    running = process(unit).finally(() => {
      running = undefined
      next()
    })
  }

  return {
    find(id, asker) {
      const entry = jobs.get(id)
      return entry && visibleTo(entry.spec.owner, asker) ? entry : undefined
    },
    entry: (id) => jobs.get(id),
    entries: () => jobs.values(),
    add(id, entry, units) {
      jobs.set(id, entry)
      waiting.push(...units)
      next()
    },
    forget(id) {
      jobs.delete(id)
      clearTimeout(expiries.get(id))
      expiries.delete(id)
      for (let i = waiting.length - 1; i >= 0; i--) if (jobOf(waiting[i]) === id) waiting.splice(i, 1)
    },
    expire(id, ttlSeconds) {
      if (!jobs.has(id)) return
      const timer = setTimeout(() => {
        jobs.delete(id)
        expiries.delete(id)
      }, ttlSeconds * 1000)
      timer.unref()
      expiries.set(id, timer)
    },
    waiting: () => waiting.length,
    admit() {
      if (closed || refusing) throw serverStopping()
    },
    refuse() {
      refusing = true
      return waiting.splice(0)
    },
    source: {
      consume(p) {
        process = p
        next()
      },
      async close() {
        closed = true
        await running
        for (const timer of expiries.values()) clearTimeout(timer)
        return waiting.splice(0)
      },
    },
  }
}
