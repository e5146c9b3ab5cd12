import type {Handler} from '../context.js'
import {EXAMPLE_HEALTH} from '../examples.js'
import {sendJson} from '../reply.js'
import {declareRoute} from '../route.js'
import {Health} from '../schemas.js'

/** GET /health: liveness for load balancers, and which signals are loaded; never needs a key and never waits in the queue. */
export const health: Handler = async (ctx, _req, res) => {
  sendJson(res, 200, {status: 'ok', model_loaded: ctx.engine.isLoaded(), signals: ctx.engine.signals()})
}

/** Public: load balancers and container health checks call it without the key. */
export const healthRoute = declareRoute({
  method: 'GET',
  path: '/health',
  operationId: 'getHealth',
  summary: 'Health status',
  description: 'Always public (never needs `X-API-Key`). `model_loaded` is false until the model is in memory.',
  tags: ['service'],
  security: [],
  responses: {200: {description: 'The server is up.', schema: Health, example: EXAMPLE_HEALTH}},
  errors: [],
  handler: health,
})
