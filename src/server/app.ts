import {createServer, type IncomingMessage, type Server, type ServerResponse} from 'node:http'

import polka, {type Polka} from 'polka'

import type {ServerSettings} from '../lib/config/settings.js'
import type {Engine} from '../lib/engine.js'
import {ModError} from '../lib/errors.js'
import {fetchImageUrl, type FetchImageOptions} from '../lib/fetch/url.js'
import {checkKey, serverKeys} from './auth.js'
import {isJson, jsonBodyLimit} from './body.js'
import {paceOf} from './body-stream.js'
import {answerClientError} from './client-error.js'
import type {Request, RouteContext} from './context.js'
import {corsHeaders, preflightHeaders} from './cors.js'
import {docsRoutes} from './docs.js'
import {describe, methodNotAllowed, notFound, toHttpError, type Log} from './errors.js'
import {logTo, plainText, requestLog, type Logger} from './logger.js'
import {buildInfo, createServerMetrics, type ServerMetrics} from './metrics.js'
import {DOCUMENTATION, openapiDocument, openapiHandler} from './openapi.js'
import {createJobs} from './jobs/service.js'
import type {JobQueue} from './jobs/types.js'
import {createImageJobs} from './jobs/images/service.js'
import type {ImageJobQueue} from './jobs/images/types.js'
import {createGate, type Gate, type Upload} from './queue.js'
import {errorCodeOf, sendError} from './reply.js'
import {requestIdOf} from './request-id.js'
import type {AnyRoute} from './route.js'
import {ROUTES} from './routes/index.js'
import {processUploadDir, uploadsRoot} from './upload-dirs.js'
import {isMultipart} from './upload.js'
import {jsonBodyReader, pathReader, queryReader} from './validate.js'

export interface ServerOptions {
  /** Where internal errors are reported (never request headers); default the logger, else stderr. */
  log?: Log
  /** Receives one access line per request (info); without it no access lines are written. */
  logger?: Logger
  /** This process's metrics; default a fresh set. */
  metrics?: ServerMetrics
  /** What GET /metrics answers; default this process's metrics (a cluster worker asks the primary). */
  metricsText?: () => Promise<string>
  /**
   * Parent folder of the per-request folders that video uploads stream into (made when first needed); default this
   * process's folder under the OS temp folder (upload-dirs.ts), which the next server removes if this one is killed.
   */
  tmpDir?: string
  /** Test hooks of fetchImageUrl: the resolver, and where checked addresses are dialled. */
  fetch?: Pick<FetchImageOptions, 'resolve' | 'connect'>
  /** The job queue (closed with the server); default the in-process one (src/server/jobs/service.ts). */
  jobs?: JobQueue
  /** The image job queue (closed with the server); default as MOD_REDIS_URL selects (src/server/jobs/images/service.ts). */
  imageJobs?: ImageJobQueue
}

export interface ModServer {
  app: Polka
  /** Not listening yet: the caller listens (tests on port 0, `mod serve` on --host/--port). */
  server: Server
  gate: Gate
  /** From now on /ready answers 503; requests, new connections included, are still served. */
  drain(): void
  jobs: JobQueue
  imageJobs: ImageJobQueue
  /**
   * Graceful stop: no new connections, idle kept-alive ones closed, requests in flight finish and their
   * connections close after the answer. Resolves once every connection is gone.
   */
  close(): Promise<void>
}

const noBody = (): Promise<never> => Promise.reject(new ModError('internal', 'this route declares no JSON body'))

/** Refuses a body of another media type than the route's, before anything is read. */
function mediaCheck(body: AnyRoute['body'], upload: AnyRoute['upload']): (req: Request) => void {
  if (body?.media === 'application/json' && upload) {
    return (req) => {
      if (!isJson(req) && !isMultipart(req)) {
        throw new ModError('unsupported_media', `send the request body as application/json, or as multipart/form-data with the files in the field "${upload.field}"`)
      }
    }
  }
  if (body?.media === 'application/json') {
    return (req) => {
      if (!isJson(req)) throw new ModError('unsupported_media', 'send the request body as application/json')
    }
  }
  if (body?.media === 'multipart/form-data') {
    const message = `send the request as multipart/form-data with the file in the field "${body.field}"`
    return (req) => {
      if (!isMultipart(req)) throw new ModError('unsupported_media', message)
    }
  }
  return () => {}
}

/**
 * A handler's input from its route's declaration: the media type, the path parameters and the query are checked
 * (and the query typed) before anything is read; the JSON body, of at most what MOD_MAX_BYTES of base64 needs, is
 * read and validated when the handler asks for it.
 */
function inputOf(route: AnyRoute): (ctx: RouteContext, req: Request) => Parameters<AnyRoute['handler']>[3] {
  const checkMedia = mediaCheck(route.body, route.upload)
  const readParams = route.pathParams ? pathReader(route.pathParams) : () => ({})
  const readQuery = route.query ? queryReader(route.query) : () => ({})
  const readJson = route.body?.media === 'application/json' ? jsonBodyReader(route.body.schema) : undefined
  return (ctx, req) => {
    checkMedia(req)
    const params = readParams((req as Request & {params?: Record<string, string>}).params ?? {})
    const query = readQuery(new URL(req.url ?? '/', 'http://localhost').searchParams)
    const {limits} = ctx.settings
    const body = readJson ? (upload?: Upload) => readJson(req, {maxBytes: jsonBodyLimit(limits.maxBytes), ...paceOf(limits), hold: upload, place: upload}) : noBody
    return {query, params, body, multipart: route.upload !== undefined && isMultipart(req)}
  }
}

const stderrLog: Log = (line, _level, fields) => process.stderr.write(`${plainText(line, fields)}\n`)

/**
 * The REST API over one engine (fastify-cli's buildServer pattern): routes, API key, limits, queue and
 * JSON errors, on an http.Server that is not listening yet. `mod serve` adds listening, workers and
 * signals; tests listen on port 0 in-process.
 */
export function buildServer(engine: Engine, settings: ServerSettings, options: ServerOptions = {}): ModServer {
  const log = options.log ?? (options.logger ? logTo(options.logger) : stderrLog)
  const gate = createGate(settings.limits.queueLimit, settings.limits)
  const metrics = options.metrics ?? createServerMetrics()
  const {version} = buildInfo()
  metrics.watchQueue(() => gate.admitted)
  let draining = false
  const jobs = options.jobs ?? createJobs(engine, settings, log)
  const fetchImage = (url: string) =>
    fetchImageUrl(url, {...options.fetch, maxBytes: settings.limits.maxBytes, timeoutMs: settings.limits.urlTimeoutMs})
  const imageJobs = options.imageJobs ?? createImageJobs(engine, settings, log, fetchImage)
  const keys = serverKeys(settings)
  /** The name of the key each request came with (set by the key check below). */
  const owners = new WeakMap<IncomingMessage, string>()
  const ctx: RouteContext = {
    engine,
    settings,
    gate,
    jobs,
    imageJobs,
    tmpDir: options.tmpDir ?? processUploadDir(uploadsRoot()),
    log,
    fetchImage,
    metricsText: options.metricsText ?? (() => metrics.registry.metrics()),
    draining: () => draining,
    version,
    verdict: (result) => metrics.verdict(result),
    owner: (req) => owners.get(req),
  }
  const known = new Map<string, string[]>()
  const allow = (method: string, path: string) => known.set(path, [...(known.get(path) ?? []), method])
  /** The methods a listed path allows, path templates (`/v1/jobs/{id}`) included. */
  const methodsOn = (path: string) => {
    const template = templateOf(known, path)
    return template === undefined ? undefined : known.get(template)
  }

  /**
   * Anything a route throws → its answer. A client that has hung up gets none: what failed then is the work it
   * abandoned (an upload cut off, an aborted scoring), logged as the client's doing rather than as an error.
   */
  const fail = (req: Request, res: ServerResponse, e: unknown): void => {
    const rlog = requestLog(log, res)
    if (res.destroyed && !res.writableFinished) rlog('client closed the request', 'info', {method: req.method, path: req.path, reason: describe(e)})
    else sendError(res, toHttpError(e, rlog))
  }

  const app = polka({
    onError: (err: unknown, req: Request, res: ServerResponse) => fail(req, res, err),
    onNoMatch: (req: Request, res: ServerResponse) => {
      const methods = methodsOn(req.path) ?? (req.path.startsWith('/docs/') ? ['GET', 'HEAD'] : undefined)
      sendError(res, methods ? methodNotAllowed(req.method ?? '', req.path, methods) : notFound(req.path))
    },
  })

  // MOD_API_KEY: every request but those of public routes and of the documentation (and HEAD on them),
  // unknown paths included (they answer 401, not 404). The page's assets are found by name under /docs/.
  const publicRequests = new Set(
    [...ROUTES, ...DOCUMENTATION].filter((r) => r.security !== undefined).flatMap((r) =>
      r.method === 'GET' ? [`GET ${r.path}`, `HEAD ${r.path}`] : [`${r.method} ${r.path}`],
    ),
  )
  // A CORS preflight carries no key (browsers never send custom headers in it): it is answered before the key check.
  app.use((req: Request, res: ServerResponse, next: () => void) => {
    if (req.method !== 'OPTIONS') return next()
    const preflight = preflightHeaders(settings.corsOrigins, req, methodsOn(req.path))
    if (!preflight) return next()
    for (const [name, value] of Object.entries(preflight)) res.setHeader(name, value)
    res.statusCode = 204
    res.end()
  })

  app.use((req: Request, res: ServerResponse, next: () => void) => {
    const docsAsset = (req.method === 'GET' || req.method === 'HEAD') && req.path.startsWith('/docs/')
    const checked = checkKey(keys, req, docsAsset || publicRequests.has(`${req.method} ${req.path}`))
    if ('refused' in checked) return sendError(res, toHttpError(checked.refused, log))
    if (checked.owner !== undefined) owners.set(req, checked.owner)
    next()
  })

  // A listed path answers its own methods only, also where a path template would match it too: GET
  // /v1/jobs/video is 405, not a request for a job whose id is "video".
  app.use((req: Request, res: ServerResponse, next: () => void) => {
    const methods = known.get(req.path)
    if (!methods || methods.includes(req.method ?? '')) return next()
    sendError(res, methodNotAllowed(req.method ?? '', req.path, methods))
  })

  for (const route of ROUTES) {
    const input = inputOf(route)
    const run = async (req: Request, res: ServerResponse) => route.handler(ctx, req, res, input(ctx, req))
    const handle = (req: Request, res: ServerResponse) => {
      run(req, res).catch((e: unknown) => fail(req, res, e))
    }
    // The document writes path parameters as {id}, polka as :id.
    const pattern = route.path.replace(/\{(\w+)\}/g, ':$1')
    allow(route.method, route.path)
    app.add(route.method, pattern, handle)
    // HEAD answers what GET would, without the body (Node drops it).
    if (route.method === 'GET') {
      allow('HEAD', route.path)
      app.head(pattern, handle)
    }
  }

  // Mount point: the OpenAPI document (src/server/openapi.ts).
  const doc = openapiDocument({
    version,
    apiKey: keys.length > 0,
    allowUrls: settings.allowUrls,
    limits: settings.limits,
  })
  // The document and the docs answer HEAD as GET without the body (Node drops it), like the routes above.
  const openapi = openapiHandler(doc)
  allow('GET', '/openapi.json')
  allow('HEAD', '/openapi.json')
  app.get('/openapi.json', openapi)
  app.head('/openapi.json', openapi)

  // Mount point: the /docs page and its assets under /docs/ (src/server/docs.ts).
  for (const route of docsRoutes({notFound: (req, res) => sendError(res, notFound((req as Request).path))})) {
    if (!route.path.endsWith('*')) {
      allow('GET', route.path)
      allow('HEAD', route.path)
    }
    app.get(route.path, route.handler)
    app.head(route.path, route.handler)
  }

  const server = createServer()
  server.on('clientError', answerClientError)
  const open = new Set<ServerResponse>()
  let closing = false
  // A request's metric labels come from closed sets, so that what clients send cannot grow /metrics: the route
  // pattern (not the raw path) or `other`, and a method that route answers (or OPTIONS), else `other`.
  const routeOf = (path: string) => templateOf(known, path) ?? (path.startsWith('/docs/') ? '/docs/*' : 'other')
  const answers = (route: string, method: string) => (route === '/docs/*' ? ['GET', 'HEAD'] : (known.get(route) ?? [])).includes(method)
  const methodOf = (method = '', route: string) => (method === 'OPTIONS' || answers(route, method) ? method : 'other')
  server.on('request', (req, res: ServerResponse) => {
    const started = performance.now()
    const requestId = requestIdOf(req)
    res.setHeader('X-Request-Id', requestId)
    for (const [name, value] of Object.entries(corsHeaders(settings.corsOrigins, req))) res.setHeader(name, value)
    res.on('close', () => {
      const seconds = (performance.now() - started) / 1000
      const path = new URL(req.url ?? '/', 'http://localhost').pathname
      const route = routeOf(path)
      metrics.request(methodOf(req.method, route), route, res.statusCode, seconds)
      const code = errorCodeOf(res)
      if (code !== undefined) metrics.error(code)
      options.logger?.info(
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
    if (closing) res.setHeader('Connection', 'close')
    open.add(res)
    res.on('close', () => open.delete(res))
    app.handler(req as Parameters<Polka['handler']>[0], res)
  })

  const close = () =>
    new Promise<void>((resolve) => {
      closing = true
      draining = true
      for (const res of open) if (!res.headersSent) res.setHeader('Connection', 'close')
      server.close(() => resolve())
      server.closeIdleConnections()
    }).then(() => Promise.all([jobs.close(), imageJobs.close()]).then(() => {}))

  return {app, server, gate, jobs, imageJobs, drain: () => (draining = true), close}
}

/** The listed path (or path template, `/v1/jobs/{id}`) that `path` is, if any. */
function templateOf(known: Map<string, string[]>, path: string): string | undefined {
  if (known.has(path)) return path
  const parts = path.split('/')
  for (const template of known.keys()) {
    const t = template.split('/')
    if (t.length === parts.length && t.every((seg, i) => (/^\{\w+\}$/.test(seg) ? parts[i] !== '' : seg === parts[i]))) return template
  }
  return undefined
}
