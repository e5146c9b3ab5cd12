import type {IncomingHttpHeaders} from 'node:http'
import {ModError, isModError} from '../errors.js'
import {readCapped} from '../input/read-capped.js'
import {formatSize} from '../sizes.js'
import {BODY_BUFFER_BYTES} from './body-buffer.js'
import {type Dial, directDial, pinnedClient} from './pinned.js'
import {type Resolver, type Subject, checkUrl, checkedAddresses, describeUrl, systemResolver} from './target.js'

export type {Dial} from './pinned.js'
export type {Resolver} from './target.js'

export interface FetchImageOptions {
  /** Largest body accepted, counted while it streams in (MOD_MAX_BYTES). */
  maxBytes: number
  /** One deadline for the whole fetch: resolution, every hop, the body (MOD_URL_TIMEOUT_MS). */
  timeoutMs: number
  /** Redirects followed before giving up; default 5. */
  maxRedirects?: number
  /** Host name resolution; default `dns.lookup` with all answers. Called once per hop. */
  resolve?: Resolver
  /** Test hook: where a checked address is dialled (see Dial); default the address itself. */
  connect?: Dial
  /** Ends the fetch when whoever asked for it is gone (the client left, the job was cancelled). */
  signal?: AbortSignal
  /** Told the size of each piece of the image's body as it arrives (the server judges its pace). */
  onBytes?: (bytes: number) => void
}

/** fetchImageUrl with the limits and hooks of whoever holds it: the caller gives only its own signal and counter. */
export type ImageFetcher = (url: string, how?: Pick<FetchImageOptions, 'signal' | 'onBytes'>) => Promise<FetchedImage>

export interface FetchedImage {
  data: Buffer
  /** The URL the bytes came from, after redirects. */
  finalUrl: string
  contentType?: string
}

type Hop = {kind: 'redirect'; location: URL} | {kind: 'body'; data: Buffer; contentType?: string}

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308])

const REQUEST_HEADERS = {
  accept: 'image/*, */*;q=0.8',
  'accept-encoding': 'identity',
  'user-agent': 'mod (image moderation)',
}

/** Low-level failures, as a phrase for a person (never the raw error text or the response body). */
const PROBLEMS: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ETIMEDOUT: 'connection timed out',
  EPIPE: 'connection closed',
  ENOTFOUND: 'the host name could not be resolved',
  EAI_AGAIN: 'the host name could not be resolved',
  UND_ERR_CONNECT_TIMEOUT: 'connection timed out',
  UND_ERR_SOCKET: 'connection closed',
  UND_ERR_CLOSED: 'connection closed',
  UND_ERR_RES_CONTENT_LENGTH_MISMATCH: 'the response was cut short',
  // The connection was made: the server took the request and kept silent, or stopped sending.
  UND_ERR_HEADERS_TIMEOUT: 'the server took the request but sent no answer in time',
  UND_ERR_BODY_TIMEOUT: 'the server stopped sending its answer',
}

/**
 * Downloads an image from a caller-supplied URL without letting the caller reach internal services.
 * Per hop: the scheme, credentials and port are checked, the host is resolved once and every address
 * checked (address.ts), and the connection goes to exactly those addresses. Redirects are followed by
 * hand and checked the same way. Errors: bad_request (not a URL), url_blocked, url_fetch_failed (DNS
 * failure, connection failure, non-2xx, too many redirects, bad redirect), url_fetch_timeout,
 * payload_too_large (declared or streamed size over maxBytes; the connection is dropped at once).
 */
export async function fetchImageUrl(raw: string, options: FetchImageOptions): Promise<FetchedImage> {
  let url = parseUrl(raw)
  const maxRedirects = options.maxRedirects ?? 5
  const deadline = new AbortController()
  const timer = setTimeout(() => deadline.abort(), options.timeoutMs)
  // Nobody waits for the image any more: the download stops, instead of holding its place until the deadline.
  const cancel = () => deadline.abort()
  options.signal?.addEventListener('abort', cancel, {once: true})
  if (options.signal?.aborted) cancel()
  try {
    for (let redirects = 0; ; redirects++) {
      const subject: Subject = redirects === 0 ? 'the URL' : 'the redirect target'
      checkUrl(url, subject)
      const resolving = checkedAddresses(url, subject, options.resolve ?? systemResolver)
      const addresses = await untilAborted(resolving, deadline.signal)
      const hop = await get(url, addresses, options, deadline.signal)
      if (hop.kind === 'body') return {data: hop.data, finalUrl: url.href, contentType: hop.contentType}
      if (redirects === maxRedirects) {
        throw new ModError('url_fetch_failed', `too many redirects (more than ${maxRedirects})`)
      }
      url = hop.location
    }
  } catch (e) {
    if (isModError(e)) throw e
    if (options.signal?.aborted) throw new ModError('url_fetch_failed', `fetching ${describeUrl(url)} was cancelled: nobody waits for it any more`)
    if (deadline.signal.aborted) {
      throw new ModError('url_fetch_timeout', `fetching ${describeUrl(url)} took longer than ${options.timeoutMs} ms`)
    }
    throw new ModError('url_fetch_failed', `could not fetch ${describeUrl(url)}: ${connectionProblem(e)}`)
  } finally {
    clearTimeout(timer)
    options.signal?.removeEventListener('abort', cancel)
  }
}

function parseUrl(raw: string): URL {
  try {
    return new URL(raw)
  } catch {
    throw new ModError('bad_request', 'url is not a valid absolute URL')
  }
}

/** DNS lookups cannot be cancelled, so the deadline races them. */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(signal.reason)
    if (signal.aborted) onAbort()
    signal.addEventListener('abort', onAbort, {once: true})
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort))
  })
}

async function get(url: URL, addresses: string[], options: FetchImageOptions, signal: AbortSignal): Promise<Hop> {
  const where = describeUrl(url)
  const client = await pinnedClient(url.origin, addresses, options.connect ?? directDial, options.timeoutMs)
  try {
    const response = await client.request({
      path: url.pathname + url.search,
      method: 'GET',
      headers: REQUEST_HEADERS,
      signal,
      highWaterMark: BODY_BUFFER_BYTES,
    })
    const {statusCode, headers} = response
    if (REDIRECT_STATUSES.has(statusCode)) return {kind: 'redirect', location: redirectTarget(url, headers.location)}
    if (statusCode < 200 || statusCode > 299) {
      throw new ModError('url_fetch_failed', `${where} answered HTTP ${statusCode}`, {status: statusCode})
    }
    if (Number(headers['content-length']) > options.maxBytes) throw tooLarge(where, options.maxBytes)
    const body = options.onBytes ? counted(response.body, options.onBytes) : response.body
    const data = await readCapped(body, options.maxBytes, where, () => tooLarge(where, options.maxBytes))
    const contentType = headers['content-type']
    return {kind: 'body', data, contentType: typeof contentType === 'string' ? contentType : undefined}
  } finally {
    await client.destroy()
  }
}

async function* counted(source: AsyncIterable<Buffer>, onBytes: (bytes: number) => void): AsyncGenerator<Buffer> {
  for await (const chunk of source) {
    onBytes(chunk.length)
    yield chunk
  }
}

function redirectTarget(from: URL, location: IncomingHttpHeaders[string]): URL {
  if (typeof location !== 'string') {
    throw new ModError('url_fetch_failed', `${describeUrl(from)} redirected without a Location`)
  }
  try {
    return new URL(location, from)
  } catch {
    throw new ModError('url_fetch_failed', `${describeUrl(from)} redirected to an invalid URL`)
  }
}

function tooLarge(where: string, maxBytes: number): ModError {
  return new ModError('payload_too_large', `the file at ${where} is larger than ${formatSize(maxBytes)}`)
}

/** A network failure (a connection, DNS, TLS or HTTP parsing error) as a phrase for a person. */
export function connectionProblem(e: unknown): string {
  const code = (e as {code?: unknown} | null)?.code
  if (typeof code !== 'string') return 'the connection failed'
  if (code.includes('CERT') || code === 'UNABLE_TO_VERIFY_LEAF_SIGNATURE') return 'its TLS certificate was not accepted'
  if (code.startsWith('HPE_')) return 'the response was not valid HTTP'
  // undici's redirect handling refuses these with an argument error, in words of its own.
  if (code === 'UND_ERR_INVALID_ARG') {
    const message = (e as Error).message
    if (/redirect loop/i.test(message)) return 'the server redirected in a loop'
    if (/URL protocol/i.test(message)) return 'it redirected to an address that is not http or https'
  }
  return PROBLEMS[code] ?? 'the connection failed'
}
