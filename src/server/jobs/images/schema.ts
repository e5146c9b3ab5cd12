import {Type, type Static} from '../../../lib/typebox.js'

import {ModerationResult} from '../../../lib/schemas.js'
import type {ServerSettings} from '../../../lib/config/settings.js'
import {plural} from '../../../lib/plural.js'
import type {BodyLimit} from '../../body.js'
import {ErrorCode, MAX_URL_LENGTH} from '../../schemas.js'

const closed = {additionalProperties: false} as const

/** Longest client id of an item. */
export const MAX_ITEM_ID = 256
/** Longest URL of an item. */
export const MAX_ITEM_URL = MAX_URL_LENGTH

/** JSON around an item's URL and id at most: the keys, quotes, braces, separators and indentation. */
const ITEM_PUNCTUATION = 64

/** The bytes a manifest may take for each item: its URL and id at their longest, and the JSON around them. */
export const MANIFEST_ITEM_BYTES = MAX_ITEM_URL + MAX_ITEM_ID + ITEM_PUNCTUATION

/**
 * The largest manifest body: MOD_MAX_JOB_ITEMS items, each URL and id at its longest, within what a worker holds in
 * memory (MOD_MAX_BUFFERED_BYTES). Not MOD_MAX_BYTES, a limit on images: at 2 MB it refused a 3 MB manifest of
 * 2 000 long signed URLs, saying the body was more than an image in base64 needs.
 */
export function manifestBodyLimit(settings: Pick<ServerSettings, 'limits' | 'jobs'>): BodyLimit {
  const {maxItems} = settings.jobs.images
  const most = maxItems * MANIFEST_ITEM_BYTES + 1024
  if (most > settings.limits.maxBufferedBytes) {
    return {maxBytes: settings.limits.maxBufferedBytes, room: 'the most request bytes a worker holds in memory (MOD_MAX_BUFFERED_BYTES)'}
  }
  return {maxBytes: most, room: `the most a manifest of ${plural(maxItems, 'item')} (MOD_MAX_JOB_ITEMS) takes, each URL and id at its longest`}
}

export const ImageJobManifest = Type.Object(
  {
    items: Type.Array(
      Type.Object(
        {
          url: Type.String({minLength: 1, maxLength: MAX_ITEM_URL, description: 'An http(s) URL of the image, fetched under the URL rules.'}),
          id: Type.Optional(Type.String({maxLength: MAX_ITEM_ID, description: 'The client\'s own id of the item, repeated in its result line.'})),
        },
        closed,
      ),
      {minItems: 1, title: 'from 1 to MOD_MAX_JOB_ITEMS items', description: 'The images, in the order their result lines come.'},
    ),
  },
  {...closed, description: 'A manifest of image URLs.'},
)

export type Manifest = Static<typeof ImageJobManifest>

const lineHead = {
  index: Type.Integer({minimum: 0, description: 'The item\'s place in the manifest (or among the uploaded files), from 0.'}),
  id: Type.Optional(Type.String({description: 'The item\'s `id` from the manifest, when it had one.'})),
}

/** One line of GET /v1/jobs/{id}/results: the item's result as /v1/moderate answers it, or its error. */
export const ImageJobLine = Type.Union([
  Type.Object({...lineHead, ...ModerationResult.properties}, {...closed, description: 'A moderation result.'}),
  Type.Object(
    {
      ...lineHead,
      source: Type.String({description: 'The URL or file name of the item.'}),
      error: Type.Object({code: ErrorCode, message: Type.String()}, closed),
    },
    {...closed, description: 'An item that could not be scored: the error /v1/moderate would have answered for it.'},
  ),
])

export const IMAGE_JOB_STATUSES = ['queued', 'running', 'done', 'cancelled'] as const

/** An image job as GET /v1/jobs/{id} answers it and as its callback carries it. */
export const ImageJob = Type.Object(
  {
    id: Type.String({description: 'The job id; the job is at `/v1/jobs/{id}`.'}),
    kind: Type.Literal('images', {description: 'An image job (a video job has no `kind`).'}),
    status: Type.Enum(IMAGE_JOB_STATUSES, {
      description: '`queued` (no chunk taken yet), `running`, then `done` once every item has its result line; `cancelled` only in ' +
        'the answer of DELETE and in the callback of a job deleted before it was done.',
    }),
    created_at: Type.String({format: 'date-time'}),
    updated_at: Type.String({format: 'date-time'}),
    progress: Type.Object(
      {
        items_done: Type.Integer({minimum: 0, description: 'Items with a result line.'}),
        items_total: Type.Integer({minimum: 1}),
        chunks_done: Type.Integer({minimum: 0}),
        chunks_total: Type.Integer({minimum: 1, description: 'The job is run in chunks of up to 32 items, each by any worker.'}),
      },
      closed,
    ),
    results: Type.String({description: 'Where the result lines are: `/v1/jobs/{id}/results`.'}),
  },
  closed,
)

export type ImageJobBody = Static<typeof ImageJob>
