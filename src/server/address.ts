import ipaddr from 'ipaddr.js'

import type {ServerSettings} from '../lib/config/settings.js'

/** Whether only this machine can connect: `localhost` or a loopback address (127.0.0.0/8, ::1). */
export function isLoopbackHost(host: string): boolean {
  if (host.toLowerCase() === 'localhost') return true
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host
  if (!ipaddr.isValid(bare)) return false
  const address = ipaddr.process(bare)
  return address.range() === 'loopback'
}

/** Lines to print before serving: a key-less server on an interface other machines can reach. */
export function startupWarnings(host: string, settings: Pick<ServerSettings, 'apiKey'> & Partial<Pick<ServerSettings, 'apiKeys'>>): string[] {
  if (settings.apiKey !== undefined || (settings.apiKeys ?? []).length > 0 || isLoopbackHost(host)) return []
  return [
    `warning: serving on ${host} without MOD_API_KEY: anyone who can reach this address can use the API; ` +
      'set MOD_API_KEY (or MOD_API_KEYS), or serve on 127.0.0.1 behind a proxy that authenticates',
  ]
}

/** The base URL printed at startup, e.g. http://127.0.0.1:8000 or http://[::1]:8000. */
export function baseUrl(host: string, port: number): string {
  return `http://${host.includes(':') && !host.startsWith('[') ? `[${host}]` : host}:${port}`
}
