import type {IncomingMessage, ServerResponse} from 'node:http'

import type {Polka} from 'polka'

import type {Request, RouteContext} from './context.js'
import {docsRoutes} from './docs.js'
import {httpError, notFound} from './errors.js'
import {openapiHandler, type OpenApiDocument} from './openapi.js'
import type {PathTable} from './paths.js'
import {replyTo, sendError, type Broken} from './reply.js'
import type {AnyRoute} from './route.js'
import {inputOf} from './route-input.js'

/** Answers what was thrown (app.ts), knowing the route where a route's handler threw it. */
export type RouteFailure = (req: Request, res: ServerResponse, e: unknown, route?: AnyRoute) => void

/**
 * Registers each route at its path, and HEAD beside GET (it answers what GET would, without the body: Node drops
 * it): its input read from its declaration (route-input.ts), its answers bound to its declared responses (reply.ts).
 */
export function mountRoutes(app: Polka, paths: PathTable, routes: readonly AnyRoute[], ctx: RouteContext, fail: RouteFailure, answers: {broken: Broken; checked: boolean}): void {
  const {broken, checked} = answers
  for (const route of routes) {
    const input = inputOf(route)
    const where = `${route.method} ${route.path}`
    const run = async (req: Request, res: ServerResponse) => route.handler(ctx, req, replyTo(res, route.responses, where, broken, checked), input(ctx, req))
    const handle = (req: Request, res: ServerResponse) => {
      run(req, res).catch((e: unknown) => fail(req, res, e, route))
    }
    // The document writes path parameters as {id}, polka as :id.
    const pattern = route.path.replace(/\{(\w+)\}/g, ':$1')
    paths.allow(route.method, route.path)
    app.add(route.method, pattern, handle)
    if (route.method === 'GET') {
      paths.allow('HEAD', route.path)
      app.head(pattern, handle)
    }
  }
}

/** The OpenAPI document at /openapi.json, the /docs page and its assets under /docs/ (docs.ts); GET and HEAD each. */
export function mountDocumentation(app: Polka, paths: PathTable, doc: OpenApiDocument, broken: Broken): void {
  const openapi = openapiHandler(doc)
  paths.allow('GET', '/openapi.json')
  paths.allow('HEAD', '/openapi.json')
  app.get('/openapi.json', openapi)
  app.head('/openapi.json', openapi)
  const answers = {
    notFound: (req: IncomingMessage, res: ServerResponse) => sendError(res, notFound((req as Request).path), broken),
    failed: (res: ServerResponse) => sendError(res, httpError('internal', 'internal error'), broken),
  }
  for (const route of docsRoutes(answers)) {
    if (!route.path.endsWith('*')) {
      paths.allow('GET', route.path)
      paths.allow('HEAD', route.path)
    }
    app.get(route.path, route.handler)
    app.head(route.path, route.handler)
  }
}
