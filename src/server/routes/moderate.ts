import {ModError} from '../../lib/errors.js'
import type {ImageInput, ItemResult} from '../../lib/engine.js'
import type {Handler} from '../context.js'
import {sendJson} from '../reply.js'
import {receiveImages, type UploadedImage} from '../upload.js'
import {asReceived, emptyUpload, moderate, requireMultipart} from './pipeline.js'

/** POST /v1/moderate: one image in the multipart field `file` → one result. */
export const moderateFile: Handler = async (ctx, req, res) => {
  requireMultipart(req, 'file')
  const {maxBytes} = ctx.settings.limits
  const result = await moderate(
    ctx,
    res,
    async () => {
      const [image] = await receiveImages(req, {field: 'file', maxFiles: 1, maxBytes})
      if (image.data.length === 0) throw emptyUpload(image.filename)
      return image
    },
    async (image) => ({source: image.filename, prepared: await ctx.engine.prepareImage(image.data)}),
    (image) => ctx.engine.scorePrepared(image.prepared, image.source),
  )
  sendJson(res, 200, result)
}

/**
 * POST /v1/moderate/batch: the field `files` repeated, up to MOD_MAX_BATCH → `{results}` in upload
 * order. A file that cannot be read (empty, not an image, too many pixels) is an error entry; the
 * request still succeeds.
 */
export const moderateBatch: Handler = async (ctx, req, res) => {
  requireMultipart(req, 'files')
  const {maxBytes, maxBatch} = ctx.settings.limits
  const results = await moderate(
    ctx,
    res,
    () => receiveImages(req, {field: 'files', maxFiles: maxBatch, maxBytes}),
    asReceived,
    async (images) => {
      const out: ItemResult[] = []
      for await (const item of ctx.engine.moderateMany(images.map(toInput))) out.push(item)
      return out
    },
  )
  sendJson(res, 200, {results})
}

function toInput(image: UploadedImage): ImageInput {
  return {
    source: image.filename,
    read: async () => {
      if (image.data.length === 0) throw new ModError('unreadable_image', 'the file is empty')
      return image.data
    },
  }
}
