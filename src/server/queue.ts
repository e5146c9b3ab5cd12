import {addAbortListener} from 'node:events'

import {ModError} from '../lib/errors.js'
import type {Scheduler} from '../lib/pipeline/scheduler.js'
import {plural} from '../lib/plural.js'

export interface Ticket {
  /**
   * The stages this request's moderation runs in: preparing (decoding, preprocessing) takes turns with the other
   * requests of the worker, first come first served, so memory holds one decoding at a time while the model infers
   * others; inference is batched by the engine with whatever else is ready. A request whose client went away
   * (`signal` aborted) leaves the line without running.
   */
  scheduler(signal?: AbortSignal): Scheduler
  /** Gives the place back; safe to call more than once. */
  release(): void
}

/** A request body being received, and the bytes of it the worker holds in memory until the request is answered. */
export interface Upload {
  /**
   * Counts `bytes` more as held before they are buffered, or throws `overloaded` when the worker would then hold
   * more than MOD_MAX_BUFFERED_BYTES (the request's earlier bytes stay counted until `release`).
   */
  take(bytes: number): void
  /** Counts `bytes` fewer as held (a reservation turned out larger than the data). */
  give(bytes: number): void
  /** Gives the upload place back once the body is in; safe to call more than once. */
  done(): void
  /** Gives the upload place and every held byte back, once the request no longer needs its input. */
  release(): void
}

/** Where a request's buffered bytes are counted. */
export type Hold = Pick<Upload, 'take'>

export interface Gate {
  /**
   * Lets a request of `client` (clientOf) start receiving its body, or throws `overloaded` when the queue is full
   * already (a busy worker refuses at once instead of reading an upload it could not admit; not for a body that
   * does not go to this queue, `queued: false`) or `maxUploads` bodies are being received, and `too_many_uploads`
   * when `client` is already sending `maxUploadsPerClient`: clients that send slowly hold upload places, never
   * queue places, and one client cannot hold them all.
   */
  receive(client: string, options?: {queued?: boolean}): Upload
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

interface Lock {
  /** Runs `work` alone, first come first served; a caller whose party is gone leaves the line. */
  hold<T>(work: () => Promise<T>, party?: Party): Promise<T>
}

function createLock(): Lock {
  let busy = false
  const waiting: (() => void)[] = []

  function acquire(party?: Party): Promise<void> {
    if (party?.gone) return Promise.reject(cancelled())
    if (!busy) {
      busy = true
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
  }

  function handOver(): void {
    const next = waiting.shift()
    if (next) next()
    else busy = false
  }

  return {
    async hold(work, party) {
      await acquire(party)
      try {
        return await work()
      } finally {
        handOver()
      }
    },
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

export interface Intake {
  /** MOD_MAX_UPLOADS */
  maxUploads: number
  /** MOD_MAX_UPLOADS_PER_CLIENT */
  maxUploadsPerClient: number
  /** MOD_MAX_BUFFERED_BYTES */
  maxBufferedBytes: number
}

const UNBOUNDED: Intake = {
  maxUploads: Number.POSITIVE_INFINITY,
  maxUploadsPerClient: Number.POSITIVE_INFINITY,
  maxBufferedBytes: Number.POSITIVE_INFINITY,
}

/**
 * The per-process moderation queue (MOD_QUEUE_LIMIT), uploads (MOD_MAX_UPLOADS) and buffered bytes
 * (MOD_MAX_BUFFERED_BYTES); state lives in the returned value.
 */
export function createGate(queueLimit: number, intake: Intake = UNBOUNDED): Gate {
  const {maxUploads, maxUploadsPerClient, maxBufferedBytes} = intake
  let admitted = 0
  let receiving = 0
  /** Bodies being received per client; a client with none has no entry. */
  const byClient = new Map<string, number>()
  let held = 0
  const preparing = createLock()
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
      return receiving
    },
    get held() {
      return held
    },
    receive(client, {queued = true} = {}) {
      if (queued) checkQueue()
      const mine = byClient.get(client) ?? 0
      if (mine >= maxUploadsPerClient) {
        throw new ModError(
          'too_many_uploads',
          `this client is already sending ${plural(maxUploadsPerClient, 'upload')} (MOD_MAX_UPLOADS_PER_CLIENT); wait for one to finish`,
        )
      }
      if (receiving >= maxUploads) {
        throw new ModError('overloaded', `the server is busy (${plural(maxUploads, 'upload')} already in progress); retry shortly`)
      }
      receiving++
      byClient.set(client, mine + 1)
      let done = false
      let bytesHeld = 0
      const upload: Upload = {
        take(bytes) {
          if (held + bytes > maxBufferedBytes) {
            throw new ModError('overloaded', 'the server is busy (its memory for uploads is in use); retry shortly')
          }
          held += bytes
          bytesHeld += bytes
        },
        give(bytes) {
          const back = Math.min(bytes, bytesHeld)
          held -= back
          bytesHeld -= back
        },
        done() {
          if (done) return
          done = true
          receiving--
          const left = (byClient.get(client) ?? 1) - 1
          if (left === 0) byClient.delete(client)
          else byClient.set(client, left)
        },
        release() {
          upload.done()
          upload.give(bytesHeld)
        },
      }
      return upload
    },
    admit() {
      checkQueue()
      admitted++
      let released = false
      const parties: Disposable[] = []
      return {
        scheduler: (signal) => {
          const party = partyOf(signal)
          parties.push(party)
          return {
            prepare: (work) => preparing.hold(work, party),
            infer: (work) => (party.gone ? Promise.reject(cancelled()) : work()),
          }
        },
        release() {
          if (released) return
          released = true
          admitted--
          for (const party of parties) party[Symbol.dispose]()
        },
      }
    },
  }
}
