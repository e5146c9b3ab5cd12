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

/**
 * What every request gets on arrival: its id (X-Request-Id, which error bodies repeat) and its CORS headers; once it
 * ends (answered or abandoned), its metric samples and its access line.
 */
export function watchAccess(req: IncomingMessage, res: ServerResponse, o: AccessOptions): void {
  const started = performance.now()
  const requestId = requestIdOf(req)
  res.setHeader('X-Request-Id', requestId)
  for (const [name, value] of Object.entries(corsHeaders(o.corsOrigins, req))) res.setHeader(name, value)
  res.on('close', () => {
    const seconds = (performance.now() - started) / 1000
    const path = new URL(req.url ?? '/', 'http://localhost').pathname
    const {method, route} = o.paths.labels(req.method, path)
    o.metrics.request(method, route, res.statusCode, seconds)
    const code = errorCodeOf(res)
    if (code !== undefined) o.metrics.error(code)
    o.logger?.info(
      {
        method: req.method,
        path,
        status: res.statusCode,
        bytes: Number(res.getHeader('content-length') ?? 0),
        duration_ms: Math.round(seconds * 10_000) / 10,
        request_id: requestId,
        ...(res.writableFinished ? {} : {aborted: true}),
      },
      'request',
    )
  })
}
