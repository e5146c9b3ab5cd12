import {createHash} from 'node:crypto'
import {basename} from 'node:path'

import type {ImageInput, ItemResult} from '../../lib/engine.js'
import {isItemError, itemErrorEntry} from '../../lib/item-errors.js'
import {batchResults, checkPolicy} from './answers.js'
import type {Client} from './client.js'
import type {Journal} from './journal.js'

/**
 * Bytes of images one batch request carries at most, whatever the server allows: the batches in flight and the one
 * being filled are held in memory (to be sent again after a failure), so the run holds at most
 * (concurrency + 1) x this.
 */
const BATCH_BYTES_CAP = 16 * 1024 * 1024

/**
 * The largest answers a server can have reason to send. A moderation result holds a label per category and what
 * the signals found (text lines, codes, regions: each bounded by the server), so a batch's answer is held to
 * RESULT_BYTES plus CATEGORY_BYTES per category for each file sent.
 */
const RESULT_BYTES = 1024 * 1024
const CATEGORY_BYTES = 1024

/** How a run sends its images: to which server, how many and how much per request, how many requests at once. */
export interface BatchPlan {
  client: Client
  journal?: Journal
  /** Labels a result can hold: the policy's categories and a head's. */
  labels: number
  /** The sha256 of the policy the run began under (GET /health); undefined when the server did not state it. */
  policySha256?: string
  maxBatch: number
  maxBatchBytes: number
  concurrency: number
  /** Abandons the requests still in flight. */
  abandon: () => void
}

/** An input read and hashed, waiting for its batch; or its answer already known (an item error, the journal). */
type Slot = {source: string; data: Buffer; sha256: string} | {result: ItemResult}

async function slotOf(input: ImageInput, journal: Journal | undefined): Promise<Slot> {
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

/** One batch: the slots still to score go to the server in one request; results come back in slot order. */
async function score(slots: readonly Slot[], plan: BatchPlan): Promise<ItemResult[]> {
  const {client, journal} = plan
  const sent = slots.filter((s): s is Extract<Slot, {data: Buffer}> => 'data' in s)
  let answers: ItemResult[] = []
  if (sent.length > 0) {
    // The base name only: the folders a file sits in are the user's business, not the server's (its logs, its jobs).
    const files = sent.map((s) => ({name: basename(s.source), data: s.data}))
    const maxBytes = sent.length * (RESULT_BYTES + CATEGORY_BYTES * plan.labels)
    const {body, headers} = await client.postFiles('v1/moderate/batch', 'files', files, maxBytes)
    checkPolicy(headers['x-mod-policy-sha256'], plan.policySha256, client.server, 'POST /v1/moderate/batch')
    // The server names a result after the uploaded file; the run names it after the input, as a local scan does.
    answers = batchResults(body, sent.length, client.server).map((r, i) => ({...r, source: sent[i].source}))
    await journal?.add(answers.map((result, i) => ({sha256: sent[i].sha256, result})))
  }
  let next = 0
  return slots.map((s) => ('result' in s ? s.result : answers[next++]))
}

/**
 * The inputs' results, in input order: images go to the server in batches of at most maxBatch files and the
 * smaller of the server's and BATCH_BYTES_CAP bytes, `concurrency` requests at once.
 */
export async function* scoreInBatches(inputs: AsyncIterable<ImageInput>, plan: BatchPlan): AsyncGenerator<ItemResult> {
  const {maxBatch, concurrency} = plan
  const byteCap = Math.min(plan.maxBatchBytes, BATCH_BYTES_CAP)
  // Batches in flight, oldest first; results are yielded in input order.
  const inFlight: Promise<ItemResult[]>[] = []
  let batch: Slot[] = []
  let files = 0
  let bytes = 0
  const send = (): void => {
    if (batch.length === 0) return
    const p = score(batch, plan)
    // Awaited in order below; until then a failure must not count as unhandled.
    p.catch(() => undefined)
    inFlight.push(p)
    batch = []
    files = 0
    bytes = 0
  }
  try {
    for await (const input of inputs) {
      const slot = await slotOf(input, plan.journal)
      if ('data' in slot) {
        if (files > 0 && (files >= maxBatch || bytes + slot.data.length > byteCap)) send()
        files++
        bytes += slot.data.length
      }
      batch.push(slot)
      if (files >= maxBatch) send()
      while (inFlight.length >= concurrency) yield* await (inFlight.shift() as Promise<ItemResult[]>)
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
    if (inFlight.length > 0) plan.abandon()
  }
}
