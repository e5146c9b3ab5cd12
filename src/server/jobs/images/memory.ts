import {ModError} from '../../../lib/errors.js'
import {plural} from '../../../lib/plural.js'
import {visibleTo} from '../owner.js'
import {removeJobFolder} from '../storage.js'
import {failedLines} from './lines.js'
import {chunksOf, imageJobBody, type Chunk, type ChunkRunner, type ImageJobQueue, type ImageJobSpec, type ImageJobState, type ImageQueueHooks} from './types.js'

export interface MemoryImageQueueOptions extends ImageQueueHooks {
  storage: string
  ttlSeconds: number
  maxPerClient: number
}

interface Entry {
  spec: ImageJobSpec
  state: ImageJobState
  lines: (string | undefined)[]
  done: Set<number>
  controller: AbortController
  expiry?: NodeJS.Timeout
}

export const tooManyJobs = (limit: number): ModError =>
  new ModError('too_many_jobs', `this client already has ${plural(limit, 'image job')} not done (MOD_MAX_JOBS_PER_CLIENT); wait for one to end`)

/** Image jobs in this process: chunks run one at a time, in order of arrival; nothing survives a restart. */
export function createMemoryImageQueue(o: MemoryImageQueueOptions): ImageJobQueue {
  const jobs = new Map<string, Entry>()
  /** Job places reserved for uploads being read: job id -> client. */
  const reserved = new Map<string, string>()
  const waiting: Chunk[] = []
  let runner: ChunkRunner | undefined
  let running: Promise<void> | undefined
  let closed = false

  async function runChunk(chunk: Chunk, work: ChunkRunner): Promise<void> {
    const entry = jobs.get(chunk.job)
    if (!entry) return
    entry.state = {...entry.state, started: true, updated_at: new Date().toISOString()}
    let lines: string[]
    try {
      lines = await work(chunk, entry.controller.signal)
    } catch (e) {
      if (entry.controller.signal.aborted) return
      lines = failedLines(chunk, o.describeError(e))
    }
    if (jobs.get(chunk.job) !== entry) return
    lines.forEach((line, i) => (entry.lines[chunk.start + i] = line))
    entry.done.add(chunk.index)
    const finished = entry.done.size === entry.state.chunks
    entry.state = {
      ...entry.state,
      itemsDone: entry.lines.filter((l) => l !== undefined).length,
      chunksDone: entry.done.size,
      finished,
      updated_at: new Date().toISOString(),
    }
    if (!finished) return
    await removeJobFolder(o.storage, chunk.job)
    entry.expiry = setTimeout(() => jobs.delete(chunk.job), o.ttlSeconds * 1000)
    entry.expiry.unref()
    o.onEnd?.(imageJobBody(entry.state), entry.spec.callbackUrl)
  }

  function next(): void {
    if (running || closed || !runner) return
    const chunk = waiting.shift()
    if (!chunk) return
    running = runChunk(chunk, runner).finally(() => {
      running = undefined
      next()
    })
  }

  /** Counts and takes in one synchronous step: nothing else runs in between. */
  function take(client: string, id: string): void {
    const open = [...jobs.values()].filter((e) => e.spec.client === client && !e.state.finished).length
    const places = [...reserved.values()].filter((c) => c === client).length
    if (open + places >= o.maxPerClient) throw tooManyJobs(o.maxPerClient)
    reserved.set(id, client)
  }

  return {
    async reserve(client, id) {
      take(client, id)
      return {
        release: async () => void reserved.delete(id),
      }
    },
    async submit(spec) {
      if (closed) {
        reserved.delete(spec.id)
        throw new ModError('overloaded', 'the server is stopping; retry on another one')
      }
      if (reserved.get(spec.id) !== spec.client) take(spec.client, spec.id)
      reserved.delete(spec.id)
      const chunks = chunksOf(spec)
      const now = new Date().toISOString()
      const state: ImageJobState = {
        id: spec.id,
        total: spec.items.length,
        chunks: chunks.length,
        created_at: now,
        updated_at: now,
        started: false,
        finished: false,
        itemsDone: 0,
        chunksDone: 0,
      }
      jobs.set(spec.id, {spec, state, lines: [], done: new Set(), controller: new AbortController()})
      waiting.push(...chunks)
      next()
      return imageJobBody(state)
    },
    async get(id, owner) {
      const entry = jobs.get(id)
      return entry && visibleTo(entry.spec.owner, owner) ? imageJobBody(entry.state) : undefined
    },
    async lines(id, from, count) {
      const entry = jobs.get(id)
      return Array.from({length: count}, (_, i) => entry?.lines[from + i])
    },
    async remove(id, owner) {
      const entry = jobs.get(id)
      if (!entry || !visibleTo(entry.spec.owner, owner)) return undefined
      jobs.delete(id)
      clearTimeout(entry.expiry)
      entry.controller.abort()
      for (let i = waiting.length - 1; i >= 0; i--) if (waiting[i].job === id) waiting.splice(i, 1)
      await removeJobFolder(o.storage, id)
      const body = imageJobBody(entry.state)
      if (entry.state.finished) return body
      const cancelled = {...body, status: 'cancelled' as const, updated_at: new Date().toISOString()}
      o.onEnd?.(cancelled, entry.spec.callbackUrl)
      return cancelled
    },
    work(r) {
      runner = r
      next()
    },
    async close() {
      closed = true
      await running
      for (const entry of jobs.values()) clearTimeout(entry.expiry)
      for (const id of new Set(waiting.splice(0).map((c) => c.job))) await removeJobFolder(o.storage, id)
    },
  }
}
