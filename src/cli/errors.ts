import {isModError} from '../lib/errors.js'

/** CONTRACTS §6: 0 all safe, 1 a violation, 2 usage, configuration or model error. */
export const EXIT_SAFE = 0
export const EXIT_VIOLATION = 1
export const EXIT_ERROR = 2

/** One line for a person; unknown errors keep their message on the CLI (a local user may need it). */
export function describeError(e: unknown): string {
  if (isModError(e)) return `${e.code}: ${e.message}`
  return e instanceof Error ? `internal: ${e.message}` : `internal: ${String(e)}`
}
