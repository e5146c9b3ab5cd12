import {createServer, type Server, type ServerResponse} from 'node:http'
import {createRequire} from 'node:module'
import {tmpdir} from 'node:os'

import polka, {type Polka} from 'polka'

import type {Settings} from '../lib/config/settings.js'
import type {Engine} from '../lib/engine.js'
import {ModError} from '../lib/errors.js'
import {fetchImageUrl, type FetchImageOptions} from '../lib/fetch/url.js'
import {checkKey} from './auth.js'
import {isJson, jsonBodyLimit} from './body.js'
import {answerClientError} from './client-error.js'
import type {Request, RouteContext} from './context.js'
import {docsRoutes} from './docs.js'
import {methodNotAllowed, notFound, toHttpError, type Log} from './errors.js'
import {openapiDocument, openapiHandler} from './openapi.js'
import {createGate, type Gate, type Hold} from './queue.js'
import {sendError} from './reply.js'
import type {AnyRoute} from './route.js'
import {ROUTES} from './routes/index.js'
import {jsonBodyReader, queryReader} from './validate.js'

export interface ServerOptions {
  /** Where internal errors are reported (never request headers); default stderr. */
  log?: Log
  /** Parent folder of the per-request folders that video uploads stream into; default os.tmpdir(). */
  tmpDir?: string
  /** Test hooks of fetchImageUrl: the resolver, and where checked addresses are dialled. */
  fetch?: Pick<FetchImageOptions, 'resolve' | 'connect'>
}

export interface ModServer {
  app: Polka
  /** Not listening yet: the caller listens (tests on port 0, `mod serve` on --host/--port). */
  server: Server
  gate: Gate
  /**
   * Graceful stop: no new connections, idle kept-alive ones closed, requests in flight finish and their
   * connections close after the answer. Resolves once every connection is gone.
   */
  close(): Promise<void>
}

const noBody = (): Promise<never> => Promise.reject(new ModError('internal', 'this route declares no JSON body'))

/**
 * A handler's input from its route's declaration: the content type and the query are checked (and the
 * query typed) before anything is read; the JSON body, of at most what MOD_MAX_BYTES of base64 needs, is
 * read and validated when the handler asks for it.
 */
function inputOf(route: AnyRoute): (ctx: RouteContext, req: Request) => Parameters<AnyRoute['handler']>[3] {
  const readQuery = route.query ? queryReader(route.query) : () => ({})
  const readJson = route.body?.media === 'application/json' ? jsonBodyReader(route.body.schema) : undefined
  return (ctx, req) => {
    if (readJson && !isJson(req)) throw new ModError('bad_request', 'send the request body as application/json')
    const query = readQuery(new URL(req.url ?? '/', 'http://localhost').searchParams)
    const {maxBytes, bodyTimeoutMs: idleMs} = ctx.settings.limits
    const body = readJson ? (hold?: Hold) => readJson(req, {maxBytes: jsonBodyLimit(maxBytes), idleMs, hold}) : noBody
    return {query, body}
  }
}

const stderrLog: Log = (line) => process.stderr.write(`${line}\n`)

function packageVersion(): string {
  // The same relative path from src/server (tsx) and from dist/server (built).
  return (createRequire(import.meta.url)('../../package.json') as {version: string}).version
}

/**
 * The REST API over one engine (fastify-cli's buildServer pattern): routes, API key, limits, queue and
 * JSON errors, on an http.Server that is not listening yet. `mod serve` adds listening, workers and
 * signals; tests listen on port 0 in-process.
 */
export function buildServer(engine: Engine, settings: Settings, options: ServerOptions = {}): ModServer {
  const log = options.log ?? stderrLog
  const gate = createGate(settings.limits.queueLimit, settings.limits)
  const ctx: RouteContext = {
    engine,
    settings,
    gate,
    tmpDir: options.tmpDir ?? tmpdir(),
    log,
    fetchImage: (url) =>
      fetchImageUrl(url, {...options.fetch, maxBytes: settings.limits.maxBytes, timeoutMs: settings.limits.urlTimeoutMs}),
  }
  const known = new Map<string, string[]>()
  const allow = (method: string, path: string) => known.set(path, [...(known.get(path) ?? []), method])

  const app = polka({
    onError: (err: unknown, _req: unknown, res: ServerResponse) => sendError(res, toHttpError(err, log)),
    onNoMatch: (req: Request, res: ServerResponse) => {
      const methods = known.get(req.path) ?? (req.path.startsWith('/docs/') ? ['GET', 'HEAD'] : undefined)
      sendError(res, methods ? methodNotAllowed(req.method ?? '', req.path, methods) : notFound(req.path))
    },
  })

  // MOD_API_KEY: every request but those of public routes (and HEAD on them), unknown paths included
  // (they answer 401, not 404).
  const publicRequests = new Set(
    ROUTES.filter((r) => r.security !== undefined).flatMap((r) =>
      r.method === 'GET' ? [`GET ${r.path}`, `HEAD ${r.path}`] : [`${r.method} ${r.path}`],
    ),
  )
  app.use((req: Request, res: ServerResponse, next: () => void) => {
    const refused = checkKey(settings.apiKey, req, req.path, publicRequests)
    if (refused) sendError(res, toHttpError(refused, log))
    else next()
  })

  for (const route of ROUTES) {
    const input = inputOf(route)
    const run = async (req: Request, res: ServerResponse) => route.handler(ctx, req, res, input(ctx, req))
    const handle = (req: Request, res: ServerResponse) => {
      run(req, res).catch((e: unknown) => sendError(res, toHttpError(e, log)))
    }
    allow(route.method, route.path)
    app.add(route.method, route.path, handle)
    // HEAD answers what GET would, without the body (Node drops it).
    if (route.method === 'GET') {
      allow('HEAD', route.path)
      app.head(route.path, handle)
    }
  }

  // Mount point: the OpenAPI document (src/server/openapi.ts).
  const doc = openapiDocument({
    version: packageVersion(),
    apiKey: settings.apiKey !== undefined,
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
  server.on('request', (req, res: ServerResponse) => {
    if (closing) res.setHeader('Connection', 'close')
    open.add(res)
    res.on('close', () => open.delete(res))
    app.handler(req as Parameters<Polka['handler']>[0], res)
  })

  const close = () =>
    new Promise<void>((resolve) => {
      closing = true
      for (const res of open) if (!res.headersSent) res.setHeader('Connection', 'close')
      server.close(() => resolve())
      server.closeIdleConnections()
    })

  return {app, server, gate, close}
}
