/** The MOD_* variables as given, and the readers of values that every part of the settings shares. */
import {ModError} from '../errors.js'

export type Env = Readonly<Record<string, string | undefined>>

export function invalid(name: string, value: string, expected: string): ModError {
  return new ModError('invalid_config', `${name}=${JSON.stringify(value)} is not valid: expected ${expected}`)
}

export function parseBoolean(name: string, value: string | undefined, fallback: boolean): boolean {
  if (value === undefined || value === '') return fallback
  const v = value.trim().toLowerCase()
  if (['1', 'true', 'yes', 'on'].includes(v)) return true
  if (['0', 'false', 'no', 'off'].includes(v)) return false
  throw invalid(name, value, 'true or false (also 1 or 0, yes or no, on or off)')
}

/**
 * The longest wait a timer takes (2^31 - 1 ms, about 24.8 days): Node fires a longer one at once, so a "very long"
 * MOD_BODY_TIMEOUT_MS would refuse every upload and a long MOD_JOB_TTL lose every result.
 */
export const MAX_TIMER_MS = 2 ** 31 - 1

/** The whole number `value` writes in plain decimal, spaces around it ignored; NaN for anything else (`0x10`, `1e3`, `2.0`, spaces alone). */
export function plainWhole(value: string): number {
  return /^\d+$/.test(value.trim()) ? Number(value.trim()) : Number.NaN
}

/** A whole number written in plain decimal (`0x10`, `1e3` and a value of spaces alone are refused), from min to max. */
export function parseCount(name: string, value: string | undefined, fallback: number, min = 1, max = Number.MAX_SAFE_INTEGER): number {
  if (value === undefined || value === '') return fallback
  const n = plainWhole(value)
  if (!Number.isSafeInteger(n) || n < min || n > max) throw invalid(name, value, max === Number.MAX_SAFE_INTEGER ? `a whole number >= ${min}` : `a whole number from ${min} to ${max}`)
  return n
}
