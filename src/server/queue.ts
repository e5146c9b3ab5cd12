import {addAbortListener} from 'node:events'

import {ModError} from '../lib/errors.js'
import type {Scheduler} from '../lib/pipeline/scheduler.js'
import {plural} from '../lib/plural.js'
import type {Client} from './client-address.js'
import {createUploadPlaces, UNBOUNDED, type Intake, type Upload} from './upload-places.js'

export interface Ticket {
  /**
   * The stages this request's moderation runs in. Preparing (decoding, preprocessing) takes turns with the other
   * requests of the worker, first come first served, one at a time, and goes on while the model infers others
   * (inference runs off the event loop): the next inputs are ready when a run ends. Memory stays bounded: an item
   * holds one of PREPARED_SLOTS from the start of its preparing to the end of its inference, so one decoding and
   * at most that many prepared inputs are held at once, however many requests wait; the others wait in line,
   * their uploads received but not decoded. Inference is batched by the engine: a run about to start waits for the
   * items holding a slot that are still being prepared (`prepare`'s `placed`, Batcher.expect). A
   * request whose client went away (`signal` aborted) leaves the line without running, and gives back its slots.
   * Every `prepare` that succeeds is followed by one `infer` (the engine's order), which gives its slot back.
   */
  scheduler(signal?: AbortSignal): Scheduler
  /** Gives the place back; safe to call more than once. */
  release(): void
}

export interface Gate {
  /**
   * Lets a request of `client` (clientOf) start receiving its body, or throws `overloaded` when the queue is full
   * already (a busy worker refuses at once instead of reading an upload it could not admit; not for a body that
   * does not go to this queue, `queued: false`) or `maxUploads` bodies are being received, and `too_many_uploads`
   * when `client` is already sending `maxUploadsPerClient` (a URL fetched for a request holds its place too, under
   * the same rules as a body: upload-places.ts `read`): clients that send slowly hold upload places, never
   * queue places, and one client cannot hold them all. When every upload place is taken, the slowest body that
   * trickles (see `trickling`) is stopped with `request_timeout` and its place given to this request, unless the
   * network of `client` lags (see `lags`): clients that hold places by sending a byte now and then, from however
   * many addresses, cannot keep out a client that sends at a normal pace, and cannot take each other's places in turn.
   * Failing that, the places are shared max-min fair between networks (Client.network): a body of the network
   * holding the most places, whatever its pace, is stopped with `overloaded` and its place given to this request,
   * when that network holds at least two more than the network of `client`. Clients that keep the minimum pace from
   * a few addresses can thus hold no more than their share, and never take a place back from a network holding
   * fewer: a place only ever moves towards an even share.
   */
  receive(client: Client, options?: {queued?: boolean}): Upload
  /**
   * Lets a request whose input is received into the queue, or throws `overloaded` when one running request and
   * `queueLimit` more are already in.
   */
  admit(): Ticket
  /** Requests let in and not yet released: running or waiting. */
  readonly admitted: number
  /** Request bodies being received. */
  readonly receiving: number
  /** Request bytes held in memory by requests not answered yet; never more than the budget. */
  readonly held: number
}

const cancelled = (): ModError => new ModError('bad_request', 'the request was cancelled by the client')

/**
 * The items of one request waiting in line: they leave it together when the request's client goes away. A batch's
 * items wait together, so the request's signal gets one abort listener for all of them (one each would pass Node's
 * limit of 10 listeners per signal), removed when the request is released.
 */
interface Party {
  readonly gone: boolean
  /** Calls `leave` when the client goes away; the returned function stops that. */
  watch(leave: () => void): () => void
}

interface Slots {
  /** Waits for one of the slots, first come first served; a caller whose party is gone leaves the line. */
  take(party?: Party): Promise<void>
  /** Gives a slot back, to the first caller waiting. */
  give(): void
}

function createSlots(count: number): Slots {
  let free = count
  const waiting: (() => void)[] = []
  return {
    take(party) {
      if (party?.gone) return Promise.reject(cancelled())
      if (free > 0) {
        free--
        return Promise.resolve()
      }
      return new Promise((resolve, reject) => {
        const go = () => {
          unwatch()
          resolve()
        }
        const unwatch =
          party?.watch(() => {
            waiting.splice(waiting.indexOf(go), 1)
            reject(cancelled())
          }) ?? (() => {})
        waiting.push(go)
      })
    },
    give() {
      const next = waiting.shift()
      if (next) next()
      else free++
    },
  }
}

/** Runs `work` holding one of `slots`, then gives it back. */
async function holding<T>(slots: Slots, work: () => Promise<T>, party?: Party): Promise<T> {
  await slots.take(party)
  try {
    return await work()
  } finally {
    slots.give()
  }
}

/** The party of a request's items; `dispose` removes its listener from `signal`. */
function partyOf(signal: AbortSignal | undefined): Party & Disposable {
  const leaving = new Set<() => void>()
  let listener: Disposable | undefined
  return {
    get gone() {
      return signal?.aborted ?? false
    },
    watch(leave) {
      if (!signal) return () => {}
      listener ??= addAbortListener(signal, () => {
        for (const each of [...leaving]) each()
      })
      leaving.add(leave)
      return () => leaving.delete(leave)
    },
    [Symbol.dispose]() {
      listener?.[Symbol.dispose]()
      leaving.clear()
    },
  }
}

/**
 * Items between the start of their preparing and the end of their inference, in the whole worker. Four, so that
 * four clients' images run in one batch: on two cores, a batch of four runs the models about 1.4 times faster an
 * image than one at a time, and the batcher waits for the items holding a slot (Batcher.expect) rather than
 * running each alone while the next is decoded (bench/http.ts --overlap). Each item holds its model inputs, a few
 * MB, or with text rules its decoded frame (docs/operations.md).
 */
export const PREPARED_SLOTS = 4

/**
 * The per-process moderation queue (MOD_QUEUE_LIMIT) in front of the upload places and buffered bytes
 * (upload-places.ts); state lives in the returned value.
 */
export function createGate(queueLimit: number, intake: Intake = UNBOUNDED): Gate {
  let admitted = 0
  const places = createUploadPlaces(intake)
  const preparing = createSlots(1)
  const prepared = createSlots(PREPARED_SLOTS)
  const checkQueue = () => {
    if (admitted > queueLimit) {
      throw new ModError('overloaded', `the server is busy (${plural(queueLimit, 'request')} already waiting); retry shortly`)
    }
  }

  return {
    get admitted() {
      return admitted
    },
    get receiving() {
      return places.receiving
    },
    get held() {
      return places.held
    },
    receive(client, {queued = true} = {}) {
      if (queued) checkQueue()
      return places.take(client)
    },
    admit() {
      checkQueue()
      admitted++
      let released = false
      // This request's items prepared and not yet through inference: each holds a slot of `prepared`.
      let held = 0
      const parties: Disposable[] = []
      return {
        scheduler: (signal) => {
          const party = partyOf(signal)
          parties.push(party)
          return {
            async prepare(work, placed) {
              await prepared.take(party)
              placed?.()
              try {
                const out = await holding(preparing, work, party)
                if (released) prepared.give()
                else held++
                return out
              } catch (e) {
                prepared.give()
                throw e
              }
            },
            async infer(work) {
              try {
                if (party.gone) throw cancelled()
                return await work()
              } finally {
                if (held > 0) {
                  held--
                  prepared.give()
                }
              }
            },
          }
        },
        release() {
          if (released) return
          released = true
          admitted--
          for (; held > 0; held--) prepared.give()
          for (const party of parties) party[Symbol.dispose]()
        },
      }
    },
  }
}
