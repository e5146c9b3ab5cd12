import type {ItemResult} from '../../lib/engine.js'
import {BatchResult, ModerationResult} from '../../lib/schemas.js'
import type {Request, RouteContext} from '../context.js'
import {EXAMPLE_BATCH, EXAMPLE_RESULT} from '../examples.js'
import {paceOf} from '../body-pace.js'
import {clientEntry} from '../errors.js'
import {declareRoute} from '../route.js'
import {formatSizeExact} from '../../lib/sizes.js'
import {receiveImages} from '../upload.js'
import {moderate} from './pipeline.js'
import {POLICY_HEADER, policyHeader} from '../policy-digest.js'
import {plural} from '../../lib/plural.js'
import type {ModerationResult as Result} from '../../lib/types.js'
import type {ServerResponse} from 'node:http'

/** POST /v1/moderate: one image in the multipart field `file` → one result. */
async function moderateFile(ctx: RouteContext, req: Request, res: ServerResponse): Promise<Result> {
  const {maxBytes} = ctx.settings.limits
  const pace = paceOf(ctx.settings.limits)
  const result = await moderate(
    ctx,
    req,
    res,
    async (upload) => (await receiveImages(req, {field: 'file', maxFiles: 1, maxBytes, ...pace, hold: upload, place: upload}))[0],
    (image, scheduler, _signal, steps) => ctx.engine.moderateImage(image.data, image.filename, {scheduler, steps}),
  )
  ctx.verdict(res, result)
  return result
}

/**
 * POST /v1/moderate/batch: the field `files` repeated, up to MOD_MAX_BATCH → `{results}` in upload
 * order. A file that cannot be read (empty, not an image, too large) is an error entry; the request
 * still succeeds.
 */
async function moderateBatch(ctx: RouteContext, req: Request, res: ServerResponse): Promise<ItemResult[]> {
  const {maxBytes, maxBatch, maxBatchBytes} = ctx.settings.limits
  const pace = paceOf(ctx.settings.limits)
  const results = await moderate(
    ctx,
    req,
    res,
    (upload) => receiveImages(req, {field: 'files', maxFiles: maxBatch, maxBytes, maxTotalBytes: maxBatchBytes, ...pace, hold: upload, place: upload}),
    async (images, scheduler, _signal, steps) => {
      const out: ItemResult[] = []
      // A file refused as it streamed (over MOD_MAX_BYTES) is an error entry in its place, as an unreadable one is.
      const inputs = images.map((image) => ({
        source: image.filename,
        read: async () => {
          if (image.refused) throw image.refused
          return image.data
        },
      }))
      for await (const item of ctx.engine.moderateMany(inputs, {scheduler, steps})) out.push(clientEntry(item))
      return out
    },
  )
  for (const item of results) if (!('error' in item)) ctx.verdict(res, item)
  return results
}

const binary = {type: 'string', format: 'binary'}

export const moderateFileRoute = declareRoute({
  method: 'POST',
  path: '/v1/moderate',
  operationId: 'moderateImage',
  summary: 'Moderate one uploaded image',
  description: ({limits}) => `Multipart form with one image in the field \`file\`, of at most ${formatSizeExact(limits.maxBytes)}.`,
  tags: ['moderation'],
  body: {
    media: 'multipart/form-data',
    field: 'file',
    description: ({limits}) => `One image of at most ${formatSizeExact(limits.maxBytes)}.`,
    schema: () => ({
      type: 'object',
      required: ['file'],
      // minLength: an empty file is refused (415), where a batch reports it as an entry instead.
      properties: {file: {...binary, minLength: 1, description: 'The image; its file name (at most 1 024 characters) becomes `source`.'}},
    }),
  },
  responses: {200: {description: 'The moderation result.', schema: ModerationResult, headers: POLICY_HEADER, example: EXAMPLE_RESULT}},
  errors: ['payload_too_large', 'unsupported_media', 'internal', 'too_many_uploads', 'overloaded', 'model_unavailable'],
  handler: async (ctx, req, reply) => reply.send(200, await moderateFile(ctx, req, reply.raw), policyHeader(ctx)),
})

export const moderateBatchRoute = declareRoute({
  method: 'POST',
  path: '/v1/moderate/batch',
  operationId: 'moderateBatch',
  summary: 'Moderate several uploaded images',
  description: ({limits}) =>
    `Multipart form with the field \`files\` repeated once per image (at most ${limits.maxBatch}, each at ` +
    `most ${formatSizeExact(limits.maxBytes)}, together at most ${formatSizeExact(limits.maxBatchBytes)}). Results come in upload order; a file that cannot be read ` +
    'yields an error entry in its place and the request still succeeds.',
  tags: ['moderation'],
  body: {
    media: 'multipart/form-data',
    field: 'files',
    description: ({limits}) => `1 to ${plural(limits.maxBatch, 'image')}, together at most ${formatSizeExact(limits.maxBatchBytes)}.`,
    schema: (limits) => ({
      type: 'object',
      required: ['files'],
      properties: {files: {type: 'array', items: binary, minItems: 1, maxItems: limits.maxBatch}},
    }),
  },
  responses: {200: {description: 'One entry per file, in upload order.', schema: BatchResult, headers: POLICY_HEADER, example: EXAMPLE_BATCH}},
  errors: ['too_many_files', 'payload_too_large', 'internal', 'too_many_uploads', 'overloaded', 'model_unavailable'],
  handler: async (ctx, req, reply) => reply.send(200, {results: await moderateBatch(ctx, req, reply.raw)}, policyHeader(ctx)),
})
