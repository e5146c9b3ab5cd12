import type {IncomingMessage, ServerResponse} from 'node:http'

import type {NamedKey} from '../lib/config/api-keys.js'
import {checkKey} from './auth.js'
import type {Request} from './context.js'
import {preflightHeaders} from './cors.js'
import {httpError, methodNotAllowed, notFound, toHttpError, type Log} from './errors.js'
import type {PathTable} from './paths.js'
import {sendError, type Broken} from './reply.js'

/** What runs before any route, in this order (polka middleware). */
export type Guard = (req: Request, res: ServerResponse, next: () => void) => void

/**
 * An HTTP/1.1 request has exactly one Host header (RFC 9112, 3.2: a server answers 400 otherwise). Node's own check
 * (requireHostHeader, off) would answer a missing one with a bare 400 without the JSON error body.
 */
export function oneHost(broken: Broken): Guard {
  return (req, res, next) => {
    const hosts = req.rawHeaders.filter((h, i) => i % 2 === 0 && h.toLowerCase() === 'host').length
    if (hosts === 1 || req.httpVersion === '1.0') return next()
    sendError(res, httpError('bad_request', `an HTTP/1.1 request has one Host header; this one has ${hosts}`), broken)
  }
}

/** A CORS preflight carries no key (browsers never send custom headers in it): it is answered before the key check. */
export function preflight(corsOrigins: readonly string[], paths: PathTable): Guard {
  return (req, res, next) => {
    if (req.method !== 'OPTIONS') return next()
    const headers = preflightHeaders(corsOrigins, req, paths.methodsOn(req.path))
    if (!headers) return next()
    for (const [name, value] of Object.entries(headers)) res.setHeader(name, value)
    res.statusCode = 204
    res.end()
  }
}

/**
 * MOD_API_KEY: every request but those of public requests (`GET /health`, …, and HEAD on them) and of the
 * documentation's assets, found by name under /docs/; unknown paths included (they answer 401, not 404). The name of
 * the key a request came with goes into `owners`.
 */
export function keyCheck(keys: readonly NamedKey[], publicRequests: Set<string>, owners: WeakMap<IncomingMessage, string>, log: Log, broken: Broken): Guard {
  return (req, res, next) => {
    const docsAsset = (req.method === 'GET' || req.method === 'HEAD') && req.path.startsWith('/docs/')
    const checked = checkKey(keys, req, docsAsset || publicRequests.has(`${req.method} ${req.path}`))
    if ('refused' in checked) return sendError(res, toHttpError(checked.refused, log), broken)
    if (checked.owner !== undefined) owners.set(req, checked.owner)
    next()
  }
}

/**
 * A listed path answers its own methods only, also where a path template would match it too: GET /v1/jobs/video is
 * 405, not a request for a job whose id is "video".
 */
export function listedMethods(paths: PathTable, broken: Broken): Guard {
  return (req, res, next) => {
    const methods = paths.listed(req.path)
    if (!methods || methods.includes(req.method ?? '')) return next()
    sendError(res, methodNotAllowed(req.method ?? '', req.path, methods), broken)
  }
}

/**
 * Paths are exact: one that ends in a slash is 404 (naming the endpoint without it, where there is one), the
 * documentation's files under /docs/ aside. The router matched a route with or without the slash, while the rest
 * knows exact paths: GET /v1/moderate/ was 404 where /v1/moderate is 405, and /health/ answered, undocumented.
 */
export function exactPaths(paths: PathTable, broken: Broken): Guard {
  return (req, res, next) => {
    const {path} = req
    if (path.length < 2 || !path.endsWith('/') || path.startsWith('/docs/')) return next()
    const bare = path.replace(/\/+$/, '') || '/'
    sendError(res, notFound(path, paths.methodsOn(bare) === undefined ? undefined : bare), broken)
  }
}

/** `METHOD path` of every request that needs no key: the public operations, HEAD beside each GET. */
export function publicRequestsOf(operations: readonly {method: string; path: string; security?: []}[]): Set<string> {
  return new Set(
    operations.filter((r) => r.security !== undefined).flatMap((r) => (r.method === 'GET' ? [`GET ${r.path}`, `HEAD ${r.path}`] : [`${r.method} ${r.path}`])),
  )
}
