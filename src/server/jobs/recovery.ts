/**
 * How jobs of a worker that died are taken up again (BullMQ's stalled-job check). A running job holds a lock
 * that its worker renews while alive; a check, run by any live worker, puts a job whose lock has expired back
 * in the queue. The wait is the lock's remaining time plus up to one interval between checks, so the interval is
 * kept short beside the lock (BullMQ's default of 30 s for both made it up to a minute).
 */

/** How long a lock lasts without renewal. Long, so that a busy worker's lock never lapses while it lives. */
export const LOCK_DURATION_MS = 30_000

/** How often live workers look for jobs whose lock has expired; a cheap query on Redis. */
export const STALLED_INTERVAL_MS = 5_000

/** Times a job whose worker died is put back before it fails. */
export const MAX_STALLED_COUNT = 2

/**
 * The longest a dead worker's job waits before it is back in the queue: its lock expires at most
 * LOCK_DURATION_MS after the worker's last renewal, and the next check comes within STALLED_INTERVAL_MS. (Checks
 * are shared: one made by the worker that then died holds the others back for an interval, so the first check
 * after a death can take two intervals; that is still before the lock expires while the lock lasts longer.)
 */
export const recoverySeconds = (lockDurationMs = LOCK_DURATION_MS, stalledIntervalMs = STALLED_INTERVAL_MS): number =>
  Math.ceil((lockDurationMs + stalledIntervalMs) / 1000)
