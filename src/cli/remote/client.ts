import {FormData, request, type Agent, type EnvHttpProxyAgent} from 'undici'

import {ModError} from '../../lib/errors.js'
import {BODY_BUFFER_BYTES} from '../../lib/fetch/body-buffer.js'
import {dispatcherFor} from '../../lib/fetch/proxy-agent.js'
import {untilAccepted, type Accepted, type AttemptContext} from './attempts.js'
import {REQUEST_TIMEOUTS, type RequestTimeouts} from './exchange.js'
import {headersAllowance} from './headers-allowance.js'
import {startRunClock} from './run-clock.js'

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
  /** The whole run's time limit in ms (--timeout): no request or wait goes past it. */
  timeoutMs?: number
  /** Each request's limits; REQUEST_TIMEOUTS unless a test shortens them. */
  timeouts?: RequestTimeouts
}

/** One file of a request: its name, and its bytes or a Blob over a file on disk (`fs.openAsBlob`, read as sent). */
export interface UploadFile {
  name: string
  data: Buffer | Blob
}

export interface Client {
  readonly server: string
  /** A GET whose answer is JSON of at most maxBytes. */
  getJson(path: string, maxBytes: number): Promise<unknown>
  /** DELETE once, without retries (cancelling what the run abandons); failures are ignored. */
  deleteOnce(path: string): Promise<void>
  /**
   * A multipart request with `field` repeated once per file, and query parameters; its answer is JSON of at most
   * maxBytes. `creates`: the request makes a job, and is sent again only when it cannot have made one.
   */
  postFiles(path: string, field: string, files: readonly UploadFile[], maxBytes: number, query?: Record<string, string>, how?: {creates?: boolean}): Promise<Accepted>
  close(): Promise<void>
}

/**
 * The server's base URL, checked: http or https, without a user name or password, ending in `/` so that paths
 * resolve under its prefix. Credentials are refused rather than sent: mod authenticates with the API key only, and
 * the URL is printed (the first stderr line, every error), so they would end up in CI logs.
 */
export function serverUrl(value: string): URL {
  let url: URL | undefined
  try {
    url = new URL(value)
  } catch {}
  if (url && (url.username || url.password)) {
    throw new ModError('invalid_config', '--server / MOD_SERVER holds a user name or password: mod sends the API key only (--api-key / MOD_API_KEY); give the server\'s URL without them')
  }
  if (!url || !/^https?:$/.test(url.protocol)) {
    throw new ModError('invalid_config', `--server / MOD_SERVER=${JSON.stringify(value)} is not valid: expected an http:// or https:// URL of a mod serve`)
  }
  if (!url.pathname.endsWith('/')) url.pathname += '/'
  url.search = ''
  url.hash = ''
  return url
}

/**
 * One connection pool per origin (undici): connections that fail are dropped and new ones opened for the next
 * attempt. Through the proxy the settings name, if any.
 */
function connectionPool(limits: RequestTimeouts, proxy: ClientOptions['proxy']): Agent | EnvHttpProxyAgent {
  return dispatcherFor({connections: 64, keepAliveTimeout: 10_000, headersTimeout: limits.headersMs, bodyTimeout: limits.idleMs}, proxy)
}

/** `field` repeated once per file; each attempt sends a fresh form over the same bytes, streamed out as multipart. */
function multipart(field: string, files: readonly UploadFile[]): FormData {
  const body = new FormData()
  for (const f of files) body.append(field, f.data instanceof Blob ? f.data : new Blob([f.data as Uint8Array<ArrayBuffer>]), f.name)
  return body
}

/**
 * The HTTP client of a remote run. Every request is retried on a connection failure (refused, reset, the server
 * killed mid-request: the next attempt takes a new connection, so behind a balancer another server answers), on
 * headers that do not come in time (for an upload, in a time that grows with the images the run has in flight:
 * headers-allowance.ts), and on 429/502/503/504, waiting as the server's Retry-After says or backing
 * off; moderation requests only read, so sending one twice is harmless (one that makes a job is sent again only
 * when it cannot have made one: attempts.ts). After `attempts` tries the run fails with `server_unreachable`.
 *
 * Nothing a server sends can hold the run or its memory: each answer's body is read up to a size its request
 * states (what it can hold), counted as it arrives; its headers must come within `headersMs`, its body within
 * `bodyMs` (else the run fails at once) with no pause over `idleMs`; and with `timeoutMs`, the whole run ends there
 * (`server_unreachable`).
 */
export function createClient(options: ClientOptions): Client {
  const base = serverUrl(options.server)
  const server = base.href
  const limits = options.timeouts ?? REQUEST_TIMEOUTS
  const ctx: AttemptContext = {server, limits, clock: startRunClock(server, options.timeoutMs), signal: options.signal, attempts: options.attempts, apiKey: options.apiKey}
  const agent = connectionPool(limits, options.proxy)
  const headers = options.apiKey === undefined ? {} : {'x-api-key': options.apiKey}
  // Uploads wait behind the run's other uploads on the server: their headers limit grows with the work in flight.
  const allowance = headersAllowance(limits.headersMs)
  return {
    server,
    async getJson(path, maxBytes) {
      const url = new URL(path, base)
      const send = (signal: AbortSignal) => request(url, {method: 'GET', headers, dispatcher: agent, signal, highWaterMark: BODY_BUFFER_BYTES})
      return (await untilAccepted(ctx, {what: `GET ${url.pathname}`, send, accept: (s) => s === 200, maxBytes})).body
    },
    async deleteOnce(path: string): Promise<void> {
      const res = await request(new URL(path, base), {method: 'DELETE', headers, dispatcher: agent, signal: AbortSignal.timeout(limits.headersMs)}).catch(() => undefined)
      await res?.body.dump().catch(() => undefined)
    },
    async postFiles(path, field, files, maxBytes, query = {}, how = {}) {
      const url = new URL(path, base)
      for (const [k, v] of Object.entries(query)) url.searchParams.set(k, v)
      const send = async (signal: AbortSignal) => {
        const wait = allowance.start(files.length)
        try {
          const res = await request(url, {method: 'POST', body: multipart(field, files), headers, dispatcher: agent, signal, headersTimeout: wait.limitMs, highWaterMark: BODY_BUFFER_BYTES})
          wait.done(res.statusCode >= 200 && res.statusCode < 300 ? 'answered' : 'failed')
          return res
        } catch (e) {
          wait.done((e as {code?: string}).code === 'UND_ERR_HEADERS_TIMEOUT' ? 'timed out' : 'failed')
          throw e
        }
      }
      return untilAccepted(ctx, {what: `POST ${url.pathname}`, send, accept: (s) => s >= 200 && s < 300, maxBytes, creates: how.creates})
    },
    close: () => agent.close(),
  }
}
