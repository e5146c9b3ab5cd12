import {createServer} from 'node:net'

import ipaddr from 'ipaddr.js'

import type {ServerSettings} from '../lib/config/settings.js'
import {ModError} from '../lib/errors.js'

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

/** Why `host`:`port` cannot be listened on, from the error listening gave: what an operator mends. */
export function listenProblem(e: unknown, host: string, port: number): string {
  const code = (e as NodeJS.ErrnoException | undefined)?.code
  // Port 0 is any free port: only the host can have failed.
  const where = `cannot listen on ${port === 0 ? host : baseUrl(host, port).slice('http://'.length)}`
  switch (code) {
    case 'EADDRINUSE':
      return `${where}: the port is in use by another process (EADDRINUSE); stop it, or choose another port with --port or MOD_PORT (0 picks a free one)`
    case 'EADDRNOTAVAIL':
      return `${where}: ${host} is not an address of this machine (EADDRNOTAVAIL); give --host or MOD_HOST one of its addresses, or 0.0.0.0 for all`
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'EAI_FAIL':
      return `${where}: the name ${host} does not resolve to an address (getaddrinfo ${code}); give --host or MOD_HOST an address of this machine`
    case 'EACCES':
      return `${where}: permission denied (EACCES): ports below 1024 need privileges; choose a port from 1024 with --port or MOD_PORT`
    default:
      return `${where}: ${e instanceof Error ? e.message : String(e)}`
  }
}

/**
 * Fails with invalid_config when the server could not listen on `host`:`port` (a name that does not resolve, an
 * address of another machine, a port in use), by listening there and closing at once: said before any warning or
 * the model's loading, which would suggest a server on its way. The port is free again when the server opens it
 * (a listening socket that never took a connection leaves nothing in TIME_WAIT).
 */
export async function checkListenable(host: string, port: number): Promise<void> {
  const probe = createServer()
  try {
    await new Promise<void>((resolve, reject) => {
      probe.once('error', reject)
      probe.listen({host, port, exclusive: true}, resolve)
    })
  } catch (e) {
    throw new ModError('invalid_config', listenProblem(e, host, port))
  }
  await new Promise((resolve) => probe.close(resolve))
}
