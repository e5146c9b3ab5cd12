import {ModError} from '../../lib/errors.js'
import {isJson, jsonBodyLimit, parseJsonRequest, readBody} from '../body.js'
import type {Handler} from '../context.js'
import {sendJson} from '../reply.js'
import {moderate} from './pipeline.js'

/** `source` of a result from image_base64, which carries no file name. */
export const BASE64_SOURCE = 'image_base64'

/**
 * POST /v1/moderate/json: `{"image_base64": "..."}` (plain base64 or a data URI) or `{"url": "..."}`
 * (only with MOD_ALLOW_URLS=true; fetched by fetchImageUrl with MOD_MAX_BYTES and MOD_URL_TIMEOUT_MS).
 * The result's `source` is the URL as given, or "image_base64".
 */
export const moderateJson: Handler = async (ctx, req, res) => {
  if (!isJson(req)) throw new ModError('bad_request', 'send the request body as application/json')
  const {maxBytes} = ctx.settings.limits
  const result = await moderate(
    ctx,
    res,
    async () => {
      const body = parseJsonRequest(await readBody(req, jsonBodyLimit(maxBytes)), maxBytes)
      if (body.kind === 'base64') return {source: BASE64_SOURCE, data: body.data}
      if (!ctx.settings.allowUrls) {
        throw new ModError('url_fetch_disabled', 'fetching URLs is disabled on this server (MOD_ALLOW_URLS); send image_base64 instead')
      }
      const fetched = await ctx.fetchImage(body.url)
      return {source: body.url, data: fetched.data}
    },
    (image, scheduler) => ctx.engine.moderateImage(image.data, image.source, {scheduler}),
  )
  sendJson(res, 200, result)
}
