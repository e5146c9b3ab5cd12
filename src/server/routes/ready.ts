import {coverageOf} from '../../lib/signals/listing.js'
import {notReady} from '../errors.js'
import {EXAMPLE_READY} from '../examples.js'
import {declareRoute} from '../route.js'
import {Ready} from '../schemas.js'

/**
 * GET /ready: whether a load balancer should send traffic here. Not while the model is not loaded (with
 * MOD_PRELOAD=false the first call starts loading it), nor once the server is shutting down.
 */
export const readyRoute = declareRoute({
  method: 'GET',
  path: '/ready',
  operationId: 'getReady',
  summary: 'Readiness for load balancers',
  description:
    'Always public (never needs `X-API-Key`). 200 once the model is loaded; 503 `not_ready` with `Retry-After` ' +
    'before (with `MOD_PRELOAD=false` the first call starts loading it; after a failed attempt, whose cause goes to the ' +
    'server log, the message says so and the call tries again) and from the moment the server starts ' +
    'shutting down (for `MOD_DRAIN_DELAY_MS` before the port closes). `GET /health` stays the liveness check. ' +
    'A server that scores only some categories (e.g. no CLIP model installed) is still ready; `coverage` says how ' +
    'many of the policy\'s categories results score and names the others.',
  tags: ['service'],
  security: [],
  responses: {200: {description: 'The server takes traffic.', schema: Ready, example: EXAMPLE_READY}},
  errors: ['not_ready'],
  handler: async (ctx, _req, reply) => {
    if (ctx.draining()) return reply.error(notReady('the server is shutting down'))
    if (!ctx.engine.isLoaded()) {
      // Each probe tries again; the cause of a failure goes to the log, not to this public answer (it names paths).
      const failed = ctx.model.failed()
      ctx.model.ensure(ctx.log).catch(() => {})
      return reply.error(notReady(failed ? 'the model could not be loaded (the server log says why); trying again' : 'the model is loading'))
    }
    reply.send(200, {status: 'ready', coverage: coverageOf(await ctx.engine.categoryStates())})
  },
})
