import {defaultMaxListeners, setMaxListeners} from 'node:events'

import type {ImageInput, ItemResult, VideoOptions} from '../../lib/engine.js'
import type {CategoryListing, CategoryState, VideoResult} from '../../lib/types.js'
import {scoreInBatches} from './batches.js'
import {createClient, type ClientOptions} from './client.js'
import type {Journal} from './journal.js'
import {journalSecret, openResume} from './resume.js'
import {askServer, type RemoteFacts, type ServerState} from './server-facts.js'
import {moderateVideoRemotely} from './video.js'

export interface RemoteOptions extends ClientOptions {
  /** Batch requests in flight at once. */
  concurrency: number
  /** The --resume journal's path. */
  resume?: string
  /** What signs the journal's lines (MOD_JOURNAL_KEY); the API key when unset. */
  journalKey?: string
  /** One line for stderr (the server, its version and policy, once). */
  log: (line: string) => void
}

/**
 * `mod scan --server`: the part of the engine a scan uses, with the scoring done by a `mod serve` (or a fleet
 * behind a balancer): the coverage and categories of the server's policy, and images sent in batches.
 */
export interface RemoteEngine {
  /** The server's categories (for the CI reports' rules); filled by load(). */
  readonly policy: {categories: CategoryListing[]}
  /** Asks the server what it scores with, checks the key, prints the server line; opens the journal. */
  load(): Promise<RemoteFacts>
  categoryStates(): Promise<CategoryState[]>
  moderateMany(inputs: AsyncIterable<ImageInput>): AsyncGenerator<ItemResult>
  /** A video, as a job on the server's queue. */
  moderateVideo(path: string, options: VideoOptions): Promise<VideoResult>
  close(): Promise<void>
}

export function remoteEngine(options: RemoteOptions): RemoteEngine {
  const stop = new AbortController()
  const signal = options.signal ? AbortSignal.any([options.signal, stop.signal]) : stop.signal
  // Each request waiting to be sent again listens to it: up to --concurrency at once is the run working, not a leak.
  setMaxListeners(options.concurrency + defaultMaxListeners, signal)
  const client = createClient({...options, signal})
  const policy = {categories: [] as CategoryListing[]}
  let server: ServerState | undefined
  let journal: Journal | undefined

  /** Asks the server once; opens the journal. */
  async function ready(): Promise<ServerState> {
    if (server) return server
    const secret = journalSecret(options.resume, options.journalKey, options.apiKey)
    server = await askServer(client, options.log)
    policy.categories = server.categories
    if (options.resume !== undefined) journal = await openResume(options.resume, secret as string, server, options.log)
    return server
  }
  const load = async (): Promise<RemoteFacts> => (await ready()).facts

  return {
    policy,
    load,
    categoryStates: async () => {
      await load()
      return policy.categories.map(({name, evaluated, evaluated_by, reason}) => ({name, evaluated, evaluated_by, ...(reason === undefined ? {} : {reason})}))
    },
    async *moderateMany(inputs) {
      const {facts, labels} = await ready()
      const {maxBatch, maxBatchBytes, policySha256} = facts
      yield* scoreInBatches(inputs, {client, journal, labels, maxBatch, maxBatchBytes, policySha256, concurrency: options.concurrency, abandon: () => stop.abort()})
    },
    moderateVideo: async (path, o) => {
      await load()
      return moderateVideoRemotely(client, path, o)
    },
    close: async () => {
      stop.abort()
      await client.close()
    },
  }
}
