import {randomUUID} from 'node:crypto'

import {Type} from '../../lib/typebox.js'

import {emptyFileError, isModError, ModError} from '../../lib/errors.js'
import {callbackAddresses} from '../../lib/fetch/callback.js'
import {paceOf} from '../body-pace.js'
import {clientOf} from '../client-address.js'
import type {Request, RouteContext} from '../context.js'
import {EXAMPLE_CANCELLED_JOB, EXAMPLE_JOB} from '../jobs/examples.js'
import {Job} from '../jobs/schema.js'
import {ImageJob} from '../jobs/images/schema.js'
import {dropUpload, moveIntoPlace, startStaging} from '../jobs/staging.js'
import {jobPaths} from '../jobs/storage.js'
import {declareRoute} from '../route.js'
import {MAX_URL_LENGTH, VideoQuery} from '../schemas.js'
import {formatSizeExact} from '../../lib/sizes.js'
import {receiveVideo} from '../upload.js'
import {VIDEO_UPLOAD, VIDEO_UPLOAD_EXAMPLES} from './video.js'

export const JobQuery = Type.Object({
  ...VideoQuery.properties,
  callback_url: Type.Optional(
    Type.String({
      format: 'uri',
      maxLength: MAX_URL_LENGTH,
      title: 'an absolute http(s) URL',
      description:
        'Called with a POST of the job body when the job ends, signed in `X-Mod-Signature` (HMAC-SHA256 with ' +
        '`MOD_CALLBACK_SECRET`). It must be http(s) and resolve to public addresses unless ' +
        '`MOD_CALLBACK_ALLOW_PRIVATE` is true.',
    }),
  ),
})

export const LOCATION = {Location: {description: 'Where the job is: `/v1/jobs/{id}`.', schema: {type: 'string'}}}

export const ID = {
  id: {
    description: 'The job id from `POST /v1/jobs/video` or `POST /v1/jobs/images`; a UUID, so in either case (upper or lower).',
    schema: Type.String({format: 'uuid', title: 'a job id (a UUID, as POST /v1/jobs/video and /v1/jobs/images give)'}),
  },
}

export const unknownJob = (id: string): ModError =>
  new ModError('not_found', `no job ${JSON.stringify(id)}: it never existed, was deleted, or ended more than MOD_JOB_TTL ago`)

/** The example of a job route's 404: a job id it does not hold, not an unknown path. */
export const NO_SUCH_JOB = {not_found: unknownJob(EXAMPLE_JOB.id).message}

/** The owner a new job records: the name of the request's API key, when the server needs one. */
export function ownerOf(ctx: RouteContext, req: Request): {owner?: string} {
  const owner = ctx.owner(req)
  return owner === undefined ? {} : {owner}
}

/** The callback URL is checked when the job is accepted (and again when it is called): a bad one is refused now. */
export async function checkCallback(url: string, allowPrivate: boolean): Promise<void> {
  try {
    await callbackAddresses(url, {allowPrivate})
  } catch (e) {
    if (isModError(e) && e.code === 'url_fetch_failed') throw new ModError('bad_request', `callback_url: ${e.message}`)
    throw e
  }
}

export const submitVideoJobRoute = declareRoute({
  method: 'POST',
  path: '/v1/jobs/video',
  operationId: 'submitVideoJob',
  summary: 'Moderate a video as a job',
  description: ({limits}) =>
    `The upload and query of \`POST /v1/moderate/video\` (at most ${formatSizeExact(limits.maxVideoBytes)} and ` +
    `${limits.maxVideoSeconds} s), answered at once with 202 and the queued job; poll \`GET /v1/jobs/{id}\` ` +
    '(or give `callback_url`). The upload waits in `MOD_JOB_STORAGE` and is removed when the job ends. At most ' +
    `${limits.queueLimit} jobs wait at a time: beyond that the answer is 503 \`overloaded\` before the upload is read.`,
  tags: ['jobs'],
  query: JobQuery,
  body: VIDEO_UPLOAD,
  responses: {202: {description: 'The job, queued.', schema: Job, headers: LOCATION, example: EXAMPLE_JOB}},
  errors: ['bad_request', 'payload_too_large', 'unsupported_media', 'url_blocked', 'internal', 'too_many_uploads', 'overloaded', 'jobs_unavailable'],
  errorExamples: VIDEO_UPLOAD_EXAMPLES,
  handler: async (ctx, req, reply, {query}) => {
    const {jobs: queue, settings} = ctx
    if (query.callback_url !== undefined) await checkCallback(query.callback_url, settings.jobs.callbackAllowPrivate)
    await queue.checkRoom()
    // The upload takes an upload place like any other body; the moderation queue is not its to wait in.
    const upload = ctx.gate.receive(clientOf(req), {queued: false})
    const id = randomUUID()
    const {storage} = settings.jobs
    let accepted
    try {
      let video
      try {
        const dir = await startStaging(storage, id)
        video = await receiveVideo(req, {field: 'file', maxBytes: settings.limits.maxVideoBytes, dir, ...paceOf(settings.limits), place: upload})
      } finally {
        upload.release()
      }
      // Refused now, as the synchronous endpoint would, rather than queued to fail.
      if (video.size === 0) throw emptyFileError()
      await moveIntoPlace(storage, id)
      accepted = await queue.submit({
        id,
        source: video.filename,
        ...jobPaths(storage, id),
        fps: query.fps,
        minFrames: query.min_frames,
        stopOnViolation: query.stop_on_violation,
        ...(query.callback_url === undefined ? {} : {callbackUrl: query.callback_url}),
        ...ownerOf(ctx, req),
      })
    } catch (e) {
      await dropUpload(storage, id)
      throw e
    }
    reply.send(202, accepted, {Location: `/v1/jobs/${id}`})
  },
})

export const getJobRoute = declareRoute({
  method: 'GET',
  path: '/v1/jobs/{id}',
  operationId: 'getJob',
  summary: 'A job: status, progress, segments so far, result',
  description:
    'An image job (`kind: images`) reports how many items and chunks are done; its lines are at ' +
    '`/v1/jobs/{id}/results`. For a video job: while `running`, `progress` says how far the analysis got and `segments` lists the segments found so far. ' +
    '`done` carries `result` (the video result), `failed` carries `error` (the error body the synchronous ' +
    'endpoint would have answered). A finished job stays readable for `MOD_JOB_TTL` seconds unless deleted; a ' +
    'deleted or expired job is answered 404 `not_found`, as an id that never existed.',
  tags: ['jobs'],
  pathParams: ID,
  responses: {200: {description: 'The job: a video job, or an image job (`kind: images`).', schema: Type.Union([Job, ImageJob]), example: EXAMPLE_JOB}},
  errors: ['not_found', 'internal', 'overloaded', 'jobs_unavailable'],
  errorExamples: NO_SUCH_JOB,
  handler: async (ctx, req, reply, {params: {id}}) => {
    const owner = ctx.owner(req)
    const job = (await ctx.imageJobs.get(id, owner)) ?? (await ctx.jobs.get(id, owner))
    if (!job) throw unknownJob(id)
    reply.send(200, job)
  },
})

export const cancelJobRoute = declareRoute({
  method: 'DELETE',
  path: '/v1/jobs/{id}',
  operationId: 'cancelJob',
  summary: 'Cancel and delete a job',
  description:
    'A waiting job is dropped and a running one stopped (its ffmpeg killed; for an image job, its chunks not yet ' +
    'run are dropped and the one running stopped): both end `cancelled`, and their ' +
    '`callback_url` is called with that. Whatever its state, the job is then deleted: its upload, progress and ' +
    'result are removed, and from then on `GET` and `DELETE` of its id answer 404 `not_found`, as for an id ' +
    'that never existed.',
  tags: ['jobs'],
  pathParams: ID,
  responses: {
    200: {
      description: 'The job as it was when deleted: `cancelled` if it had not ended, else as it ended.',
      schema: Type.Union([Job, ImageJob]),
      example: EXAMPLE_CANCELLED_JOB,
    },
  },
  errors: ['not_found', 'internal', 'overloaded', 'jobs_unavailable'],
  errorExamples: NO_SUCH_JOB,
  handler: async (ctx, req, reply, {params: {id}}) => {
    const owner = ctx.owner(req)
    const job = (await ctx.imageJobs.remove(id, owner)) ?? (await ctx.jobs.remove(id, owner))
    if (!job) throw unknownJob(id)
    reply.send(200, job)
  },
})
