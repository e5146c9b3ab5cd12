import {createHash} from 'node:crypto'

import type {ImageInput, ItemResult, VideoOptions} from '../../lib/engine.js'
import {DEFAULT_LIMITS} from '../../lib/config/settings.js'
import {ModError} from '../../lib/errors.js'
import {isItemError, itemErrorEntry} from '../../lib/item-errors.js'
import type {PresetName} from '../../lib/policy/types.js'
import {MAX_POLICY_BYTES} from '../../lib/policy/load.js'
import type {CategoryListing, CategoryState, VideoResult} from '../../lib/types.js'
import {visible} from '../visible.js'
import {batchResults, categoriesResult, healthResult} from './answers.js'
import {createClient, type Client, type ClientOptions} from './client.js'
import {openJournal, type Journal} from './journal.js'
import {moderateVideoRemotely} from './video.js'

/**
 * Bytes of images one batch request carries at most, whatever the server allows: the batches in flight and the one
 * being filled are held in memory (to be sent again after a failure), so the run holds at most
 * (concurrency + 1) x this.
 */
const BATCH_BYTES_CAP = 16 * 1024 * 1024

/**
 * The largest answers a server can have reason to send. A moderation result holds a label per category and what
 * the signals found (text lines, codes, regions: each bounded by the server), so a batch's answer is held to
 * RESULT_BYTES plus CATEGORY_BYTES per category for each file sent. A category listing repeats the server's policy
 * file (at most MAX_POLICY_BYTES) with JSON around it; /health is a few KiB.
 */
const RESULT_BYTES = 1024 * 1024
const CATEGORY_BYTES = 1024
const LISTING_BYTES = 8 * MAX_POLICY_BYTES
const HEALTH_BYTES = 1024 * 1024

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

/** What the server tells before the first image: what `mod scan` needs to read, score and state coverage. */
export interface RemoteFacts {
  version: string
  preset: PresetName
  model: string
  policySha256?: string
  maxBatch: number
  maxBytes: number
  maxBatchBytes: number
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

/** An input read and hashed, waiting for its batch; or its answer already known (an item error, the journal). */
type Slot = {source: string; data: Buffer; sha256: string} | {result: ItemResult}

export function remoteEngine(options: RemoteOptions): RemoteEngine {
  const stop = new AbortController()
  const signal = options.signal ? AbortSignal.any([options.signal, stop.signal]) : stop.signal
  const client: Client = createClient({...options, signal})
  const policy = {categories: [] as CategoryListing[]}
  let facts: RemoteFacts | undefined
  let journal: Journal | undefined
  /** Labels a result can hold: the policy's categories and a head's. */
  let labels = 0

  async function load(): Promise<RemoteFacts> {
    if (facts) return facts
    const journalSecret = options.journalKey || options.apiKey
    if (options.resume !== undefined && !journalSecret) {
      throw new ModError(
        'invalid_config',
        '--resume signs its journal with a secret the scanned files cannot know: set MOD_JOURNAL_KEY (or give the API key the server wants)',
      )
    }
    // The categories first: /health is public, so a wrong key shows here.
    const listing = categoriesResult(await client.getJson('v1/categories', LISTING_BYTES), client.server)
    const health = healthResult(await client.getJson('health', HEALTH_BYTES), client.server)
    // A trained head's labels are listed with the policy's categories, but coverage counts the policy's alone.
    policy.categories = listing.categories.filter((c) => c.origin !== 'head')
    labels = listing.categories.length
    const limits = health.limits ?? {max_batch: DEFAULT_LIMITS.maxBatch, max_bytes: DEFAULT_LIMITS.maxBytes, max_batch_bytes: DEFAULT_LIMITS.maxBatchBytes}
    facts = {
      version: health.version,
      preset: listing.preset,
      model: listing.model,
      policySha256: health.policy?.sha256,
      maxBatch: limits.max_batch,
      maxBytes: limits.max_bytes,
      maxBatchBytes: limits.max_batch_bytes,
    }
    const policyNote = facts.policySha256 ? `policy sha256 ${facts.policySha256.slice(0, 12)}` : 'policy not stated (an older server)'
    options.log(`mod: server: ${client.server} (mod ${facts.version}, preset ${facts.preset}, model ${visible(facts.model) || 'none'}, ${policyNote})`)
    if (options.resume !== undefined) {
      // A server that does not state its policy is tied by its category listing instead.
      const tie = facts.policySha256 ?? createHash('sha256').update(JSON.stringify(listing.categories)).digest('hex')
      journal = await openJournal(options.resume, tie, journalSecret as string)
      if (journal.size > 0) options.log(`mod: resume: ${journal.size} ${journal.size === 1 ? 'input' : 'inputs'} already scored in ${options.resume}`)
    }
    return facts
  }

  /** One batch: the slots still to score go to the server in one request; results come back in slot order. */
  async function score(slots: readonly Slot[]): Promise<ItemResult[]> {
    const sent = slots.filter((s): s is Extract<Slot, {data: Buffer}> => 'data' in s)
    let answers: ItemResult[] = []
    if (sent.length > 0) {
      const files = sent.map((s) => ({name: s.source, data: s.data}))
      const maxBytes = sent.length * (RESULT_BYTES + CATEGORY_BYTES * labels)
      const {body} = await client.postFiles('v1/moderate/batch', 'files', files, maxBytes)
      // The server names a result after the uploaded file; the run names it after the input, as a local scan does.
      answers = batchResults(body, sent.length, client.server).map((r, i) => ({...r, source: sent[i].source}))
      await journal?.add(answers.map((result, i) => ({sha256: sent[i].sha256, result})))
    }
    let next = 0
    return slots.map((s) => ('result' in s ? s.result : answers[next++]))
  }

  async function slotOf(input: ImageInput): Promise<Slot> {
    let data: Buffer
    try {
      data = await input.read()
    } catch (e) {
      if (isItemError(e)) return {result: itemErrorEntry(input.source, e)}
      throw e
    }
    const sha256 = createHash('sha256').update(data).digest('hex')
    const done = journal?.done(input.source, sha256)
    return done ? {result: done} : {source: input.source, data, sha256}
  }

  return {
    policy,
    load,
    categoryStates: async () => {
      await load()
      return policy.categories.map(({name, evaluated, evaluated_by, reason}) => ({name, evaluated, evaluated_by, ...(reason === undefined ? {} : {reason})}))
    },
    async *moderateMany(inputs) {
      const {maxBatch, maxBatchBytes} = await load()
      const byteCap = Math.min(maxBatchBytes, BATCH_BYTES_CAP)
      // Batches in flight, oldest first; results are yielded in input order.
      const inFlight: Promise<ItemResult[]>[] = []
      let batch: Slot[] = []
      let files = 0
      let bytes = 0
      const send = (): void => {
        if (batch.length === 0) return
        const p = score(batch)
        // Awaited in order below; until then a failure must not count as unhandled.
        p.catch(() => undefined)
        inFlight.push(p)
        batch = []
        files = 0
        bytes = 0
      }
      try {
        for await (const input of inputs) {
          const slot = await slotOf(input)
          if ('data' in slot) {
            if (files > 0 && (files >= maxBatch || bytes + slot.data.length > byteCap)) send()
            files++
            bytes += slot.data.length
          }
          batch.push(slot)
          if (files >= maxBatch) send()
          while (inFlight.length >= options.concurrency) yield* await (inFlight.shift() as Promise<ItemResult[]>)
          // Answers already known need no request: they go out as soon as nothing before them waits.
          if (files === 0 && inFlight.length === 0) {
            yield* batch.map((s) => (s as {result: ItemResult}).result)
            batch = []
          }
        }
        send()
        while (inFlight.length > 0) yield* await (inFlight.shift() as Promise<ItemResult[]>)
      } finally {
        // The scan stopped early (a failure, Ctrl-C, the reader gone): requests still in flight are abandoned.
        if (inFlight.length > 0) stop.abort()
      }
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
