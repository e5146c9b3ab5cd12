import type {Static} from '../../lib/typebox.js'

import {ModError} from '../../lib/errors.js'
import {ModerationResult} from '../../lib/schemas.js'
import {base64Image} from '../body.js'
import {EXAMPLE_PNG_BASE64, EXAMPLE_RESULT} from '../examples.js'
import type {Request, RouteContext} from '../context.js'
import type {FetchedImage} from '../../lib/fetch/url.js'
import type {Place} from '../upload-places.js'
import {declareRoute, type Input} from '../route.js'
import {ModerateJsonRequest} from '../schemas.js'
import {formatSizeExact} from '../../lib/sizes.js'
import {moderate} from './pipeline.js'
import {POLICY_HEADER, policyHeader} from '../policy-digest.js'
import type {ModerationResult as Result} from '../../lib/types.js'
import type {ServerResponse} from 'node:http'

/** `source` of a result from image_base64, which carries no file name. */
export const BASE64_SOURCE = 'image_base64'

/**
 * Fetches the image a URL names on the request's upload place, under the rules of a body being received: its pace is
 * watched (MOD_BODY_MIN_RATE) and its place may go to another network's request, which stops the fetch with the
 * reason; so does the client leaving (`signal`).
 */
async function downloadOnPlace(ctx: RouteContext, url: string, place: Place, signal: AbortSignal): Promise<FetchedImage> {
  const stopped = new AbortController()
  let reason: ModError | undefined
  const reading = place.read((e) => {
    reason = e
    stopped.abort()
  }, 'download')
  try {
    return await ctx.fetchImage(url, {signal: AbortSignal.any([signal, stopped.signal]), onBytes: (bytes) => reading.arrived(bytes)})
  } catch (e) {
    throw reason ?? e
  } finally {
    reading.end()
  }
}

/**
 * POST /v1/moderate/json: `{"image_base64": "..."}` (plain base64 or a data URI) or `{"url": "..."}`
 * (only with MOD_ALLOW_URLS=true; fetched by fetchImageUrl with MOD_MAX_BYTES and MOD_URL_TIMEOUT_MS).
 * The result's `source` is the URL as given, or "image_base64".
 */
async function moderateJson(ctx: RouteContext, req: Request, res: ServerResponse, input: Input<unknown, Static<typeof ModerateJsonRequest>>): Promise<Result> {
  const {maxBytes} = ctx.settings.limits
  const result = await moderate(
    ctx,
    req,
    res,
    async (upload, signal) => {
      // Validated: exactly one of the two is a non-empty string.
      const {image_base64: image, url} = await input.body(upload)
      if (typeof image === 'string') return {source: BASE64_SOURCE, data: base64Image(image, maxBytes)}
      if (!URL.canParse(url as string)) throw new ModError('bad_request', 'url is not valid: expected an absolute http(s) URL')
      if (!ctx.settings.allowUrls) {
        throw new ModError('url_fetch_disabled', 'fetching URLs is disabled on this server (MOD_ALLOW_URLS); send image_base64 instead')
      }
      // The download may be as large as MOD_MAX_BYTES: that much is held before it starts, the rest given back after.
      upload.take(maxBytes)
      const fetched = await downloadOnPlace(ctx, url as string, upload, signal)
      upload.give(maxBytes - fetched.data.length)
      return {source: url as string, data: fetched.data}
    },
    (image, scheduler, _signal, steps) => ctx.engine.moderateImage(image.data, image.source, {scheduler, steps}),
  )
  ctx.verdict(res, result)
  return result
}

export const moderateJsonRoute = declareRoute({
  method: 'POST',
  path: '/v1/moderate/json',
  operationId: 'moderateJson',
  summary: 'Moderate one image given as base64 or as a URL',
  description: ({allowUrls}) =>
    'A JSON object with exactly one of `image_base64` and `url` (both or neither is 400; `null` counts as ' +
    'absent). `url` is fetched under the rules in the introduction, and only when `MOD_ALLOW_URLS` is true ' +
    `(${allowUrls ? 'it is on this server' : 'it is not on this server: a `url` gets 403'}). The result's ` +
    '`source` is the URL as given, or `image_base64`.',
  tags: ['moderation'],
  body: {
    media: 'application/json',
    schema: ModerateJsonRequest,
    description: ({limits}) =>
      `Exactly one of \`image_base64\` (at most ${formatSizeExact(limits.maxBytes)} once decoded) and \`url\`.`,
    example: {image_base64: EXAMPLE_PNG_BASE64},
  },
  responses: {200: {description: 'The moderation result.', schema: ModerationResult, headers: POLICY_HEADER, example: EXAMPLE_RESULT}},
  errors: ['bad_request', 'url_fetch_disabled', 'payload_too_large', 'unsupported_media', 'url_blocked', 'internal', 'url_fetch_failed', 'too_many_uploads', 'overloaded', 'model_unavailable', 'url_fetch_timeout'],
  // What the body's check says of `{}` (validate.ts, "exactly one of").
  errorExamples: {bad_request: 'send exactly one of image_base64 and url'},
  handler: async (ctx, req, reply, input) => reply.send(200, await moderateJson(ctx, req, reply.raw, input), policyHeader(ctx)),
})
