import {mkdtemp, rm} from 'node:fs/promises'
import {join} from 'node:path'

import {VideoResult} from '../../lib/schemas.js'
import {paceOf} from '../body-pace.js'
import {EXAMPLE_VIDEO} from '../examples.js'
import type {Request, RouteContext} from '../context.js'
import {declareRoute, type ServerFacts} from '../route.js'
import {VideoQuery} from '../schemas.js'
import {formatSizeExact} from '../../lib/sizes.js'
import type {QueryValues} from '../validate.js'
import {receiveVideo, videoTooLarge} from '../upload.js'
import {makeUploadDir} from '../upload-dirs.js'
import {moderate} from './pipeline.js'
import {POLICY_HEADER, policyHeader} from '../policy-digest.js'
import type {VideoResult as Result} from '../../lib/types.js'
import type {ServerResponse} from 'node:http'

/**
 * POST /v1/moderate/video: a video (or animated GIF) in the multipart field `file`, query `fps`,
 * `min_frames`, `stop_on_violation`. The upload streams to a folder of its own (MOD_MAX_VIDEO_BYTES
 * enforced as it arrives); the folder is removed whatever happens, also when the client goes away.
 */
async function moderateVideoFile(ctx: RouteContext, req: Request, res: ServerResponse, query: QueryValues<typeof VideoQuery>): Promise<Result> {
  const options = {fps: query.fps, minFrames: query.min_frames, stopOnViolation: query.stop_on_violation}
  let dir: string | undefined
  let result
  try {
    result = await moderate(
      ctx,
      req,
      res,
      async (upload) => {
        await makeUploadDir(ctx.tmpDir)
        dir = await mkdtemp(join(ctx.tmpDir, 'mod-video-'))
        return receiveVideo(req, {field: 'file', maxBytes: ctx.settings.limits.maxVideoBytes, dir, ...paceOf(ctx.settings.limits), place: upload})
      },
      (video, _scheduler, signal) => ctx.engine.moderateVideo(video.path, {source: video.filename, ...options, signal}),
    )
  } finally {
    if (dir) await rm(dir, {recursive: true, force: true})
  }
  ctx.verdict(res, result)
  return result
}

/** The multipart body of the video endpoints (synchronous and as a job): one video in the field `file`. */
/** The example of a video upload's 413: the video's own limit, not an image's. */
export const VIDEO_UPLOAD_EXAMPLES = {payload_too_large: ({limits}: ServerFacts) => videoTooLarge(limits.maxVideoBytes)}

export const VIDEO_UPLOAD = {
  media: 'multipart/form-data',
  field: 'file',
  description: ({limits}: ServerFacts) => `One video of at most ${formatSizeExact(limits.maxVideoBytes)}.`,
  schema: () => ({
    type: 'object',
    required: ['file'],
    properties: {file: {type: 'string', format: 'binary', minLength: 1, description: 'The video; its file name (at most 1 024 characters) becomes `source`; an empty one is refused.'}},
  }),
} as const

export const moderateVideoRoute = declareRoute({
  method: 'POST',
  path: '/v1/moderate/video',
  operationId: 'moderateVideo',
  summary: 'Moderate an uploaded video',
  description: ({limits}) =>
    `Multipart form with one video in the field \`file\` (at most ${formatSizeExact(limits.maxVideoBytes)} and ` +
    `${limits.maxVideoSeconds} s). The file is streamed to disk; frames are sampled at \`fps\`, scored in ` +
    'batches, and each violated label gets the timestamped segments where its score stayed at or above ' +
    'its threshold for at least `min_frames` sampled frames. A segment ends at its last frame plus 1/fps ' +
    '(capped at the duration).',
  tags: ['moderation'],
  query: VideoQuery,
  body: VIDEO_UPLOAD,
  responses: {200: {description: 'The video result.', schema: VideoResult, headers: POLICY_HEADER, example: EXAMPLE_VIDEO}},
  errors: ['payload_too_large', 'unsupported_media', 'video_too_long', 'internal', 'too_many_uploads', 'overloaded', 'model_unavailable'],
  errorExamples: VIDEO_UPLOAD_EXAMPLES,
  handler: async (ctx, req, reply, {query}) => reply.send(200, await moderateVideoFile(ctx, req, reply.raw, query), policyHeader(ctx)),
})
