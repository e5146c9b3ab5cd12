import {setTimeout as sleep} from 'node:timers/promises'

import {Agent, EnvHttpProxyAgent, FormData, request, type Dispatcher} from 'undici'

import {ModError, type ErrorCode} from '../../lib/errors.js'
import {readCapped} from '../../lib/input/read-capped.js'
import {formatSize} from '../../lib/sizes.js'
import {visible} from '../visible.js'
import {badAnswer, serverMessage} from './answers.js'
import {isConnectionError, isRetriedStatus, retryAfterMs, retryDelayMs} from './retry.js'

/** How long one request may take: its answer's headers, then its body (with no pause longer than idleMs). */
export interface RequestTimeouts {
  headersMs: number
  bodyMs: number
  idleMs: number
}

/**
 * The server scores a whole batch before its answer starts, so headers may take a while on a busy server; a body
 * is JSON of a few MiB at most, which a working connection delivers in seconds.
 */
export const REQUEST_TIMEOUTS: RequestTimeouts = {headersMs: 60_000, bodyMs: 30_000, idleMs: 10_000}

/** An error answer (JSON `{error: {code, message}}`, or a balancer's page) is read up to this. */
const MAX_ERROR_BODY_BYTES = 64 * 1024

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
  /** A multipart request with `field` repeated once per file, and query parameters; its answer is JSON of at most maxBytes. */
  postFiles(path: string, field: string, files: readonly UploadFile[], maxBytes: number, query?: Record<string, string>): Promise<{status: number; body: unknown}>
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
  const given = body?.error?.message
  const message = typeof given === 'string' ? serverMessage(given) : `HTTP ${status}`
  if (status === 401) {
    const why = apiKey === undefined ? 'it wants an API key: give --api-key or MOD_API_KEY' : 'it refused the API key given (--api-key / MOD_API_KEY)'
    return new ModError('unauthorized', `the server ${server} answered 401: ${why}`)
  }
  const code = body?.error?.code
  return new ModError(typeof code === 'string' && KNOWN_CODES.has(code) ? (code as ErrorCode) : 'internal', `the server ${server} answered ${status}: ${message}`)
}

function seconds(ms: number): string {
  return `${Number((ms / 1000).toFixed(1))} s`
}

/**
 * The HTTP client of a remote run (undici, one connection pool per origin). Every request is retried on a
 * connection failure (refused, reset, the server killed mid-request: the next attempt takes a new connection, so
 * behind a balancer another server answers), on headers that do not come in time, and on 429/502/503/504,
 * waiting as the server's Retry-After says or backing off; moderation requests only read, so sending one twice is
 * harmless. After `attempts` tries the run fails with `server_unreachable`.
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
  const started = Date.now()
  const runDeadline = options.timeoutMs === undefined ? undefined : started + options.timeoutMs
  // One pool per origin; connections that fail are dropped and new ones opened for the next attempt.
  const pool = {connections: 64, keepAliveTimeout: 10_000, headersTimeout: limits.headersMs, bodyTimeout: limits.idleMs}
  const {proxy} = options
  const agent =
    proxy?.httpProxy || proxy?.httpsProxy
      ? // '' rather than undefined: EnvHttpProxyAgent would otherwise read the environment itself.
        new EnvHttpProxyAgent({...pool, httpProxy: proxy.httpProxy ?? '', httpsProxy: proxy.httpsProxy ?? '', noProxy: proxy.noProxy ?? ''})
      : new Agent(pool)
  const headers = options.apiKey === undefined ? {} : {'x-api-key': options.apiKey}

  const overTime = (): ModError =>
    new ModError('server_unreachable', `the run was stopped after ${seconds(options.timeoutMs ?? 0)} (--timeout) waiting for the server ${server}`)

  /** Milliseconds left of the run's time, or Infinity without --timeout. */
  const left = (): number => (runDeadline === undefined ? Infinity : runDeadline - Date.now())

  function parsed(text: string, what: string): unknown {
    try {
      return JSON.parse(text)
    } catch {
      throw badAnswer(server, what, 'a body that is not JSON')
    }
  }

  /** The body as text, at most maxBytes, counted as it arrives (whatever Content-Length claims). */
  async function readBody(res: Dispatcher.ResponseData, maxBytes: number, what: string): Promise<string> {
    const tooLarge = () => badAnswer(server, what, `a body larger than the ${formatSize(maxBytes)} it can hold`)
    const length = Number(res.headers['content-length'])
    if (Number.isFinite(length) && length > maxBytes) {
      res.body.destroy()
      throw tooLarge()
    }
    return (await readCapped(res.body, maxBytes, what, tooLarge)).toString('utf8')
  }

  /**
   * One exchange under its own time limits: the headers by headersMs (undici's own timer), then the whole body by
   * bodyMs; neither past the run's deadline.
   */
  async function exchange(send: (signal: AbortSignal) => Promise<Dispatcher.ResponseData>, accept: (status: number) => boolean, maxBytes: number, what: string) {
    const timer = new AbortController()
    const signals = [timer.signal, ...(options.signal ? [options.signal] : [])]
    const signal = AbortSignal.any(signals)
    const arm = (ms: number, why: () => Error): NodeJS.Timeout => setTimeout(() => timer.abort(why()), Math.max(0, ms))
    // The headers' own limit is undici's (headersTimeout, counted from the upload's last progress): here only the run's.
    let clock = runDeadline === undefined ? undefined : arm(left(), overTime)
    try {
      const res = await send(signal)
      clearTimeout(clock)
      // A body that has begun and comes this slowly is a broken server or proxy, not a busy one: not retried.
      const slow = () =>
        new ModError('server_unreachable', `${what} to ${server}: the answer's body was not whole ${seconds(limits.bodyMs)} after its headers: a server or proxy sends it too slowly`)
      clock = arm(Math.min(left(), limits.bodyMs), () => (left() <= 0 ? overTime() : slow()))
      // A body already cut off by the timer throws its reason, not undici's "aborted".
      const onAbort = () => res.body.destroy(timer.signal.reason as Error)
      timer.signal.addEventListener('abort', onAbort, {once: true})
      const limit = accept(res.statusCode) ? maxBytes : MAX_ERROR_BODY_BYTES
      const text = await readBody(res, limit, what).catch((e: unknown) => {
        throw timer.signal.aborted ? timer.signal.reason : e
      })
      return {status: res.statusCode, headers: res.headers, text}
    } catch (e) {
      if (timer.signal.aborted && !options.signal?.aborted) throw timer.signal.reason
      throw e
    } finally {
      clearTimeout(clock)
    }
  }

  async function attempt(
    what: string,
    send: (signal: AbortSignal) => Promise<Dispatcher.ResponseData>,
    accept: (status: number) => boolean,
    maxBytes: number,
  ): Promise<{status: number; body: unknown}> {
    let last = ''
    for (let n = 1; ; n++) {
      if (left() <= 0) throw overTime()
      let wait: number | undefined
      try {
        const res = await exchange(send, accept, maxBytes, what)
        if (accept(res.status)) return {status: res.status, body: parsed(res.text, what)}
        // A refusal may come from a balancer or proxy in front of the server, as an HTML page: only its status counts then.
        let body: unknown
        try {
          body = JSON.parse(res.text)
        } catch {}
        const code = (body as ErrorBody | undefined)?.error?.code
        // A server of several workers without a job queue says so with a 503 that no wait will change.
        if (!isRetriedStatus(res.status) || code === 'jobs_unavailable') throw refused(server, res.status, body as ErrorBody | undefined, options.apiKey)
        last = visible(`${res.status} ${typeof code === 'string' ? code.slice(0, 40) : ''}`.trim())
        wait = retryAfterMs(res.headers['retry-after'])
      } catch (e) {
        // undici's parser refused the answer: whatever answered is not an HTTP server.
        if ((e as Error).name === 'HTTPParserError') throw badAnswer(server, what, `an answer that is not HTTP/1.1 (${visible((e as Error).message)})`)
        if (options.signal?.aborted || !isConnectionError(e)) throw e
        last = visible(`${(e as {code: string}).code}${(e as Error).message ? ` (${(e as Error).message})` : ''}`)
      }
      if (n >= options.attempts) {
        throw new ModError(
          'server_unreachable',
          `${what} to ${server} failed ${n} ${n === 1 ? 'time' : 'times'}, last with ${last}: the server is down, unreachable or overloaded`,
        )
      }
      const delay = retryDelayMs(n, wait)
      // A wait that would end past the run's time limit is not begun.
      if (delay >= left()) {
        throw new ModError(
          'server_unreachable',
          `${what} to ${server} failed with ${last}, and the next try (in ${seconds(delay)}) would come after the run's --timeout of ${seconds(options.timeoutMs ?? 0)}`,
        )
      }
      await sleep(delay, undefined, {signal: options.signal})
    }
  }

  return {
    server,
    async getJson(path, maxBytes) {
      const url = new URL(path, base)
      const r = await attempt(`GET ${url.pathname}`, (signal) => request(url, {method: 'GET', headers, dispatcher: agent, signal}), (s) => s === 200, maxBytes)
      return r.body
    },
    async deleteOnce(path: string): Promise<void> {
      const res = await request(new URL(path, base), {method: 'DELETE', headers, dispatcher: agent, signal: AbortSignal.timeout(limits.headersMs)}).catch(() => undefined)
      await res?.body.dump().catch(() => undefined)
    },
    async postFiles(path, field, files, maxBytes, query = {}) {
      const url = new URL(path, base)
      for (const [k, v] of Object.entries(query)) url.searchParams.set(k, v)
      // Each attempt sends a fresh form over the same bytes; undici streams it out as multipart.
      const form = (): FormData => {
        const body = new FormData()
        for (const f of files) body.append(field, f.data instanceof Blob ? f.data : new Blob([f.data as Uint8Array<ArrayBuffer>]), f.name)
        return body
      }
      return attempt(`POST ${url.pathname}`, (signal) => request(url, {method: 'POST', body: form(), headers, dispatcher: agent, signal}), (s) => s >= 200 && s < 300, maxBytes)
    },
    close: () => agent.close(),
  }
}
