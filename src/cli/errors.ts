import {isModError, type ErrorCode} from '../lib/errors.js'

/** CONTRACTS §6: 0 all safe, 1 a violation, 2 usage, configuration or model error. */
export const EXIT_SAFE = 0
export const EXIT_VIOLATION = 1
export const EXIT_ERROR = 2

/** Codes that are about one input rather than the run: the CLI reports them per item and goes on. */
const ITEM_CODES: ReadonlySet<ErrorCode> = new Set(['unreadable_image', 'unsupported_media', 'payload_too_large', 'video_too_long'])

export function isItemError(e: unknown): boolean {
  return isModError(e) && ITEM_CODES.has(e.code)
}

/** One line for a person; unknown errors keep their message on the CLI (a local user may need it). */
export function describeError(e: unknown): string {
  if (isModError(e)) return `${e.code}: ${e.message}`
  return e instanceof Error ? `internal: ${e.message}` : `internal: ${String(e)}`
}
