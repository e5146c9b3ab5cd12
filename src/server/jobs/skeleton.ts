/**
 * The one lifecycle of every job queue, whatever the job kind (a video job, an image job in chunks) and the backend
 * (this process, or BullMQ on Redis). A queue is this skeleton filled in twice:
 * - the backend gives a WorkSource: where units of work (a video job, a chunk) wait, how they reach this process one
 *   at a time, how a DELETE reaches the process running a job, and what is left when it closes;
 * - the job kind gives a JobKind: which job a unit belongs to, how one unit runs and ends, and what to do with the
 *   files of a job left waiting when the queue closes.
 * The skeleton owns what they share: each unit runs under an abort signal of its own, which a DELETE fires here or
 * in whichever process runs the job; `work` starts taking units; `drop` discards the jobs of units that will not run
 * (an in-process queue stopping); `close` stops taking them, waits for the one running here and drops what is left.
 */

/** Where units wait and how they reach this process: the backend's part. */
export interface WorkSource<Unit, Answer> {
  /**
   * Hands units to `process` one at a time from now on. `abort(id)` stops job `id` if it runs here; a backend shared by
   * several processes calls it when another one asks (`cancel`).
   */
  consume(process: (unit: Unit) => Promise<Answer>, abort: (id: string) => void): void
  /** Asks the other processes that may be running job `id` to stop it (none for an in-process queue). */
  cancel?(id: string): Promise<void>
  /** Stops handing out units, waits for the one being processed and frees the backend; answers the units left waiting in it. */
  close(): Promise<Unit[]>
}

/** What a job kind does with the units of its jobs. */
export interface JobKind<Unit, Runner, Answer> {
  /** The id of the job the unit belongs to. */
  jobOf(unit: Unit): string
  /** Runs one unit with the runner `work` was given and records how it ended; `controller` is aborted by DELETE. */
  process(unit: Unit, runner: Runner, controller: AbortController): Promise<Answer>
  /** Removes the files of job `id`, whose units were left waiting when the queue closed. */
  discard?(id: string): Promise<void>
}

export interface JobSkeleton<Runner, Unit = unknown> {
  /** Starts running units with `runner`. */
  work(runner: Runner): void
  /** Stops job `id` wherever it runs: here at once, elsewhere through the backend. */
  cancel(id: string): Promise<void>
  /** The run of one of job `id`'s units in this process, settled when it has ended (undefined when none runs here). */
  runningHere(id: string): Promise<void> | undefined
  /** The jobs of `units`, which will not run (an in-process queue stopping), are discarded and their runs here stopped. */
  drop(units: Unit[]): Promise<void>
  /** Stops taking units and waits for the one running here; the files of jobs left waiting in the backend go. */
  close(): Promise<void>
}

interface Run {
  controller: AbortController
  ended: Promise<void>
}

export function jobSkeleton<Unit, Runner, Answer>(source: WorkSource<Unit, Answer>, kind: JobKind<Unit, Runner, Answer>): JobSkeleton<Runner, Unit> {
  const running = new Map<string, Run>()
  const abort = (id: string): void => running.get(id)?.controller.abort()

  async function run(unit: Unit, runner: Runner): Promise<Answer> {
    const id = kind.jobOf(unit)
    let ended = () => {}
    const here: Run = {controller: new AbortController(), ended: new Promise<void>((resolve) => (ended = resolve))}
    running.set(id, here)
    try {
      return await kind.process(unit, runner, here.controller)
    } finally {
      if (running.get(id) === here) running.delete(id)
      ended()
    }
  }

  async function drop(units: Unit[]): Promise<void> {
    for (const id of new Set(units.map((unit) => kind.jobOf(unit)))) {
      abort(id)
      await kind.discard?.(id)
    }
  }

  return {
    work: (runner) => source.consume((unit) => run(unit, runner), abort),
    async cancel(id) {
      abort(id)
      await source.cancel?.(id)
    },
    runningHere: (id) => running.get(id)?.ended,
    drop,
    close: async () => drop(await source.close()),
  }
}

/** How a unit's run ended: what it answered, or why it did not (`cancelled` when its signal was aborted by then). */
export type Attempt<T> = {status: 'done'; value: T} | {status: 'cancelled'} | {status: 'failed'; error: unknown}

/** Runs `work`; an error after the signal was aborted is the cancellation, not a failure. */
export async function attempt<T>(signal: AbortSignal, work: () => Promise<T>): Promise<Attempt<T>> {
  try {
    return {status: 'done', value: await work()}
  } catch (e) {
    return signal.aborted ? {status: 'cancelled'} : {status: 'failed', error: e}
  }
}

/**
 * How an in-process queue stops (the backend's `refuse`, the skeleton's `drop` and `close`): from `stopping`, the
 * units left waiting would never run, so their jobs end at once (their clients learn it by callback, not once the
 * running one ends); `close` waits for that and for the unit running here, then reports the jobs dropped, which the
 * kind's `discard` put in `dropped`, to `onDropped`.
 */
export function inProcessStop<Unit>(
  refuse: () => Unit[],
  skeleton: Pick<JobSkeleton<unknown, Unit>, 'drop' | 'close'>,
  dropped: string[],
  onDropped?: (ids: string[]) => void,
): {stopping(): void; close(): Promise<void>} {
  let dropping = Promise.resolve()
  const report = () => {
    if (dropped.length > 0) onDropped?.(dropped.splice(0))
  }
  return {
    stopping() {
      const left = refuse()
      dropping = dropping.then(() => skeleton.drop(left)).then(report)
      // close() awaits it and throws what failed; until then a failure is no unhandled rejection.
      dropping.catch(() => {})
    },
    async close() {
      await dropping
      await skeleton.close()
      report()
    },
  }
}
