import type {IncomingMessage} from 'node:http'

/** Request headers a browser may send cross-origin (the key, JSON bodies, a tracing id). */
const ALLOWED_HEADERS = 'X-API-Key, Content-Type, X-Request-Id'
/**
 * Answer headers a page may read besides the safelisted ones: a job's place (Location) and the headers that tell a
 * client it has all of a job's results are part of the protocol, not details.
 */
const EXPOSED_HEADERS = 'X-Request-Id, Retry-After, WWW-Authenticate, Location, X-Mod-Job-Status, X-Mod-Items-Total, X-Mod-Policy-Sha256, Server-Timing'
/** How long a browser may reuse a preflight answer. */
const PREFLIGHT_MAX_AGE_S = 600

/** The Origin header when `origins` (MOD_CORS_ORIGINS) allows it; undefined without CORS or for another origin. */
function allowedOrigin(origins: readonly string[], req: IncomingMessage): string | undefined {
  const origin = req.headers.origin
  if (origin === undefined || origins.length === 0) return undefined
  return origins[0] === '*' || origins.includes(origin) ? origin : undefined
}

/**
 * CORS headers of any answer (none without MOD_CORS_ORIGINS). With listed origins, whether an answer allows its origin
 * depends on the Origin header, so every answer carries `Vary: Origin`, allowed or not, with an Origin or without:
 * else a cache (a CDN, the browser's) could give an answer stored for one origin, or for none, to another. With `*`
 * the headers are the same whatever the Origin, so caches keep one copy; only OPTIONS still depends on it (a preflight
 * is 204, the same request without an Origin is not).
 */
export function corsHeaders(origins: readonly string[], req: IncomingMessage): Record<string, string> {
  if (origins.length === 0) return {}
  if (origins[0] === '*') {
    return {'Access-Control-Allow-Origin': '*', 'Access-Control-Expose-Headers': EXPOSED_HEADERS, ...(req.method === 'OPTIONS' ? {Vary: 'Origin'} : {})}
  }
  const origin = allowedOrigin(origins, req)
  return {Vary: 'Origin', ...(origin === undefined ? {} : {'Access-Control-Allow-Origin': origin, 'Access-Control-Expose-Headers': EXPOSED_HEADERS})}
}

/**
 * The headers of a 204 answering a CORS preflight (OPTIONS with Access-Control-Request-Method from an allowed
 * origin) on a path served with `methods`; undefined when the request is no such preflight.
 */
export function preflightHeaders(origins: readonly string[], req: IncomingMessage, methods: readonly string[] | undefined): Record<string, string> | undefined {
  if (req.method !== 'OPTIONS' || methods === undefined || req.headers['access-control-request-method'] === undefined) return undefined
  if (allowedOrigin(origins, req) === undefined) return undefined
  return {
    'Access-Control-Allow-Methods': methods.join(', '),
    'Access-Control-Allow-Headers': ALLOWED_HEADERS,
    'Access-Control-Max-Age': String(PREFLIGHT_MAX_AGE_S),
  }
}
