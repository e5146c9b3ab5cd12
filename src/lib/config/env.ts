/** The MOD_* variables as given, and the readers of values that every part of the settings shares. */
import {isIP} from 'node:net'

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
function plainWhole(value: string): number {
  return /^\d+$/.test(value.trim()) ? Number(value.trim()) : Number.NaN
}

/**
 * What a count accepts, as every message about one says it: always the whole range, so that a value too large
 * (`99999999999999999999`) is not told it should be ">= 1".
 */
export function wholeRange(min: number, max = Number.MAX_SAFE_INTEGER): string {
  return `a whole number from ${min} to ${max}`
}

/** The count `value` writes in plain decimal (spaces around it ignored), from min to max; undefined for anything else. */
export function countOf(value: string, min: number, max = Number.MAX_SAFE_INTEGER): number | undefined {
  const n = plainWhole(value)
  return Number.isSafeInteger(n) && n >= min && n <= max ? n : undefined
}

/** A whole number written in plain decimal (`0x10`, `1e3` and a value of spaces alone are refused), from min to max. */
export function parseCount(name: string, value: string | undefined, fallback: number, min = 1, max = Number.MAX_SAFE_INTEGER): number {
  if (value === undefined || value === '') return fallback
  const n = countOf(value, min, max)
  if (n === undefined) throw invalid(name, value, wholeRange(min, max))
  return n
}

const MiB = 1024 * 1024
const UNITS: Record<string, number> = {b: 1, k: 1024, m: MiB, g: 1024 * MiB}

/**
 * What a size accepts (K, M and G are binary units). The largest is the largest whole number a double holds
 * exactly: a longer one (`99999999999999999999`) would be read as another number than the one written.
 */
export const SIZE_RANGE = 'a size in whole bytes from 1 to 9007199254740991, or with a unit: 26214400, 25MB, 1.5GiB'

/**
 * The bytes `value` writes, as a plain whole number or with a unit ("26214400", "25MB", "25 MiB", "512k", "1.5G"),
 * spaces around it ignored; undefined for anything else. Bytes written without a unit are whole (`1.5` is refused, not
 * read as 1 byte); a unit's fraction is rounded down to a byte (`1.3KB` is 1331).
 */
export function sizeOf(value: string): number | undefined {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(b|k|kb|kib|m|mb|mib|g|gb|gib)?\s*$/i.exec(value)
  if (!m) return undefined
  const factor = UNITS[(m[2] ?? 'b').toLowerCase()[0]]
  if (factor === 1 && !/^\d+$/.test(m[1])) return undefined
  const n = Math.floor(Number(m[1]) * factor)
  return Number.isSafeInteger(n) && n >= 1 ? n : undefined
}

/** Bytes as a plain integer or with a unit (sizeOf); an empty value is unset. */
export function parseSize(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined || value === '') return fallback
  const n = sizeOf(value)
  if (n === undefined) throw invalid(name, value, SIZE_RANGE)
  return n
}

/** What MOD_HOST and --host accept. */
export const HOST_FORM = 'a host name or IP address, without a port or scheme: 127.0.0.1, 0.0.0.0, ::1 (or [::1]), localhost'

/**
 * The host `value` names to listen on (spaces around it ignored): an IP address, or a host name of letters, digits,
 * hyphens and underscores (container names) between dots; undefined for anything else. A name ending in a label of
 * digits alone is a mistyped IPv4 address (`999.1.1.1`), which would otherwise be looked up as a name. An IPv6
 * address in brackets, as a URL writes it (`[::1]`), is that address.
 */
export function hostOf(value: string): string | undefined {
  const host = value.trim()
  if (isIP(host) !== 0) return host
  const bracketed = /^\[(.*)\]$/.exec(host)?.[1]
  if (bracketed !== undefined) return isIP(bracketed) === 6 ? bracketed : undefined
  const name = host.endsWith('.') ? host.slice(0, -1) : host
  const labels = name.split('.')
  const named = name.length <= 253 && labels.every((l) => /^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$/i.test(l))
  return named && !/^\d+$/.test(labels[labels.length - 1]) ? host : undefined
}
