import {tooManyJobs} from '../admission.js'
import {memoryBackend, type MemoryBackend} from '../memory-backend.js'
import {attempt, inProcessStop, jobSkeleton} from '../skeleton.js'
import {removeJobFolder} from '../storage.js'
import {failedLines} from './lines.js'
import {chunksOf, deletedBody, imageJobBody, newImageJobState, type Chunk, type ChunkRunner, type ImageJobQueue, type ImageJobSpec, type ImageJobState, type ImageQueueHooks} from './types.js'

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
}

type Jobs = MemoryBackend<Entry, Chunk>

/** Records the lines of a chunk of a job still known; the last chunk ends the job. */
async function record(jobs: Jobs, o: MemoryImageQueueOptions, chunk: Chunk, entry: Entry, lines: string[]): Promise<void> {
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
  jobs.expire(chunk.job, o.ttlSeconds)
  o.onEnd?.(imageJobBody(entry.state), entry.spec.callbackUrl)
}

async function runChunk(jobs: Jobs, o: MemoryImageQueueOptions, chunk: Chunk, work: ChunkRunner, controller: AbortController): Promise<void> {
  const entry = jobs.entry(chunk.job)
  if (!entry) return
  entry.state = {...entry.state, started: true, updated_at: new Date().toISOString()}
  const ran = await attempt(controller.signal, () => work(chunk, controller.signal))
  if (ran.status === 'cancelled') return
  const lines = ran.status === 'done' ? ran.value : failedLines(chunk, o.describeError(ran.error))
  // A job deleted while its chunk ran keeps nothing of it.
  if (jobs.entry(chunk.job) === entry) await record(jobs, o, chunk, entry, lines)
}

/** Image jobs in this process: chunks run one at a time, in order of arrival (memory-backend.ts), through the job skeleton. */
export function createMemoryImageQueue(o: MemoryImageQueueOptions): ImageJobQueue {
  const jobs: Jobs = memoryBackend<Entry, Chunk>((chunk) => chunk.job)
  /** Jobs left with chunks waiting when the queue closed. */
  const dropped: string[] = []
  const skeleton = jobSkeleton<Chunk, ChunkRunner, void>(jobs.source, {
    jobOf: (chunk) => chunk.job,
    process: (chunk, work, controller) => runChunk(jobs, o, chunk, work, controller),
    async discard(id) {
      await removeJobFolder(o.storage, id)
      const entry = jobs.entry(id)
      if (!entry) return
      // Its client learns it will not end (callback), rather than waiting for a job gone with the process.
      jobs.forget(id)
      deletedBody(entry.state, entry.spec.callbackUrl, o)
      dropped.push(id)
    },
  })
  const stop = inProcessStop(() => jobs.refuse(), skeleton, dropped, o.onDropped)
  /** Job places reserved for uploads being read: job id -> client. */
  const reserved = new Map<string, string>()

  /** Counts and takes in one synchronous step: nothing else runs in between. */
  function take(client: string, id: string): void {
    const open = [...jobs.entries()].filter((e) => e.spec.client === client && !e.state.finished).length
    const places = [...reserved.values()].filter((c) => c === client).length
    if (open + places >= o.maxPerClient) throw tooManyJobs(o.maxPerClient)
    reserved.set(id, client)
  }

  return {
    async reserve(client, id) {
      jobs.admit()
      take(client, id)
      return {release: async () => void reserved.delete(id)}
    },
    async submit(spec) {
      try {
        jobs.admit()
      } catch (e) {
        reserved.delete(spec.id)
        throw e
      }
      if (reserved.get(spec.id) !== spec.client) take(spec.client, spec.id)
      reserved.delete(spec.id)
      const chunks = chunksOf(spec)
      const state = newImageJobState(spec, chunks.length)
      jobs.add(spec.id, {spec, state, lines: [], done: new Set()}, chunks)
      return imageJobBody(state)
    },
    async get(id, owner) {
      const entry = jobs.find(id, owner)
      return entry && imageJobBody(entry.state)
    },
    async lines(id, from, count) {
      const entry = jobs.entry(id)
      return Array.from({length: count}, (_, i) => entry?.lines[from + i])
    },
    async remove(id, owner) {
      const entry = jobs.find(id, owner)
      if (!entry) return undefined
      jobs.forget(id)
      await skeleton.cancel(id)
      await removeJobFolder(o.storage, id)
      return deletedBody(entry.state, entry.spec.callbackUrl, o)
    },
    work: (runner) => skeleton.work(runner),
    stopping: stop.stopping,
    reachable: () => true,
    close: stop.close,
  }
}
