/**
 * Dynamic batching: items submitted by any number of callers are run together, at most `maxBatch` per run and
 * one run at a time. A run starts as soon as the runner is free: an item that arrives while the runner is idle
 * waits only for the items submitted in the same turn of the event loop, so a lone caller pays no added
 * latency, and items that arrive during a run go together in the next one. The exception is an item another
 * caller said is on its way (`expect`): a run about to start waits for such items while they keep coming.
 */
export interface Batcher<I, O> {
  submit(item: I): Promise<O>
  /**
   * Says an item is on its way (being read, decoded or prepared): a run about to start, not full, waits for the
   * items on their way as long as each comes within `gapMs` of the one before. On two cores, preparing a few
   * images and then running them in one batch serves more images a second than running each alone while the
   * next is prepared, which only takes cores from the model (bench/http.ts --overlap). Returns what to call
   * once the item is submitted or will not be (calling it again does nothing).
   */
  expect(): () => void
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

/**
 * How long a run about to start waits for the next item on its way: about three times what preparing a 1280x720
 * JPEG takes on two cores (decoding 5 ms, the signals' inputs 3 ms), since items are prepared one at a time and
 * the gap between two also holds an HTTP client's turnaround. 20 ms often gave up just before the next came (4
 * clients on one worker: 2.1 images a run against 3.3 with 30 ms; bench/README.md, speed round 5).
 */
export const GATHER_GAP_MS = 30

export function createBatcher<I, O>(run: (items: I[]) => Promise<O[]>, maxBatch: number, observe?: BatchObserver, gapMs = GATHER_GAP_MS): Batcher<I, O> {
  const queue: Waiting<I, O>[] = []
  let busy = false
  /** Items said to be on their way and not submitted yet. */
  let expected = 0
  /** Wakes a run waiting in `gather` when an item comes or an expected one will not. */
  let changed: (() => void) | undefined

  async function gather(): Promise<void> {
    while (queue.length < maxBatch && expected > 0) {
      const came = await new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => resolve(false), gapMs)
        changed = () => {
          clearTimeout(timer)
          resolve(true)
        }
      })
      changed = undefined
      if (!came) return
    }
  }

  async function drain(): Promise<void> {
    while (queue.length > 0) {
      await gather()
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
        changed?.()
        if (busy) return
        busy = true
        // Partners submitted in this same turn (the frames of one image, a chunk of a folder) join the first run.
        setImmediate(() => void drain())
      })
    },
    expect() {
      expected++
      let done = false
      return () => {
        if (done) return
        done = true
        expected--
        changed?.()
      }
    },
    get waiting() {
      return queue.length
    },
  }
}
