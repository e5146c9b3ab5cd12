import {createServer, type IncomingMessage, type Server, type ServerResponse} from 'node:http'
import type {Duplex} from 'node:stream'

import polka, {type Polka} from 'polka'

import type {ServerSettings} from '../lib/config/settings.js'
import type {Engine} from '../lib/engine.js'
import {fetchImageUrl, type FetchImageOptions, type ImageFetcher} from '../lib/fetch/url.js'
import {recordSocketAnswer, watchAccess, type SocketAnswer} from './access.js'
import {serverKeys} from './auth.js'
import {paceOf, paceUnreadRest} from './body-pace.js'
import {afterSocketAnswer, answerClientError, answerConnect, HEAD_TIMEOUT_MS, trackAnswer} from './client-error.js'
import type {Request, RouteContext} from './context.js'
import {holdContinue} from './continue.js'
import {describe, EXPECTATION_FAILED, httpError, methodNotAllowed, notFound, toHttpError, type HttpErrorCode, type Log} from './errors.js'
import {exactPaths, keyCheck, listedMethods, oneHost, preflight, publicRequestsOf} from './guards.js'
import {logTo, plainText, requestLog, type Logger} from './logger.js'
import {buildInfo, createServerMetrics, type ServerMetrics} from './metrics.js'
import {modelLoad} from './model-load.js'
import {mountDocumentation, mountRoutes, type RouteFailure} from './mount.js'
import {DOCUMENTATION, openapiDocument} from './openapi.js'
import {createJobs} from './jobs/service.js'
import type {JobQueue} from './jobs/types.js'
import {createImageJobs} from './jobs/images/service.js'
import {answersInFlight, type InFlight} from './in-flight.js'
import type {ImageJobQueue} from './jobs/images/types.js'
import {createPathTable, type PathTable} from './paths.js'
import {policyDigest} from './policy-digest.js'
import {createGate, type Gate} from './queue.js'
import {BrokenAnswer, sendError, type Broken} from './reply.js'
import {errorsOf, type AnyRoute} from './route.js'
import {originForm} from './request-target.js'
import {ROUTES} from './routes/index.js'
import {processUploadDir, uploadsRoot} from './upload-dirs.js'

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
  /**
   * Told about every answer that breaks its declared schema, besides its log line (an error) and, for a success
   * body, the 500 `internal` the client gets instead: the test harness fails the test on it.
   */
  brokenAnswer?: Broken
  /**
   * False: success bodies are sent unchecked. Only for an engine whose answers the schemas cannot describe: a test
   * that adds a signal of its own to the registry's list, which the result schemas are built from. Default true.
   */
  checkAnswers?: boolean
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
  const fetchImage: ImageFetcher = (url, how = {}) =>
    fetchImageUrl(url, {...options.fetch, ...how, maxBytes: settings.limits.maxBytes, timeoutMs: settings.limits.urlTimeoutMs})
  const imageJobs = options.imageJobs ?? createImageJobs(engine, settings, log, fetchImage)
  const keys = serverKeys(settings)
  // The policy's digest reads its hash lists' files: once, here, before the server answers anything.
  policyDigest(engine.policy)
  /** The name of the key each request came with (set by the key check). */
  const owners = new WeakMap<IncomingMessage, string>()
  const ctx: RouteContext = {
    engine,
    model: modelLoad(engine),
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
    verdict: (res, result) => {
      if (!res.destroyed) metrics.verdict(result)
    },
    owner: (req) => owners.get(req),
  }
  const broken: Broken = (problem) => {
    log(problem, 'error')
    options.brokenAnswer?.(problem)
  }
  const paths = createPathTable()
  const fail = failureAnswer(log, broken, options.brokenAnswer)
  const app = polka({
    onError: (err: unknown, req: Request, res: ServerResponse) => fail(req, res, err),
    onNoMatch: (req: Request, res: ServerResponse) => sendError(res, noMatch(paths, req), broken),
  })
  app.use(oneHost(broken))
  app.use(preflight(settings.corsOrigins, paths))
  app.use(keyCheck(keys, publicRequestsOf([...ROUTES, ...DOCUMENTATION]), owners, log, broken))
  app.use(exactPaths(paths, broken))
  app.use(listedMethods(paths, broken))
  mountRoutes(app, paths, ROUTES, ctx, fail, {broken, checked: options.checkAnswers ?? true})
  const doc = openapiDocument({version, apiKey: keys.length > 0, allowUrls: settings.allowUrls, limits: settings.limits})
  mountDocumentation(app, paths, doc, broken)

  // The Host header is checked by oneHost, which answers with the JSON error body.
  // No clock for a whole request (Node's cuts any request at 5 minutes, a large video at a steady pace included): a
  // body is held to MOD_BODY_TIMEOUT_MS and MOD_BODY_MIN_RATE as it arrives, read or not (body-pace.ts), and the head
  // to HEAD_TIMEOUT_MS (Node's default, which it turns off with the request clock unless given).
  const server = createServer({requireHostHeader: false, requestTimeout: 0, headersTimeout: HEAD_TIMEOUT_MS, keepAliveTimeout: settings.keepAliveMs})
  const recordSocket = (answer: SocketAnswer) => recordSocketAnswer({metrics, logger: options.logger}, answer)
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => answerClientError(err, socket, recordSocket))
  server.on('connect', (req: IncomingMessage, socket: Duplex) => answerConnect(req, socket, recordSocket))
  const inFlight = answersInFlight()
  const pace = paceOf(settings.limits)
  const arrive = (req: IncomingMessage, res: ServerResponse) => {
    req.url = originForm(req.url ?? '/')
    watchAccess(req, res, {corsOrigins: settings.corsOrigins, metrics, paths, logger: options.logger})
    inFlight.track(res)
    trackAnswer(res)
    paceUnreadRest(res, pace)
  }
  server.on('request', (req, res: ServerResponse) => {
    if (afterSocketAnswer(req)) return
    arrive(req, res)
    app.handler(req as Parameters<Polka['handler']>[0], res)
  })
  // 100 Continue waits until a route reads the body (continue.ts), rather than going out before any check.
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
    holdContinue(req, res)
    server.emit('request', req, res)
  })
  // Node would answer a bare 417 itself, without the JSON body or X-Request-Id.
  server.on('checkExpectation', (req, res: ServerResponse) => {
    if (afterSocketAnswer(req)) return
    arrive(req, res)
    sendError(res, httpError('expectation_failed', EXPECTATION_FAILED), broken)
  })
  const {drain, close} = stopper(server, inFlight, [jobs, imageJobs], () => (draining = true))
  return {app, server, gate, jobs, imageJobs, drain, close}
}

/**
 * The two steps of a stop: `drain` (/ready fails) and `close` (no new connection, the answers in flight finish,
 * then the queues close). From the first of them, an in-process queue takes no job: it would be lost with the process.
 */
function stopper(server: Server, inFlight: InFlight, queues: (JobQueue | ImageJobQueue)[], onDrain: () => void): Pick<ModServer, 'drain' | 'close'> {
  const drain = () => {
    onDrain()
    for (const queue of queues) queue.stopping()
  }
  const close = () =>
    new Promise<void>((resolve) => {
      inFlight.closeAfterAnswers()
      drain()
      server.close(() => resolve())
      server.closeIdleConnections()
    }).then(() => Promise.all(queues.map((queue) => queue.close())).then(() => {}))
  return {drain, close}
}

/** A path no route matched: 405 where the path is listed (or under /docs/), else 404. */
function noMatch(paths: PathTable, req: Request) {
  const methods = paths.methodsOn(req.path) ?? (req.path.startsWith('/docs/') ? ['GET', 'HEAD'] : undefined)
  return methods ? methodNotAllowed(req.method ?? '', req.path, methods) : notFound(req.path)
}

/**
 * Anything a route throws → its answer. A client that has hung up gets none: what failed then is the work it
 * abandoned (an upload cut off, an aborted scoring), logged as the client's doing rather than as an error. An
 * error code the route does not declare breaks its declared answers like a body that breaks its schema.
 */
function failureAnswer(log: Log, broken: Broken, brokenAnswer: Broken | undefined): RouteFailure {
  const declared = new WeakMap<AnyRoute, Set<HttpErrorCode>>()
  const declaredBy = (route: AnyRoute) => declared.get(route) ?? declared.set(route, new Set(errorsOf(route))).get(route)!
  return (req, res, e, route) => {
    const rlog = requestLog(log, res)
    if (res.destroyed && !res.writableFinished) return rlog('client closed the request', 'info', {method: req.method, path: req.path, reason: describe(e)})
    if (e instanceof BrokenAnswer) brokenAnswer?.(e.message)
    const answer = toHttpError(e, rlog)
    // An answer already under way (an image job's results when Redis fails mid-read) can only be cut off: ended, or
    // left open, its client would take the part sent for the whole, or wait for the rest for ever.
    if (res.headersSent) return void res.destroy()
    if (route && !declaredBy(route).has(answer.code)) broken(`${route.method} ${route.path} ${answer.status}: the error ${answer.code} is not among the route's declared errors`)
    sendError(res, answer, broken)
  }
}
