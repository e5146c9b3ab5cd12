import type {Log} from '../errors.js'

/** How long a stopping process waits for the callbacks it is still delivering (each may retry for longer). */
export const CALLBACK_GRACE_MS = 10_000

export interface CallbacksUnderWay {
  /** Keeps `delivery` (a callback's delivery, which never rejects) until it settles. */
  track(delivery: Promise<unknown>): void
  /**
   * Waits until every delivery has settled, for at most `ms`, and logs those still under way then: the process
   * that exits next cuts them.
   */
  settle(log: Log, ms?: number): Promise<void>
}

/** The callbacks a process is delivering, so that it gives them a moment to arrive before it exits. */
export function callbacksUnderWay(): CallbacksUnderWay {
  const pending = new Set<Promise<unknown>>()
  return {
    track(delivery) {
      const tracked: Promise<unknown> = delivery.finally(() => pending.delete(tracked))
      pending.add(tracked)
    },
    async settle(log, ms = CALLBACK_GRACE_MS) {
      if (pending.size === 0) return
      let timer: NodeJS.Timeout | undefined
      await Promise.race([Promise.all(pending), new Promise((resolve) => (timer = setTimeout(resolve, ms)))])
      clearTimeout(timer)
      if (pending.size > 0) log(`stopping: ${pending.size} job callback(s) not delivered after ${ms / 1000} s are given up`, 'warn')
    },
  }
}

/** The queue, whose close also gives the callbacks under way a moment to arrive (the process exits next). */
export function settlingCallbacks<Q extends {close(): Promise<void>}>(queue: Q, callbacks: CallbacksUnderWay, log: Log): Q {
  return {
    ...queue,
    async close() {
      await queue.close()
      await callbacks.settle(log)
    },
  }
}
