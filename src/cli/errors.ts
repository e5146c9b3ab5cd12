import {isModError} from '../lib/errors.js'

/** 0 all safe, 1 a violation, 2 usage, configuration, model or input error (nothing scanned, a failed start). */
export const EXIT_SAFE = 0
export const EXIT_VIOLATION = 1
export const EXIT_ERROR = 2
/** 128 + SIGINT, as a shell reports a command stopped by Ctrl-C. */
export const EXIT_INTERRUPTED = 130

/** The exit codes every command's --help lists. */
export const EXIT_CODES: [string, string][] = [
  ['0', 'success: every input was scanned and is safe'],
  ['1', 'a violation was found'],
  ['2', 'usage, configuration or model error; an input that could not be scanned; nothing to scan'],
  ['130', 'interrupted (Ctrl-C)'],
]

/** The one line the CLI prints for a failure: `mod: <code>: <message>`. */
export function errorLine(e: unknown): string {
  if (isModError(e)) return `mod: ${e.code}: ${e.message}`
  const message = e instanceof Error ? e.message : String(e)
  return `mod: internal: ${message}`
}
