import {setMaxListeners} from 'node:events'
import {readFile} from 'node:fs/promises'

import type {Engine} from '../../../lib/engine.js'
import {ModError} from '../../../lib/errors.js'
import type {ImageFetcher} from '../../../lib/fetch/url.js'
import {clientEntry} from '../../errors.js'
import type {JobError} from '../types.js'
import {resultLine, sourceOf} from './lines.js'
import {itemPath, type ChunkRunner, type ImageItem} from './types.js'

export interface ChunkRunnerOptions {
  /** MOD_JOB_STORAGE, where uploaded items wait. */
  storage: string
  /** MOD_ALLOW_URLS of the process running the chunk. */
  allowUrls: boolean
  /** fetchImageUrl with the process's size and time limits. */
  fetchImage: ImageFetcher
  describeError(e: unknown): JobError
}

/**
 * Scores a chunk on the engine, its images read (fetched, or read from the job's folder) as the engine is ready for
 * them, so a chunk is never held in memory whole. A fetch that fails is the item's line, with the error
 * /v1/moderate/json would have answered for that URL.
 */
export function imageChunkRunner(engine: Engine, o: ChunkRunnerOptions): ChunkRunner {
  const read = async (item: ImageItem, job: string, index: number, signal: AbortSignal): Promise<Buffer> => {
    if ('file' in item) return readFile(itemPath(o.storage, job, index))
    if (!o.allowUrls) throw new ModError('url_fetch_disabled', 'fetching URLs is disabled on the worker that ran this item (MOD_ALLOW_URLS)')
    return (await o.fetchImage(item.url, {signal})).data
  }
  return async (chunk, signal) => {
    // Each of the chunk's URL fetches listens to its signal (a cancelled job stops them): more than Node's default 10.
    setMaxListeners(chunk.items.length + 1, signal)
    // The engine reports an item whose read failed as empty; the real cause replaces that entry.
    const failures = new Map<number, JobError>()
    const inputs = chunk.items.map((item, i) => ({
      source: sourceOf(item),
      read: async () => {
        try {
          return await read(item, chunk.job, chunk.start + i, signal)
        } catch (e) {
          failures.set(i, o.describeError(e))
          return Buffer.alloc(0)
        }
      },
    }))
    const lines: string[] = []
    for await (const entry of engine.moderateMany(inputs)) {
      if (signal.aborted) throw new ModError('internal', `job ${chunk.job}: cancelled`)
      const i = lines.length
      const failure = failures.get(i)
      lines.push(resultLine(chunk.start + i, chunk.items[i], failure ? {source: inputs[i].source, error: failure} : clientEntry(entry)))
    }
    return lines
  }
}
