import {mkdtemp, rm} from 'node:fs/promises'
import {join} from 'node:path'

import {parseVideoOptions} from '../../lib/video/options.js'
import type {Handler} from '../context.js'
import {sendJson} from '../reply.js'
import {receiveVideo} from '../upload.js'
import {moderate, requireMultipart} from './pipeline.js'

/**
 * POST /v1/moderate/video: a video (or animated GIF) in the multipart field `file`, query `fps`,
 * `min_frames`, `stop_on_violation`. The upload streams to a folder of its own (MOD_MAX_VIDEO_BYTES
 * enforced as it arrives); the folder is removed whatever happens, also when the client goes away.
 */
export const moderateVideoFile: Handler = async (ctx, req, res) => {
  requireMultipart(req, 'file')
  const query = Object.fromEntries(new URL(req.url ?? '/', 'http://localhost').searchParams)
  const options = parseVideoOptions(query)
  let dir: string | undefined
  let result
  try {
    result = await moderate(
      ctx,
      res,
      async () => {
        dir = await mkdtemp(join(ctx.tmpDir, 'mod-video-'))
        return receiveVideo(req, {field: 'file', maxBytes: ctx.settings.limits.maxVideoBytes, dir})
      },
      (video, _scheduler, signal) => ctx.engine.moderateVideo(video.path, {source: video.filename, ...options, signal}),
    )
  } finally {
    if (dir) await rm(dir, {recursive: true, force: true})
  }
  sendJson(res, 200, result)
}
