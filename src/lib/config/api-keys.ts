/** MOD_API_KEY and MOD_API_KEYS: the keys a server accepts, each with the name its jobs belong to. */
import {ModError} from '../errors.js'
import type {Env} from './env.js'

export interface NamedKey {
  /** Who holds the key: the jobs made with it are theirs alone. */
  name: string
  key: string
}

/** The name MOD_API_KEY's key goes by. */
export const DEFAULT_KEY_NAME = 'default'

const NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/

/** Whether `value` has the form of a key's name (a job's owner read back from Redis is checked with it). */
export const isKeyName = (value: unknown): value is string => typeof value === 'string' && NAME.test(value)

/**
 * Printable ASCII (spaces inside allowed). An HTTP client sends other characters as bytes of its own choosing (curl
 * sends a terminal's UTF-8, browsers and Python's clients Latin-1, and none can send "€"), and the server reads the
 * header's bytes as Latin-1: such a key matched some clients and no others.
 */
const SENDABLE = /^[\x20-\x7e]*$/
const UNSENDABLE = 'a character other than printable ASCII, which HTTP clients do not send alike in a header; use letters, digits and punctuation'

const invalidKeys = (why: string): ModError =>
  new ModError('invalid_config', `MOD_API_KEYS is not valid: ${why}; expected name:key pairs separated by commas, e.g. "alice:KEY1,bob:KEY2"`)

/**
 * MOD_API_KEY's key, trimmed: HTTP drops the whitespace around a header's value, so a key read from a file with its
 * trailing newline (a Kubernetes Secret) could never match. Exactly empty is no key, as if unset (`MOD_API_KEY=` in
 * a shell or compose file); a value of whitespace alone is refused, as it would lock out every client.
 */
export function readApiKey(env: Env): string | undefined {
  const raw = env.MOD_API_KEY
  if (raw === undefined || raw === '') return undefined
  const key = raw.trim()
  if (key === '') throw new ModError('invalid_config', 'MOD_API_KEY is not valid: it holds only whitespace; give the key, or leave MOD_API_KEY empty or unset to need no key')
  if (!SENDABLE.test(key)) throw new ModError('invalid_config', `MOD_API_KEY is not valid: it holds ${UNSENDABLE}`)
  return key
}

/**
 * The named keys of MOD_API_KEYS (`name:key,name:key`; a key runs from the first ":" to the next ","; spaces
 * around an entry are ignored). Names are 1 to 64 letters, digits, "_", "." or "-", starting with a letter or digit;
 * names and keys must all differ, from MOD_API_KEY's (named `default`) too. Messages never repeat a key.
 */
export function readApiKeys(env: Env): NamedKey[] {
  const raw = env.MOD_API_KEYS
  if (raw === undefined || raw.trim() === '') return []
  const single = readApiKey(env)
  const names = new Set(single === undefined ? [] : [DEFAULT_KEY_NAME])
  const keys = new Set(single === undefined ? [] : [single])
  return raw.split(',').map((entry, i) => {
    const text = entry.trim()
    const colon = text.indexOf(':')
    if (colon === -1) throw invalidKeys(`entry ${i + 1} has no ":" between a name and a key`)
    const name = text.slice(0, colon).trim()
    const key = text.slice(colon + 1).trim()
    if (!NAME.test(name)) throw invalidKeys(`entry ${i + 1}'s name ${JSON.stringify(name)} is not 1 to 64 letters, digits, "_", "." or "-"`)
    if (key === '') throw invalidKeys(`the key of ${JSON.stringify(name)} is empty`)
    if (!SENDABLE.test(key)) throw invalidKeys(`the key of ${JSON.stringify(name)} holds ${UNSENDABLE}`)
    if (names.has(name)) {
      throw invalidKeys(name === DEFAULT_KEY_NAME && single !== undefined ? `"${DEFAULT_KEY_NAME}" is MOD_API_KEY's name` : `the name ${JSON.stringify(name)} is given twice`)
    }
    if (keys.has(key)) throw invalidKeys(`the key of ${JSON.stringify(name)} is also another name's key (or MOD_API_KEY)`)
    names.add(name)
    keys.add(key)
    return {name, key}
  })
}
