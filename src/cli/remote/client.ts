import {setTimeout as sleep} from 'node:timers/promises'

import {Agent, EnvHttpProxyAgent, FormData, request, type Dispatcher} from 'undici'

import {ModError, type ErrorCode} from '../../lib/errors.js'
import {isConnectionError, isRetriedStatus, retryAfterMs, retryDelayMs} from './retry.js'

/** How a remote run reaches its server. */
export interface ClientOptions {
  /** The server's base URL (a path prefix is kept: `https://host/mod/`). */
  server: string
  apiKey?: string
  /** Attempts per request before the run fails: the first one and its retries. */
  attempts: number
  /** Aborts every request in flight (Ctrl-C, or the run ended). */
  signal?: AbortSignal
  /** http_proxy / https_proxy / no_proxy, as the settings read them. */
  proxy?: {httpProxy?: string; httpsProxy?: string; noProxy?: string}
}

/** One file of a request: its name, and its bytes or a Blob over a file on disk (`fs.openAsBlob`, read as sent). */
export interface UploadFile {
  name: string
  data: Buffer | Blob
}

export interface Client {
  readonly server: string
  getJson<T>(path: string): Promise<T>
  /** DELETE once, without retries (cancelling what the run abandons); failures are ignored. */
  deleteOnce(path: string): Promise<void>
  /** A multipart request with `field` repeated once per file, and query parameters. */
  postFiles<T>(path: string, field: string, files: readonly UploadFile[], query?: Record<string, string>): Promise<{status: number; body: T}>
  close(): Promise<void>
}

interface ErrorBody {
  error?: {code?: string; message?: string}
}

/** The server's base URL, checked: http or https, ending in `/` so that paths resolve under its prefix. */
export function serverUrl(value: string): URL {
  let url: URL | undefined
  try {
    url = new URL(value)
  } catch {}
  if (!url || !/^https?:$/.test(url.protocol)) {
    throw new ModError('invalid_config', `--server / MOD_SERVER=${JSON.stringify(value)} is not valid: expected an http:// or https:// URL of a mod serve`)
  }
  if (!url.pathname.endsWith('/')) url.pathname += '/'
  url.search = ''
  url.hash = ''
  return url
}

const KNOWN_CODES: ReadonlySet<string> = new Set<ErrorCode>([
  'bad_request', 'unauthorized', 'payload_too_large', 'request_timeout', 'too_many_files', 'video_too_long',
  'unsupported_media', 'too_many_uploads', 'overloaded', 'model_unavailable', 'not_found', 'jobs_unavailable',
])

/** A refused request as the CLI reports it: the server's own code and message where it gave one, naming the server. */
function refused(server: string, status: number, body: ErrorBody | undefined, apiKey: string | undefined): ModError {
  const message = body?.error?.message ?? `HTTP ${status}`
  if (status === 401) {
    const why = apiKey === undefined ? 'it wants an API key: give --api-key or MOD_API_KEY' : 'it refused the API key given (--api-key / MOD_API_KEY)'
    return new ModError('unauthorized', `the server ${server} answered 401: ${why}`)
  }
  const code = body?.error?.code
  return new ModError(code !== undefined && KNOWN_CODES.has(code) ? (code as ErrorCode) : 'internal', `the server ${server} answered ${status}: ${message}`)
}

/**
 * The HTTP client of a remote run (undici, one connection pool per origin). Every request is retried on a
 * connection failure (refused, reset, the server killed mid-request: the next attempt takes a new connection, so
 * behind a balancer another server answers) and on 429/502/503/504, waiting as the server's Retry-After says or
 * backing off; moderation requests only read, so sending one twice is harmless. After `attempts` tries the run
 * fails with `server_unreachable`.
 */
export function createClient(options: ClientOptions): Client {
  const base = serverUrl(options.server)
  const server = base.href
  // One pool per origin; connections that fail are dropped and new ones opened for the next attempt.
  const pool = {connections: 64, keepAliveTimeout: 10_000}
  const {proxy} = options
  const agent =
    proxy?.httpProxy || proxy?.httpsProxy
      ? // '' rather than undefined: EnvHttpProxyAgent would otherwise read the environment itself.
        new EnvHttpProxyAgent({...pool, httpProxy: proxy.httpProxy ?? '', httpsProxy: proxy.httpsProxy ?? '', noProxy: proxy.noProxy ?? ''})
      : new Agent(pool)
  const headers = options.apiKey === undefined ? {} : {'x-api-key': options.apiKey}

  function parsed(text: string, what: string): unknown {
    try {
      return JSON.parse(text)
    } catch {
      throw new ModError('internal', `the server ${server} answered ${what} with a body that is not JSON: is it a mod serve?`)
    }
  }

  async function attempt<T>(what: string, send: () => Promise<Dispatcher.ResponseData>, accept: (status: number) => boolean): Promise<{status: number; body: T}> {
    let last = ''
    for (let n = 1; ; n++) {
      let wait: number | undefined
      try {
        const res = await send()
        const text = await res.body.text()
        if (accept(res.statusCode)) return {status: res.statusCode, body: parsed(text, what) as T}
        // A refusal may come from a balancer or proxy in front of the server, as an HTML page: only its status counts then.
        let body: unknown
        try {
          body = JSON.parse(text)
        } catch {}
        const code = (body as ErrorBody | undefined)?.error?.code
        // A server of several workers without a job queue says so with a 503 that no wait will change.
        if (!isRetriedStatus(res.statusCode) || code === 'jobs_unavailable') throw refused(server, res.statusCode, body as ErrorBody | undefined, options.apiKey)
        last = `${res.statusCode} ${code ?? ''}`.trim()
        wait = retryAfterMs(res.headers['retry-after'])
      } catch (e) {
        if (options.signal?.aborted || !isConnectionError(e)) throw e
        last = `${(e as {code: string}).code}${(e as Error).message ? ` (${(e as Error).message})` : ''}`
      }
      if (n >= options.attempts) {
        throw new ModError(
          'server_unreachable',
          `${what} to ${server} failed ${n} ${n === 1 ? 'time' : 'times'}, last with ${last}: the server is down, unreachable or overloaded`,
        )
      }
      await sleep(retryDelayMs(n, wait), undefined, {signal: options.signal})
    }
  }

  return {
    server,
    async getJson<T>(path: string): Promise<T> {
      const url = new URL(path, base)
      const r = await attempt<T>(`GET ${url.pathname}`, () => request(url, {method: 'GET', headers, dispatcher: agent, signal: options.signal}), (s) => s === 200)
      return r.body
    },
    async deleteOnce(path: string): Promise<void> {
      const res = await request(new URL(path, base), {method: 'DELETE', headers, dispatcher: agent}).catch(() => undefined)
      await res?.body.dump()
    },
    async postFiles<T>(path: string, field: string, files: readonly UploadFile[], query: Record<string, string> = {}) {
      const url = new URL(path, base)
      for (const [k, v] of Object.entries(query)) url.searchParams.set(k, v)
      // Each attempt sends a fresh form over the same bytes; undici streams it out as multipart.
      const form = (): FormData => {
        const body = new FormData()
        for (const f of files) body.append(field, f.data instanceof Blob ? f.data : new Blob([f.data as Uint8Array<ArrayBuffer>]), f.name)
        return body
      }
      return attempt<T>(`POST ${url.pathname}`, () => request(url, {method: 'POST', body: form(), headers, dispatcher: agent, signal: options.signal}), (s) => s >= 200 && s < 300)
    },
    close: () => agent.close(),
  }
}
