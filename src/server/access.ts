import type {IncomingMessage, ServerResponse} from 'node:http'

import {corsHeaders} from './cors.js'
import type {Logger} from './logger.js'
import type {ServerMetrics} from './metrics.js'
import type {PathTable} from './paths.js'
import {errorCodeOf} from './reply.js'
import {requestIdOf} from './request-id.js'

export interface AccessOptions {
  corsOrigins: readonly string[]
  metrics: ServerMetrics
  paths: PathTable
  /** Receives one access line per request (info); without it none is written. */
  logger?: Logger
}

/** One answer as its access line and metric samples record it. */
interface Answered {
  /** The metric labels: the route pattern and a method it answers, or `other`. */
  labels: {method: string; route: string}
  /** Absent when Node could not read the request line; no path for a CONNECT, whose target is no path. */
  method?: string
  path?: string
  status: number
  code: string | undefined
  bytes: number
  /** Absent when the request's start is unknown (Node could not parse it): no duration is logged or observed. */
  seconds?: number
  requestId: string
  aborted: boolean
}

function record(o: Pick<AccessOptions, 'metrics' | 'logger'>, a: Answered): void {
  o.metrics.request(a.labels.method, a.labels.route, a.status, a.seconds)
  if (a.code !== undefined) o.metrics.error(a.code)
  o.logger?.info(
    {
      ...(a.method === undefined ? {} : {method: a.method}),
      ...(a.path === undefined ? {} : {path: a.path}),
      status: a.status,
      bytes: a.bytes,
      ...(a.seconds === undefined ? {} : {duration_ms: Math.round(a.seconds * 10_000) / 10}),
      request_id: a.requestId,
      ...(a.aborted ? {aborted: true} : {}),
    },
    'request',
  )
}

/**
 * The body bytes written on `res` so far, counted as `write` and `end` take them: an answer written as it goes (the
 * NDJSON of a job's results) has no Content-Length to read them from.
 */
function countWrites(res: ServerResponse): () => number {
  let bytes = 0
  const count = (chunk: unknown, encoding: unknown): void => {
    if (typeof chunk === 'string') bytes += Buffer.byteLength(chunk, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8')
    else if (chunk instanceof Uint8Array) bytes += chunk.byteLength
  }
  const {write, end} = res
  res.write = function (this: ServerResponse, chunk: unknown, ...rest: unknown[]) {
    count(chunk, rest[0])
    return (write as (...args: unknown[]) => boolean).call(this, chunk, ...rest)
  } as ServerResponse['write']
  res.end = function (this: ServerResponse, chunk?: unknown, ...rest: unknown[]) {
    if (typeof chunk !== 'function') count(chunk, rest[0])
    return (end as (...args: unknown[]) => ServerResponse).call(this, chunk, ...rest)
  } as ServerResponse['end']
  return () => bytes
}

/**
 * The status logged and counted for a request that got no answer, its client gone first: nginx's 499 (client closed
 * request), outside the statuses an answer can have, so that it counts as no success and no error answer.
 */
const NO_ANSWER = 499

/** The answers written on the socket for a request the routes had (client-error.ts: its body broke the parser). */
const writtenOnSocket = new WeakMap<ServerResponse, Pick<SocketAnswer, 'status' | 'code' | 'bytes'>>()

/** `res`'s request was answered on the socket, not by `res`: its access line and samples record that answer. */
export function answeredOnSocket(res: ServerResponse, answer: Pick<SocketAnswer, 'status' | 'code' | 'bytes'>): void {
  writtenOnSocket.set(res, answer)
}

/**
 * What every request gets on arrival: its id (X-Request-Id, which error bodies repeat) and its CORS headers; once it
 * ends (answered or abandoned), its metric samples and its access line.
 */
export function watchAccess(req: IncomingMessage, res: ServerResponse, o: AccessOptions): void {
  const started = performance.now()
  const requestId = requestIdOf(req)
  const streamed = countWrites(res)
  res.setHeader('X-Request-Id', requestId)
  for (const [name, value] of Object.entries(corsHeaders(o.corsOrigins, req))) res.setHeader(name, value)
  res.on('close', () => {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname
    const written = writtenOnSocket.get(res)
    // No head sent: the client went away before any answer (a head Node still holds for a pipelined request counts as
    // sent, as the client may get it).
    const unanswered = written === undefined && !res.headersSent
    record(o, {
      labels: o.paths.labels(req.method, path),
      method: req.method,
      path,
      status: written?.status ?? (unanswered ? NO_ANSWER : res.statusCode),
      code: written?.code ?? (unanswered ? undefined : errorCodeOf(res)),
      bytes: written?.bytes ?? (unanswered ? 0 : res.hasHeader('content-length') ? Number(res.getHeader('content-length')) : streamed()),
      seconds: (performance.now() - started) / 1000,
      requestId,
      aborted: written === undefined && !res.writableFinished,
    })
  })
}

/**
 * An error answer written on the socket, outside http's request and answer (client-error.ts): to a request Node could
 * not parse, or to a CONNECT. What is known of its request, never a header.
 */
export interface SocketAnswer {
  method?: string
  path?: string
  status: number
  code: string
  bytes: number
  requestId: string
}

/**
 * The access line and metric samples of an answer written on the socket: its request reached no route, so its
 * labels are `other`, and when it started is unknown.
 */
export function recordSocketAnswer(o: Pick<AccessOptions, 'metrics' | 'logger'>, a: SocketAnswer): void {
  record(o, {...a, labels: {method: 'other', route: 'other'}, aborted: false})
}
