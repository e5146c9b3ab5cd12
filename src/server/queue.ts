import {ModError} from '../lib/errors.js'

export interface Ticket {
  /**
   * Runs `work` when the engine is free: one moderation at a time, first come first served. A request
   * whose client went away (`signal` aborted) leaves the line without running.
   */
  run<T>(work: () => Promise<T>, signal?: AbortSignal): Promise<T>
  /**
   * Runs the CPU work before inference (decoding, preprocessing) in a stage of its own, also one at a
   * time: the next request is prepared while the current one is inferred, and memory holds at most one
   * decoding beside the running moderation.
   */
  prepare<T>(work: () => Promise<T>, signal?: AbortSignal): Promise<T>
  /** Gives the place back; safe to call more than once. */
  release(): void
}

export interface Gate {
  /**
   * Lets a request in before its body is read, or throws `overloaded` when one running request and
   * `queueLimit` more are already in, so a busy worker refuses at once instead of buffering uploads.
   */
  admit(): Ticket
  /** Requests let in and not yet released: running, waiting, or still receiving their body. */
  readonly admitted: number
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

/** The per-process moderation queue (MOD_QUEUE_LIMIT); state lives in the returned value. */
export function createGate(queueLimit: number): Gate {
  let admitted = 0
  const engine = createLock()
  const preparing = createLock()

  return {
    get admitted() {
      return admitted
    },
    admit() {
      if (admitted > queueLimit) {
        throw new ModError('overloaded', `the server is busy (${queueLimit} requests already waiting); retry shortly`)
      }
      admitted++
      let released = false
      return {
        run: (work, signal) => engine.hold(work, signal),
        prepare: (work, signal) => preparing.hold(work, signal),
        release() {
          if (released) return
          released = true
          admitted--
        },
      }
    },
  }
}
