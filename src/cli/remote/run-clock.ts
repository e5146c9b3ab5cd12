import {ModError} from '../../lib/errors.js'

/** The whole remote run's time limit (--timeout): what is left of it, and the error for a run that went past it. */
export interface RunClock {
  /** Milliseconds left of the run's time, or Infinity without --timeout. */
  left(): number
  overTime(): ModError
  /** --timeout in ms, when given. */
  readonly timeoutMs?: number
}

export function seconds(ms: number): string {
  return `${Number((ms / 1000).toFixed(1))} s`
}

/** A clock started now for a run against `server` that may last `timeoutMs` (for ever when undefined). */
export function startRunClock(server: string, timeoutMs: number | undefined): RunClock {
  const deadline = timeoutMs === undefined ? undefined : Date.now() + timeoutMs
  return {
    timeoutMs,
    left: () => (deadline === undefined ? Infinity : deadline - Date.now()),
    overTime: () => new ModError('server_unreachable', `the run was stopped after ${seconds(timeoutMs ?? 0)} (--timeout) waiting for the server ${server}`),
  }
}
