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
