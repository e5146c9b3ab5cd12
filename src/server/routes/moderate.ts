import type {ItemResult} from '../../lib/engine.js'
import type {Handler} from '../context.js'
import {sendJson} from '../reply.js'
import {receiveImages} from '../upload.js'
import {moderate, requireMultipart} from './pipeline.js'

/** POST /v1/moderate: one image in the multipart field `file` → one result. */
export const moderateFile: Handler = async (ctx, req, res) => {
  requireMultipart(req, 'file')
  const {maxBytes} = ctx.settings.limits
  const result = await moderate(
    ctx,
    res,
    async () => (await receiveImages(req, {field: 'file', maxFiles: 1, maxBytes}))[0],
    (image, scheduler) => ctx.engine.moderateImage(image.data, image.filename, {scheduler}),
  )
  sendJson(res, 200, result)
}

/**
 * POST /v1/moderate/batch: the field `files` repeated, up to MOD_MAX_BATCH → `{results}` in upload
 * order. A file that cannot be read (empty, not an image, too large) is an error entry; the request
 * still succeeds.
 */
export const moderateBatch: Handler = async (ctx, req, res) => {
  requireMultipart(req, 'files')
  const {maxBytes, maxBatch} = ctx.settings.limits
  const results = await moderate(
    ctx,
    res,
    () => receiveImages(req, {field: 'files', maxFiles: maxBatch, maxBytes}),
    async (images, scheduler) => {
      const out: ItemResult[] = []
      const inputs = images.map((image) => ({source: image.filename, read: async () => image.data}))
      for await (const item of ctx.engine.moderateMany(inputs, {scheduler})) out.push(item)
      return out
    },
  )
  sendJson(res, 200, {results})
}
