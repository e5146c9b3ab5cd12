import ipaddr from 'ipaddr.js'

import {parseCount, type Env, type Settings} from '../lib/config/settings.js'
import {ModError} from '../lib/errors.js'

export interface ServeOptions {
  host: string
  /** 0 lets the system pick a free port. */
  port: number
  /** Processes, each with its own model; 1 serves in-process without node:cluster. */
  workers: number
}

export interface ServeFlags {
  host?: string
  port?: number
  workers?: number
}

export const DEFAULT_SERVE: ServeOptions = {host: '127.0.0.1', port: 8000, workers: 1}

/** --host/--port/--workers, each falling back to MOD_HOST/MOD_PORT/MOD_WORKERS (a flag wins), then the defaults. */
export function readServeOptions(flags: ServeFlags, env: Env): ServeOptions {
  const host = flags.host ?? (env.MOD_HOST || DEFAULT_SERVE.host)
  const port = flags.port ?? parseCount('MOD_PORT', env.MOD_PORT, DEFAULT_SERVE.port, 0)
  if (port > 65_535) throw new ModError('invalid_config', `MOD_PORT=${JSON.stringify(env.MOD_PORT)} is not valid: expected 0 to 65535`)
  const workers = flags.workers ?? parseCount('MOD_WORKERS', env.MOD_WORKERS, DEFAULT_SERVE.workers)
  return {host, port, workers}
}

/** Whether only this machine can connect: `localhost` or a loopback address (127.0.0.0/8, ::1). */
export function isLoopbackHost(host: string): boolean {
  if (host.toLowerCase() === 'localhost') return true
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host
  if (!ipaddr.isValid(bare)) return false
  const address = ipaddr.process(bare)
  return address.range() === 'loopback'
}

/** Lines to print before serving: a key-less server on an interface other machines can reach. */
export function startupWarnings(host: string, settings: Pick<Settings, 'apiKey'>): string[] {
  if (settings.apiKey !== undefined || isLoopbackHost(host)) return []
  return [
    `warning: serving on ${host} without MOD_API_KEY: anyone who can reach this address can use the API; ` +
      'set MOD_API_KEY, or serve on 127.0.0.1 behind a proxy that authenticates',
  ]
}

/** The base URL printed at startup, e.g. http://127.0.0.1:8000 or http://[::1]:8000. */
export function baseUrl(host: string, port: number): string {
  return `http://${host.includes(':') && !host.startsWith('[') ? `[${host}]` : host}:${port}`
}
