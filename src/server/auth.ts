import {createHash, timingSafeEqual} from 'node:crypto'
import type {IncomingMessage} from 'node:http'

import {DEFAULT_KEY_NAME, type NamedKey} from '../lib/config/api-keys.js'
import type {ServerSettings} from '../lib/config/settings.js'
import {ModError} from '../lib/errors.js'

const digest = (text: string): Buffer => createHash('sha256').update(text, 'utf8').digest()

/**
 * Whether the X-API-Key header equals the key. Both sides are hashed first so that the comparison
 * runs on equal lengths in constant time: neither the key's content nor its length leaks through timing.
 */
export function keyMatches(key: string, header: string | string[] | undefined): boolean {
  if (typeof header !== 'string') return false
  return timingSafeEqual(digest(key), digest(header))
}

/** Every key the server accepts: MOD_API_KEY's (named `default`), then MOD_API_KEYS'. Empty: no key is needed. */
export function serverKeys(settings: Pick<ServerSettings, 'apiKey' | 'apiKeys'>): NamedKey[] {
  return [...(settings.apiKey === undefined ? [] : [{name: DEFAULT_KEY_NAME, key: settings.apiKey}]), ...settings.apiKeys]
}

/**
 * The name of the key the X-API-Key header holds, or undefined. Every key is compared, whichever matches: the time
 * taken says nothing of which one did.
 */
export function keyOwner(keys: readonly NamedKey[], header: string | string[] | undefined): string | undefined {
  let owner: string | undefined
  for (const {name, key} of keys) if (keyMatches(key, header) && owner === undefined) owner = name
  return owner
}

/**
 * The request's key problem, if any (the message never repeats what was sent), or the name of the key it holds
 * (undefined when the server needs none or the request is public). `isPublic`: the request is one that never needs
 * the key (a route declared public, the documentation).
 */
export function checkKey(keys: readonly NamedKey[], req: IncomingMessage, isPublic: boolean): {refused: ModError} | {owner?: string} {
  if (keys.length === 0 || isPublic) return {}
  const header = req.headers['x-api-key']
  if (header === undefined) return {refused: new ModError('unauthorized', 'this server needs an API key: send it in the X-API-Key header')}
  // Node joins repeated headers into one value ("k, k"), which then matches no key: say what happened instead.
  if (req.rawHeaders.filter((name, i) => i % 2 === 0 && name.toLowerCase() === 'x-api-key').length > 1) {
    return {refused: new ModError('unauthorized', 'the X-API-Key header was sent more than once (a proxy adding it again?): send it once')}
  }
  const owner = keyOwner(keys, header)
  if (owner === undefined) {
    const configured = keys.length === 1 ? 'the configured key' : 'any of the configured keys'
    return {refused: new ModError('unauthorized', `the X-API-Key header does not match ${configured}`)}
  }
  return {owner}
}
