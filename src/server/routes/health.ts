import {sendJson} from '../reply.js'
import type {Handler} from '../context.js'

/** GET /health: liveness for load balancers, and which signals are loaded; never needs a key and never waits in the queue. */
export const health: Handler = async (ctx, _req, res) => {
  sendJson(res, 200, {status: 'ok', model_loaded: ctx.engine.isLoaded(), signals: ctx.engine.signals()})
}
