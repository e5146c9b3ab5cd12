import {sendJson} from '../reply.js'
import type {Handler} from '../context.js'

/** GET /v1/categories: the active labels (CONTRACTS §2); it reads no model weights, so it does not queue. */
export const categories: Handler = async (ctx, _req, res) => {
  sendJson(res, 200, await ctx.engine.categories())
}
