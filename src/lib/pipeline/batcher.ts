/**
 * Dynamic batching: items submitted by any number of callers are run together, at most `maxBatch` per run and
 * one run at a time. A run starts as soon as the runner is free: an item that arrives while the runner is idle
 * waits only for the items submitted in the same turn of the event loop, so a lone caller pays no added
 * latency, and items that arrive during a run go together in the next one.
 */
export interface Batcher<I, O> {
  submit(item: I): Promise<O>
  /** Items waiting for a run (not counting the run under way). */
  readonly waiting: number
}

interface Waiting<I, O> {
  item: I
  resolve: (o: O) => void
  reject: (e: unknown) => void
}

/** Told about every run that succeeded: how many items it held and how long it took. */
export type BatchObserver = (size: number, seconds: number) => void

export function createBatcher<I, O>(run: (items: I[]) => Promise<O[]>, maxBatch: number, observe?: BatchObserver): Batcher<I, O> {
  const queue: Waiting<I, O>[] = []
  let busy = false

  async function drain(): Promise<void> {
    while (queue.length > 0) {
      const batch = queue.splice(0, maxBatch)
      try {
        const started = performance.now()
        const out = await run(batch.map((w) => w.item))
        observe?.(batch.length, (performance.now() - started) / 1000)
        batch.forEach((w, i) => w.resolve(out[i]))
      } catch (e) {
        for (const w of batch) w.reject(e)
      }
    }
    busy = false
  }

  return {
    submit(item) {
      return new Promise<O>((resolve, reject) => {
        queue.push({item, resolve, reject})
        if (busy) return
        busy = true
        // Partners submitted in this same turn (the frames of one image, a chunk of a folder) join the first run.
        setImmediate(() => void drain())
      })
    },
    get waiting() {
      return queue.length
    },
  }
}
