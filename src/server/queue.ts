import {ModError} from '../lib/errors.js'
import type {Scheduler} from '../lib/pipeline/scheduler.js'

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

/** A request body being received; `done` gives its upload place back (safe to call more than once). */
export interface Upload {
  done(): void
}

export interface Gate {
  /**
   * Lets a request start receiving its body, or throws `overloaded` when the queue is full already (a busy
   * worker refuses at once instead of reading an upload it could not admit) or `maxUploads` bodies are being
   * received: clients that send slowly hold upload places, never queue places.
   */
  receive(): Upload
  /**
   * Lets a request whose input is received into the queue, or throws `overloaded` when one running request and
   * `queueLimit` more are already in.
   */
  admit(): Ticket
  /** Requests let in and not yet released: running or waiting. */
  readonly admitted: number
  /** Request bodies being received. */
  readonly receiving: number
}

const cancelled = (): ModError => new ModError('bad_request', 'the request was cancelled by the client')

interface Lock {
  /** Runs `work` alone, first come first served; a caller whose signal aborts leaves the line. */
  hold<T>(work: () => Promise<T>, signal?: AbortSignal): Promise<T>
}

function createLock(): Lock {
  let busy = false
  const waiting: (() => void)[] = []

  function acquire(signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(cancelled())
    if (!busy) {
      busy = true
      return Promise.resolve()
    }
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        waiting.splice(waiting.indexOf(go), 1)
        reject(cancelled())
      }
      const go = () => {
        signal?.removeEventListener('abort', onAbort)
        resolve()
      }
      signal?.addEventListener('abort', onAbort, {once: true})
      waiting.push(go)
    })
  }

  function handOver(): void {
    const next = waiting.shift()
    if (next) next()
    else busy = false
  }

  return {
    async hold(work, signal) {
      await acquire(signal)
      try {
        return await work()
      } finally {
        handOver()
      }
    },
  }
}

/** The per-process moderation queue (MOD_QUEUE_LIMIT) and uploads (MOD_MAX_UPLOADS); state lives in the returned value. */
export function createGate(queueLimit: number, maxUploads = Number.POSITIVE_INFINITY): Gate {
  let admitted = 0
  let receiving = 0
  const preparing = createLock()
  const checkQueue = () => {
    if (admitted > queueLimit) {
      throw new ModError('overloaded', `the server is busy (${queueLimit} requests already waiting); retry shortly`)
    }
  }

  return {
    get admitted() {
      return admitted
    },
    get receiving() {
      return receiving
    },
    receive() {
      checkQueue()
      if (receiving >= maxUploads) {
        throw new ModError('overloaded', `the server is busy (${maxUploads} uploads already in progress); retry shortly`)
      }
      receiving++
      let done = false
      return {
        done() {
          if (done) return
          done = true
          receiving--
        },
      }
    },
    admit() {
      checkQueue()
      admitted++
      let released = false
      return {
        scheduler: (signal) => ({
          prepare: (work) => preparing.hold(work, signal),
          infer: (work) => (signal?.aborted ? Promise.reject(cancelled()) : work()),
        }),
        release() {
          if (released) return
          released = true
          admitted--
        },
      }
    },
  }
}
