import {randomUUID} from 'node:crypto'
import type {ServerResponse} from 'node:http'
import {join} from 'node:path'

import {Type} from '../../lib/typebox.js'

import type {ServerSettings} from '../../lib/config/settings.js'
import {isModError, ModError} from '../../lib/errors.js'
import {precheckUrl} from '../../lib/fetch/precheck.js'
import {plural} from '../../lib/plural.js'
import {formatSizeExact, grouped} from '../../lib/sizes.js'
import {paceOf} from '../body-pace.js'
import {clientOf} from '../client-address.js'
import {ImageJob, ImageJobLine, ImageJobManifest, MANIFEST_ITEM_BYTES, manifestBodyLimit, type Manifest} from '../jobs/images/schema.js'
import {CHUNK_SIZE, itemName, type ImageItem} from '../jobs/images/types.js'
import {dropUpload, moveIntoPlace, startStaging} from '../jobs/staging.js'
import {declareRoute} from '../route.js'
import {receiveFiles} from '../upload.js'
import {checkCallback, ID, JobQuery, LOCATION, NO_SUCH_JOB, ownerOf, unknownJob} from './jobs.js'

const EXAMPLE_IMAGE_JOB = {
  id: '0b6f3c52-6d2e-4f7e-9a0e-5f8d1c2b3a4d',
  kind: 'images',
  status: 'running',
  created_at: '2026-01-01T12:00:00.000Z',
  updated_at: '2026-01-01T12:00:03.000Z',
  progress: {items_done: 64, items_total: 2000, chunks_done: 2, chunks_total: 63},
  results: '/v1/jobs/0b6f3c52-6d2e-4f7e-9a0e-5f8d1c2b3a4d/results',
}

const ImageJobQuery = Type.Object({callback_url: JobQuery.properties.callback_url})

/** Lines read from the store at a time while streaming results. */
const PAGE = 256

const URLS_OFF = 'fetching URLs is disabled on this server (MOD_ALLOW_URLS); upload the files instead (multipart, field "files")'

/** The items of a manifest, refused whole when one cannot be accepted (the error names its index). */
async function manifestItems(manifest: Manifest, settings: ServerSettings): Promise<ImageItem[]> {
  const {maxItems} = settings.jobs.images
  if (manifest.items.length > maxItems) {
    throw new ModError('too_many_files', `a job holds at most ${plural(maxItems, 'item')} (MOD_MAX_JOB_ITEMS); this manifest has ${manifest.items.length}`)
  }
  if (!settings.allowUrls) {
    throw new ModError('url_fetch_disabled', URLS_OFF)
  }
  for (const [i, item] of manifest.items.entries()) {
    try {
      await precheckUrl(item.url)
    } catch (e) {
      if (isModError(e)) throw new ModError(e.code, `items[${i}].url: ${e.message}`)
      throw e
    }
  }
  return manifest.items.map((item) => ({url: item.url, ...(item.id === undefined ? {} : {id: item.id})}))
}

export const submitImageJobRoute = declareRoute({
  method: 'POST',
  path: '/v1/jobs/images',
  operationId: 'submitImageJob',
  summary: 'Moderate many images as a job',
  description: ({limits, allowUrls}) =>
    'A manifest of image URLs (JSON), or the images themselves (multipart, the field `files` repeated), answered at ' +
    `once with 202 and the queued job. The job is run in chunks of up to ${CHUNK_SIZE} items, each by whichever ` +
    'worker takes it (`mod worker` processes and `mod serve` share them through `MOD_REDIS_URL`); poll ' +
    '`GET /v1/jobs/{id}` for progress and read the lines from `GET /v1/jobs/{id}/results`, or give `callback_url`. ' +
    'URLs are fetched under the rules in the introduction, and only when `MOD_ALLOW_URLS` is true ' +
    `(${allowUrls ? 'it is on this server' : 'it is not on this server: a manifest gets 403'}); each URL is checked ` +
    'when the job is accepted as far as it can be without resolving its host (scheme, port, credentials, a literal ' +
    'non-public address: 422 `url_blocked` naming the item), and in full when it is fetched (a refusal then is the ' +
    `item's error line). Uploaded files stream to \`MOD_JOB_STORAGE\`, each of at most ${formatSizeExact(limits.maxBytes)}; ` +
    'the limits of a job are `MOD_MAX_JOB_ITEMS` items (413 `too_many_files`), `MOD_MAX_JOB_BYTES` of uploads (413 ' +
    '`payload_too_large`), and `MOD_MAX_JOBS_PER_CLIENT` jobs not done per client address (429 `too_many_jobs`). ' +
    `A manifest's body may take ${grouped(MANIFEST_ITEM_BYTES)} bytes an item (\`MOD_MAX_JOB_ITEMS\` of them, each URL and id at its ` +
    'longest) plus 1 KiB, and no more than `MOD_MAX_BUFFERED_BYTES` (413 `payload_too_large`); `MOD_MAX_BYTES` bounds ' +
    'the images, not the manifest.',
  tags: ['jobs'],
  query: ImageJobQuery,
  body: {
    media: 'application/json',
    schema: ImageJobManifest,
    description: 'A manifest: `items`, each an http(s) `url` and an optional `id` of yours, repeated in its result line.',
    example: {items: [{url: 'https://example.com/a.jpg', id: 'a'}, {url: 'https://example.com/b.png', id: 'b'}]},
    limit: manifestBodyLimit,
  },
  upload: {
    media: 'multipart/form-data',
    field: 'files',
    description: ({limits}) => `the images in the multipart field \`files\`, repeated, each of at most ${formatSizeExact(limits.maxBytes)}; an item's \`source\` is its file name.`,
    schema: () => ({type: 'object', required: ['files'], properties: {files: {type: 'array', items: {type: 'string', format: 'binary'}, minItems: 1}}}),
  },
  responses: {202: {description: 'The job, queued.', schema: ImageJob, headers: LOCATION, example: {...EXAMPLE_IMAGE_JOB, status: 'queued', progress: {...EXAMPLE_IMAGE_JOB.progress, items_done: 0, chunks_done: 0}}}},
  errors: ['bad_request', 'url_fetch_disabled', 'url_blocked', 'too_many_files', 'payload_too_large', 'too_many_jobs', 'too_many_uploads', 'internal', 'overloaded', 'jobs_unavailable'],
  errorExamples: {url_fetch_disabled: URLS_OFF},
  handler: async (ctx, req, reply, input) => {
    const {imageJobs, settings} = ctx
    const {storage, images} = settings.jobs
    const callbackUrl = input.query.callback_url
    if (callbackUrl !== undefined) await checkCallback(callbackUrl, settings.jobs.callbackAllowPrivate)
    const client = clientOf(req)
    const id = randomUUID()
    // The job's place is taken before the upload is read: concurrent uploads of one client cannot all pass the limit.
    const reservation = await imageJobs.reserve(client.key, id)
    let accepted
    try {
      let items: ImageItem[]
      const upload = ctx.gate.receive(client, {queued: false})
      try {
        if (input.multipart) {
          const dir = await startStaging(storage, id)
          const names = await receiveFiles(req, {
            field: 'files',
            maxFiles: images.maxItems,
            maxBytes: settings.limits.maxBytes,
            maxTotalBytes: images.maxBytes,
            pathOf: (i) => join(dir, itemName(i)),
            ...paceOf(settings.limits),
            place: upload,
          })
          items = names.map((file) => ({file}))
          await moveIntoPlace(storage, id)
        } else {
          items = await manifestItems(await input.body(upload), settings)
        }
      } finally {
        upload.release()
      }
      accepted = await imageJobs.submit({id, client: client.key, items, ...(callbackUrl === undefined ? {} : {callbackUrl}), ...ownerOf(ctx, req)})
    } catch (e) {
      await reservation.release()
      await dropUpload(storage, id)
      throw e
    }
    reply.send(202, accepted, {Location: `/v1/jobs/${id}`})
  },
})

/** Resolves once the answer can take more, or its client is gone. */
function drained(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done).off('close', done)
      resolve()
    }
    res.once('drain', done).once('close', done)
  })
}

const ResultsQuery = Type.Object({
  offset: Type.Optional(
    Type.Integer({minimum: 0, default: 0, description: 'The first line to send: the index of the first item wanted (lines already read are skipped).'}),
  ),
})

export const imageJobResultsRoute = declareRoute({
  method: 'GET',
  path: '/v1/jobs/{id}/results',
  operationId: 'getImageJobResults',
  summary: "An image job's result lines (NDJSON)",
  description:
    'One line per item, in manifest (or upload) order, from item `offset`: the item\'s `index`, its `id` when the ' +
    'manifest gave one, then its result as `/v1/moderate` answers it, or its `source` and `error`. Only the items ' +
    'whose result is ready are sent, as far as the first that is not: a read while the job runs answers what is ' +
    'ready, and the next read goes on from `offset` plus the lines received. `X-Mod-Job-Status` says the status ' +
    'when the read began: when it is `done`, the body holds every line from `offset` to the last item ' +
    '(`X-Mod-Items-Total` items in all), and the job is complete (a job deleted or expired during the read, or the ' +
    'job queue failing then, cuts the body off: the chunked answer has no end). A video job has no results pages: its id here is ' +
    'answered 404 `not_found` saying so, and its result is in `GET /v1/jobs/{id}`.',
  tags: ['jobs'],
  pathParams: ID,
  query: ResultsQuery,
  responses: {
    200: {
      description: 'The lines ready, from `offset`.',
      media: 'application/x-ndjson',
      schema: ImageJobLine,
      headers: {
        'X-Mod-Job-Status': {description: 'The job\'s status when the read began (`queued`, `running` or `done`).', schema: {type: 'string'}},
        'X-Mod-Items-Total': {description: 'Items in the job.', schema: {type: 'integer'}},
      },
    },
  },
  errors: ['not_found', 'internal', 'overloaded', 'jobs_unavailable'],
  errorExamples: NO_SUCH_JOB,
  handler: async (ctx, req, {raw: res}, {params: {id}, query}) => {
    const owner = ctx.owner(req)
    const job = await ctx.imageJobs.get(id, owner)
    if (!job) {
      // A video job exists here but has no results pages: saying "no job" would send the client looking elsewhere.
      if (await ctx.jobs.get(id, owner)) throw new ModError('not_found', `job ${JSON.stringify(id)} is a video job: results pages are for image jobs; its result is in GET /v1/jobs/${id}`)
      throw unknownJob(id)
    }
    const total = job.progress.items_total
    // The headers of every JSON answer (reply.ts): a job's results are a user's, never to be cached or sniffed.
    res.writeHead(200, {
      'Content-Type': 'application/x-ndjson',
      'Cache-Control': 'no-store',
      'X-Content-Type-Options': 'nosniff',
      'X-Mod-Job-Status': job.status,
      'X-Mod-Items-Total': String(total),
    })
    for (let from = query.offset; from < total; from += PAGE) {
      const lines = await ctx.imageJobs.lines(id, from, Math.min(PAGE, total - from))
      const ready = lines.findIndex((line) => line === undefined)
      const sent = ready === -1 ? lines : lines.slice(0, ready)
      if (sent.length > 0 && !res.write(sent.join('\n') + '\n')) await drained(res)
      // A done job has every line: one missing now is a job deleted or expired during the read. Ended cleanly, the
      // part sent would pass for the whole under `X-Mod-Job-Status: done`; cut off, the client sees it is not.
      if (ready !== -1 && job.status === 'done') return void res.destroy()
      if (ready !== -1 || res.destroyed) break
    }
    res.end()
  },
})
