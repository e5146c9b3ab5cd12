import type {IncomingMessage, ServerResponse} from 'node:http'

import type {Limits} from '../lib/config/settings.js'
import {PRESETS} from '../lib/policy/types.js'

/**
 * The OpenAPI 3.1 description of the REST surface, as one plain data structure. Response schemas are
 * closed (`required` + `additionalProperties: false`) so the test suite can check every response it sees
 * against them (test/server/conformance.ts).
 */

export type Schema = Record<string, unknown>

export interface Header {
  description: string
  required?: boolean
  schema: Schema
}

export interface MediaType {
  schema: Schema
  example?: unknown
  encoding?: Record<string, {contentType: string}>
}

export interface Response {
  description: string
  headers?: Record<string, Header>
  content?: Record<string, MediaType>
}

export interface Parameter {
  name: string
  in: 'query' | 'header' | 'path'
  description: string
  required?: boolean
  schema: Schema
}

export interface Operation {
  operationId: string
  summary: string
  description: string
  tags: string[]
  /** Absent: the document-wide requirement (the API key) applies; `[]`: public. */
  security?: Record<string, string[]>[]
  parameters?: Parameter[]
  requestBody?: {description: string; required: boolean; content: Record<string, MediaType>}
  responses: Record<string, Response>
}

export interface OpenApiDocument {
  openapi: '3.1.0'
  info: {title: string; version: string; description: string; license: {name: string; identifier: string}}
  servers: {url: string; description: string}[]
  security: Record<string, string[]>[]
  tags: {name: string; description: string}[]
  paths: Record<string, Partial<Record<'get' | 'post', Operation>>>
  components: {
    schemas: Record<string, Schema>
    securitySchemes: Record<string, Record<string, string>>
  }
}

export interface OpenApiInfo {
  /** package.json version. */
  version: string
  /** Whether MOD_API_KEY is set on this server. */
  apiKey: boolean
  /** MOD_ALLOW_URLS on this server. */
  allowUrls: boolean
  limits: Limits
}

/** Error codes a response can carry (CONTRACTS §3), in the order of its table. */
export const ERROR_CODES = [
  'bad_request',
  'unauthorized',
  'url_fetch_disabled',
  'url_blocked',
  'url_fetch_failed',
  'url_fetch_timeout',
  'payload_too_large',
  'too_many_files',
  'video_too_long',
  'unsupported_media',
  'overloaded',
  'model_unavailable',
  'internal',
  // Answers for what the document does not describe: an unknown path, or another method on a known one.
  'not_found',
  'method_not_allowed',
] as const

type ErrorCodeName = (typeof ERROR_CODES)[number]

/** The codes a batch reports per file, inside `results`, while the request as a whole succeeds. */
const ITEM_ERROR_CODES = ['unreadable_image', 'unsupported_media', 'payload_too_large']

const MiB = 1024 * 1024

/** "25 MiB (26 214 400 bytes)": the unit the settings are usually written in, and the exact count. */
export function humanBytes(n: number): string {
  const exact = `${grouped(n)} bytes`
  if (n >= MiB) return `${trimmed(n / MiB)} MiB (${exact})`
  if (n >= 1024) return `${trimmed(n / 1024)} KiB (${exact})`
  return exact
}

function trimmed(x: number): string {
  return Number.isInteger(x) ? String(x) : x.toFixed(2).replace(/0+$/, '')
}

function grouped(n: number): string {
  return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ' ')
}

function humanSeconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`
}

const ref = (name: string): Schema => ({$ref: `#/components/schemas/${name}`})

const unit = {type: 'number', minimum: 0, maximum: 1}

const nullableName = {type: ['string', 'null'], description: 'Name of the parent category; null when there is none.'}

const EXAMPLE_LABELS = [
  {name: 'weapons', score: 0.91, threshold: 0.5, parent: 'violence', violated: true, origin: 'builtin'},
  {name: 'violence', score: 0.42, threshold: 0.5, parent: null, violated: false, origin: 'builtin'},
  {name: 'alcohol', score: 0.03, threshold: 0.5, parent: null, violated: false, origin: 'builtin'},
]

const EXAMPLE_RESULT = {
  source: 'beach.jpg',
  is_safe: false,
  violations: [{name: 'weapons', confidence: 0.91, parent: 'violence', threshold: 0.5}],
  labels: EXAMPLE_LABELS,
  not_evaluated: [],
}

const EXAMPLE_VIDEO = {
  source: 'clip.mp4',
  is_safe: false,
  duration: 12.48,
  fps: 1,
  frames_analyzed: 13,
  stopped_early: false,
  violations: [
    {
      name: 'weapons',
      parent: 'violence',
      threshold: 0.5,
      max_confidence: 0.93,
      segments: [{start: 2, end: 6, frames: 4, max_confidence: 0.93}],
    },
  ],
  not_evaluated: [],
}

const EXAMPLE_CATEGORIES = {
  preset: 'fast',
  model: 'clip-vit-b32',
  categories: [
    {
      name: 'weapons',
      parent: 'violence',
      threshold: 0.5,
      origin: 'builtin',
      signals: ['clip'],
      prompts: ['a photo of a gun', 'a photo of a knife used as a weapon'],
      negatives: ['a photo of a kitchen knife on a cutting board'],
    },
    {name: 'redness', parent: null, threshold: 0.5, origin: 'custom', signals: ['clip'], prompts: ['red'], negatives: []},
    {name: 'uniforms', parent: null, threshold: 0.7, origin: 'head', signals: ['head']},
  ],
}

const EXAMPLE_MESSAGES: Record<ErrorCodeName, string> = {
  bad_request: 'the form has no file in the field "file"',
  unauthorized: 'missing or wrong X-API-Key header',
  url_fetch_disabled: 'fetching images by URL is disabled on this server (MOD_ALLOW_URLS)',
  url_blocked: 'the URL resolves to a loopback address; only public addresses are fetched',
  url_fetch_failed: 'https://example.com answered HTTP 404',
  url_fetch_timeout: 'fetching https://example.com took longer than 10000 ms',
  payload_too_large: 'the image is larger than 26214400 bytes',
  too_many_files: 'a batch holds at most 16 files',
  video_too_long: 'the video is longer than 600 seconds',
  unsupported_media: 'the file is not an image this server can read',
  overloaded: 'the server is busy; retry later',
  model_unavailable: 'the model could not be loaded; retry later',
  internal: 'internal error',
  not_found: 'no such endpoint: /v2/moderate',
  method_not_allowed: 'GET is not allowed on /v1/moderate; use POST',
}

/** One error response: the shared Error shape, narrowed to the codes this status carries. */
function errorResponse(description: string, codes: ErrorCodeName[], headers?: Record<string, Header>): Response {
  return {
    description,
    ...(headers ? {headers} : {}),
    content: {
      'application/json': {
        schema: {
          allOf: [ref('Error')],
          type: 'object',
          properties: {error: {type: 'object', properties: {code: {type: 'string', enum: codes}}}},
        },
        example: {error: {code: codes[0], message: EXAMPLE_MESSAGES[codes[0]]}},
      },
    },
  }
}

const RETRY_AFTER: Record<string, Header> = {
  'Retry-After': {
    description: 'Seconds to wait before retrying.',
    required: true,
    schema: {type: 'integer', minimum: 0},
  },
}

function errors(limits: Limits) {
  return {
    badRequest: (what: string) => errorResponse(`Bad request: ${what}.`, ['bad_request']),
    unauthorized: errorResponse(
      'The `X-API-Key` header is missing or wrong (only when the server has `MOD_API_KEY` set).',
      ['unauthorized'],
    ),
    urlDisabled: errorResponse('`url` was given but URL fetching is disabled (`MOD_ALLOW_URLS`).', ['url_fetch_disabled']),
    imageTooLarge: errorResponse(
      `The image is over ${humanBytes(limits.maxBytes)} or over ${grouped(limits.maxPixels)} decoded pixels.`,
      ['payload_too_large'],
    ),
    batchTooLarge: errorResponse(
      `More than ${limits.maxBatch} files (\`too_many_files\`), or the request body is over the upload limit ` +
        `(\`payload_too_large\`).`,
      ['too_many_files', 'payload_too_large'],
    ),
    videoTooLarge: errorResponse(`The video is over ${humanBytes(limits.maxVideoBytes)}.`, ['payload_too_large']),
    unsupportedImage: errorResponse(
      'The request is not a multipart form, or the file is empty or not an image the decoder can read.',
      ['unsupported_media'],
    ),
    unsupportedJsonImage: errorResponse(
      'The image is not one the decoder can read.',
      ['unsupported_media'],
    ),
    unsupportedVideo: errorResponse(
      'The file is not a video the decoder can read.',
      ['unsupported_media'],
    ),
    urlBlocked: errorResponse(
      'The URL, or a redirect it led to, is not http(s) or points at a non-public address.',
      ['url_blocked'],
    ),
    videoTooLong: errorResponse(
      `The video is longer than ${limits.maxVideoSeconds} s (found while decoding).`,
      ['video_too_long'],
    ),
    internal: errorResponse('Unexpected server error (the body never carries a stack trace).', ['internal']),
    urlFailed: errorResponse(
      "The URL's server failed, answered non-2xx, or redirected too often.",
      ['url_fetch_failed'],
    ),
    unavailable: errorResponse(
      'The worker queue is full (`overloaded`) or the model could not be loaded (`model_unavailable`).',
      ['overloaded', 'model_unavailable'],
      RETRY_AFTER,
    ),
    urlTimeout: errorResponse(
      `Fetching the URL took longer than ${humanSeconds(limits.urlTimeoutMs)}.`,
      ['url_fetch_timeout'],
    ),
  }
}

function json(description: string, schemaName: string, example: unknown): Response {
  return {description, content: {'application/json': {schema: ref(schemaName), example}}}
}

const binary = {type: 'string', format: 'binary'}

function description(info: OpenApiInfo): string {
  const {limits} = info
  const key = info.apiKey
    ? 'This server has `MOD_API_KEY` set: send it in the `X-API-Key` header (on this page: **Authorize**).'
    : 'This server has no `MOD_API_KEY` set, so no key is required right now.'
  const urls = info.allowUrls
    ? 'URL fetching is **enabled** on this server.'
    : 'URL fetching is **disabled** on this server (`MOD_ALLOW_URLS` is false): a `url` request gets 403.'
  const errorRows = [
    [
      'a body of the wrong type, missing/empty `file` field, bad JSON, bad base64, both or neither of `image_base64` and `url`, bad query value',
      '400',
      'bad_request',
    ],
    ['missing or wrong `X-API-Key` (only when `MOD_API_KEY` is set)', '401', 'unauthorized'],
    ['`url` while `MOD_ALLOW_URLS` is false', '403', 'url_fetch_disabled'],
    ['`url` with a non-http(s) scheme, or resolving (or redirecting) to a non-public address', '422', 'url_blocked'],
    ["the URL's server failed or answered non-2xx / took too long", '502 / 504', 'url_fetch_failed / url_fetch_timeout'],
    ['image over the byte or pixel limit, video over the byte limit', '413', 'payload_too_large'],
    ['more files than the batch limit', '413', 'too_many_files'],
    ['video longer than the duration limit (known while decoding)', '422', 'video_too_long'],
    [
      'not an image / not a video the decoder can read (single-file endpoints)',
      '415',
      'unsupported_media',
    ],
    ['worker queue full, or the model failed to load', '503 (+ `Retry-After`)', 'overloaded / model_unavailable'],
    ['anything else', '500', 'internal'],
    ['a path this document does not list', '404', 'not_found'],
    ['another method on a listed path (the `Allow` header names the right one)', '405', 'method_not_allowed'],
  ]
  return [
    'Self-hosted image and video moderation: each item is scored against the categories of the active policy ' +
      'and reported safe when no category reaches its threshold. Scores are in [0, 1], rounded to 4 decimals.',
    '',
    '## Authentication',
    'When `MOD_API_KEY` is set, every request except `GET /health` requires the header `X-API-Key` with ' +
      'exactly that value, this documentation (`/docs`, `/openapi.json`) included; without the variable no key ' +
      `is enforced. ${key}`,
    '',
    '## Limits on this server',
    '| Setting | Value | Applies to |',
    '|---|---|---|',
    `| \`MOD_MAX_BYTES\` | ${humanBytes(limits.maxBytes)} | one image (upload, base64 or URL download) |`,
    `| \`MOD_MAX_PIXELS\` | ${grouped(limits.maxPixels)} pixels | decoded size of one image or frame |`,
    `| \`MOD_MAX_BATCH\` | ${limits.maxBatch} files | one batch request |`,
    `| \`MOD_MAX_VIDEO_BYTES\` | ${humanBytes(limits.maxVideoBytes)} | one uploaded video |`,
    `| \`MOD_MAX_VIDEO_SECONDS\` | ${limits.maxVideoSeconds} s | video duration, enforced while decoding |`,
    `| \`MOD_URL_TIMEOUT_MS\` | ${humanSeconds(limits.urlTimeoutMs)} | one URL fetch, redirects and body included |`,
    `| \`MOD_QUEUE_LIMIT\` | ${limits.queueLimit} requests | waiting per worker before 503 \`overloaded\` |`,
    '',
    'Uploads are streamed and the limits are counted as bytes arrive; a video is streamed to disk.',
    '',
    '## Accepted formats',
    '- Images: JPEG, PNG, WebP, GIF, AVIF, TIFF. For animated GIF/WebP several frames are scored and each ' +
      'label keeps its maximum score.',
    '- Videos: whatever the bundled or system ffmpeg decodes; at least MP4/MOV (H.264), WebM (VP8/VP9), MKV and ' +
      'animated GIF.',
    '',
    '## Fetching images by URL',
    `\`POST /v1/moderate/json\` with \`url\` is honoured only when \`MOD_ALLOW_URLS\` is true. ${urls} Rules:`,
    '- only `http` and `https` URLs, without a user name or password, and not on a port browsers refuse ' +
      '(mail, shell, IRC, …);',
    '- the host is resolved once and every address must be public: private, loopback, link-local, ' +
      'unique-local, multicast, CGNAT, unspecified and other reserved addresses are refused (422 ' +
      '`url_blocked`), and the connection goes only to the checked addresses;',
    '- every redirect is checked the same way, at most 5 are followed;',
    `- the body may be at most ${humanBytes(limits.maxBytes)} and the whole fetch must finish within ` +
      `${humanSeconds(limits.urlTimeoutMs)}.`,
    '',
    '## Errors',
    'Every error response is JSON: `{"error": {"code": "<snake_case>", "message": "<for a person>"}}`.',
    '',
    '| Case | Status | Code |',
    '|---|---|---|',
    ...errorRows.map(([c, s, code]) => `| ${c} | ${s} | \`${code.replace(' / ', '` / `')}\` |`),
    '',
    'In a batch, a file that cannot be read does not fail the request: its entry in `results` is an error ' +
      `entry with one of the codes ${ITEM_ERROR_CODES.map((c) => `\`${c}\``).join(', ')}.`,
  ].join('\n')
}

/** The document for one server: limits and switches appear in the descriptions as this server applies them. */
export function openapiDocument(info: OpenApiInfo): OpenApiDocument {
  const {limits} = info
  const e = errors(limits)
  const uploadLimit = `One image of at most ${humanBytes(limits.maxBytes)}.`

  return {
    openapi: '3.1.0',
    info: {
      title: 'mod: image and video moderation',
      version: info.version,
      description: description(info),
      license: {name: 'MIT', identifier: 'MIT'},
    },
    servers: [{url: '/', description: 'This server'}],
    security: [{ApiKey: []}],
    tags: [
      {name: 'moderation', description: 'Score images and videos against the policy.'},
      {name: 'policy', description: 'The categories in force.'},
      {name: 'service', description: 'Health and documentation.'},
    ],
    paths: {
      '/health': {
        get: {
          operationId: 'getHealth',
          summary: 'Health status',
          description: 'Always public (never needs `X-API-Key`). `model_loaded` is false until the model is in memory.',
          tags: ['service'],
          security: [],
          responses: {
            200: json('The server is up.', 'Health', {status: 'ok', model_loaded: true, signals: {clip: 'loaded', nsfw: 'loaded', head: 'off'}}),
            500: e.internal,
          },
        },
      },
      '/v1/categories': {
        get: {
          operationId: 'listCategories',
          summary: 'Categories of the active policy',
          description:
            'Every label that is scored: built-in and custom categories with their prompts and negatives, and ' +
            'the labels of a trained head (which carry no prompts), with parents and thresholds.',
          tags: ['policy'],
          responses: {
            200: json('The categories in force.', 'CategoriesListing', EXAMPLE_CATEGORIES),
            401: e.unauthorized,
            500: e.internal,
            503: e.unavailable,
          },
        },
      },
      '/v1/moderate': {
        post: {
          operationId: 'moderateImage',
          summary: 'Moderate one uploaded image',
          description: `Multipart form with one image in the field \`file\`. ${uploadLimit}`,
          tags: ['moderation'],
          requestBody: {
            description: uploadLimit,
            required: true,
            content: {
              'multipart/form-data': {
                schema: {
                  type: 'object',
                  required: ['file'],
                  properties: {file: {...binary, description: 'The image; its file name becomes `source`.'}},
                },
              },
            },
          },
          responses: {
            200: json('The moderation result.', 'ModerationResult', EXAMPLE_RESULT),
            400: e.badRequest('a body that is not multipart/form-data, no file in the field `file`, an empty file, more than one file, or a form that cannot be read'),
            401: e.unauthorized,
            413: e.imageTooLarge,
            415: e.unsupportedImage,
            500: e.internal,
            503: e.unavailable,
          },
        },
      },
      '/v1/moderate/batch': {
        post: {
          operationId: 'moderateBatch',
          summary: 'Moderate several uploaded images',
          description:
            `Multipart form with the field \`files\` repeated once per image (at most ${limits.maxBatch}, each at ` +
            `most ${humanBytes(limits.maxBytes)}). Results come in upload order; a file that cannot be read ` +
            'yields an error entry in its place and the request still succeeds.',
          tags: ['moderation'],
          requestBody: {
            description: `1 to ${limits.maxBatch} images.`,
            required: true,
            content: {
              'multipart/form-data': {
                schema: {
                  type: 'object',
                  required: ['files'],
                  properties: {
                    files: {type: 'array', items: binary, minItems: 1, maxItems: limits.maxBatch},
                  },
                },
              },
            },
          },
          responses: {
            200: json('One entry per file, in upload order.', 'BatchResponse', {
              results: [
                EXAMPLE_RESULT,
                {source: 'notes.txt', error: {code: 'unreadable_image', message: 'the file is not an image this server can read'}},
              ],
            }),
            400: e.badRequest('a body that is not multipart/form-data, no file in the field `files`, or a form that cannot be read'),
            401: e.unauthorized,
            413: e.batchTooLarge,
            500: e.internal,
            503: e.unavailable,
          },
        },
      },
      '/v1/moderate/json': {
        post: {
          operationId: 'moderateJson',
          summary: 'Moderate one image given as base64 or as a URL',
          description:
            'A JSON object with exactly one of `image_base64` and `url` (both or neither is 400; `null` counts as ' +
            'absent). `url` is fetched under the rules in the introduction, and only when `MOD_ALLOW_URLS` is true. ' +
            'The result\'s `source` is the URL as given, or `image_base64`.',
          tags: ['moderation'],
          requestBody: {
            description: 'Exactly one of `image_base64` and `url`.',
            required: true,
            content: {'application/json': {schema: ref('ModerateJsonRequest'), example: {url: 'https://example.com/beach.jpg'}}},
          },
          responses: {
            200: json('The moderation result.', 'ModerationResult', EXAMPLE_RESULT),
            400: e.badRequest('a body that is not application/json, bad JSON, bad base64, both or neither of `image_base64` and `url`, or a malformed URL'),
            401: e.unauthorized,
            403: e.urlDisabled,
            413: e.imageTooLarge,
            415: e.unsupportedJsonImage,
            422: e.urlBlocked,
            500: e.internal,
            502: e.urlFailed,
            503: e.unavailable,
            504: e.urlTimeout,
          },
        },
      },
      '/v1/moderate/video': {
        post: {
          operationId: 'moderateVideo',
          summary: 'Moderate an uploaded video',
          description:
            `Multipart form with one video in the field \`file\` (at most ${humanBytes(limits.maxVideoBytes)} and ` +
            `${limits.maxVideoSeconds} s). The file is streamed to disk; frames are sampled at \`fps\`, scored in ` +
            'batches, and each violated label gets the timestamped segments where its score stayed at or above ' +
            'its threshold for at least `min_frames` sampled frames. A segment ends at its last frame plus 1/fps ' +
            '(capped at the duration).',
          tags: ['moderation'],
          parameters: [
            {
              name: 'fps',
              in: 'query',
              description: 'Frames sampled per second of video.',
              schema: {type: 'number', exclusiveMinimum: 0, maximum: 10, default: 1},
            },
            {
              name: 'min_frames',
              in: 'query',
              description: 'Consecutive flagged frames a segment needs; shorter runs are dropped.',
              schema: {type: 'integer', minimum: 1, maximum: 1000, default: 1},
            },
            {
              name: 'stop_on_violation',
              in: 'query',
              description: 'Stop decoding once a segment of `min_frames` frames exists (`stopped_early` is then true).',
              schema: {type: 'string', enum: ['true', 'false', '1', '0'], default: 'false'},
            },
          ],
          requestBody: {
            description: `One video of at most ${humanBytes(limits.maxVideoBytes)}.`,
            required: true,
            content: {
              'multipart/form-data': {
                schema: {
                  type: 'object',
                  required: ['file'],
                  properties: {file: {...binary, description: 'The video; its file name becomes `source`.'}},
                },
              },
            },
          },
          responses: {
            200: json('The video result.', 'VideoResult', EXAMPLE_VIDEO),
            400: e.badRequest('a body that is not multipart/form-data, no file in the field `file`, an empty file, a form that cannot be read, or a bad query value'),
            401: e.unauthorized,
            413: e.videoTooLarge,
            415: e.unsupportedVideo,
            422: e.videoTooLong,
            500: e.internal,
            503: e.unavailable,
          },
        },
      },
      '/openapi.json': {
        get: {
          operationId: 'getOpenApi',
          summary: 'This document',
          description: 'The OpenAPI 3.1 description of this server.',
          tags: ['service'],
          responses: {
            200: {description: 'The OpenAPI document.', content: {'application/json': {schema: {type: 'object'}}}},
            401: e.unauthorized,
          },
        },
      },
      '/docs': {
        get: {
          operationId: 'getDocs',
          summary: 'Interactive documentation',
          description: 'This page (Swagger UI, served with its assets under `/docs/` by this server).',
          tags: ['service'],
          responses: {
            200: {description: 'An HTML page.', content: {'text/html': {schema: {type: 'string'}}}},
            401: e.unauthorized,
          },
        },
      },
    },
    components: {
      securitySchemes: {
        ApiKey: {
          type: 'apiKey',
          in: 'header',
          name: 'X-API-Key',
          description:
            'Enforced only when the server has `MOD_API_KEY` set; the header must then equal it exactly ' +
            '(compared in constant time). `GET /health` never needs it.',
        },
      },
      schemas: {
        Origin: {
          type: 'string',
          enum: ['builtin', 'custom', 'head'],
          description: '`builtin`: a default category; `custom`: added by the policy file; `head`: a trained head label.',
        },
        Label: {
          type: 'object',
          description: 'The score of one label of the active policy.',
          required: ['name', 'score', 'threshold', 'parent', 'violated', 'origin'],
          additionalProperties: false,
          properties: {
            name: {type: 'string'},
            score: {...unit, description: 'Calibrated score, rounded to 4 decimals.'},
            threshold: unit,
            parent: nullableName,
            violated: {type: 'boolean', description: 'score >= threshold.'},
            origin: ref('Origin'),
          },
          examples: [EXAMPLE_LABELS[0]],
        },
        Violation: {
          type: 'object',
          description: 'A label whose score reached its threshold. A violated child does not add its parent.',
          required: ['name', 'confidence', 'parent', 'threshold'],
          additionalProperties: false,
          properties: {
            name: {type: 'string'},
            confidence: {...unit, description: 'The calibrated score.'},
            parent: nullableName,
            threshold: unit,
          },
          examples: [EXAMPLE_RESULT.violations[0]],
        },
        ModerationResult: {
          type: 'object',
          required: ['source', 'is_safe', 'violations', 'labels', 'not_evaluated'],
          additionalProperties: false,
          properties: {
            source: {type: 'string', description: 'Name of the input; for an upload, the uploaded file name.'},
            is_safe: {type: 'boolean', description: 'False when `violations` is non-empty.'},
            violations: {type: 'array', items: ref('Violation')},
            labels: {
              type: 'array',
              items: ref('Label'),
              description: 'Every label of the active policy that was scored, sorted by score descending.',
            },
            not_evaluated: {
              type: 'array',
              items: {type: 'string'},
              description:
                'Categories of the policy that no loaded signal could score (e.g. no CLIP model installed, only the ' +
                'embedded NSFW specialist); they are not in `labels`. Empty when every category was scored.',
            },
          },
          examples: [EXAMPLE_RESULT],
        },
        ErrorEntry: {
          type: 'object',
          description: 'Stands in a batch for a file that could not be read.',
          required: ['source', 'error'],
          additionalProperties: false,
          properties: {
            source: {type: 'string', description: 'The uploaded file name.'},
            error: {
              type: 'object',
              required: ['code', 'message'],
              additionalProperties: false,
              properties: {code: {type: 'string', enum: ITEM_ERROR_CODES}, message: {type: 'string'}},
            },
          },
          examples: [{source: 'notes.txt', error: {code: 'unreadable_image', message: 'not an image'}}],
        },
        BatchResponse: {
          type: 'object',
          required: ['results'],
          additionalProperties: false,
          properties: {
            results: {
              type: 'array',
              description: 'One entry per file, in upload order.',
              items: {oneOf: [ref('ModerationResult'), ref('ErrorEntry')]},
            },
          },
        },
        CategoryListing: {
          type: 'object',
          required: ['name', 'parent', 'threshold', 'origin', 'signals'],
          additionalProperties: false,
          properties: {
            name: {type: 'string'},
            parent: nullableName,
            threshold: unit,
            origin: ref('Origin'),
            signals: {
              type: 'array',
              items: {type: 'string', enum: ['clip', 'nsfw', 'head']},
              description:
                'What feeds the score: `clip` (zero-shot prompts), `nsfw` (the embedded NSFW specialist), `head` (a ' +
                'trained head). Model signals combine as a weighted mean; a head blends in afterwards.',
            },
            prompts: {type: 'array', items: {type: 'string'}, description: 'Absent for head labels.'},
            negatives: {type: 'array', items: {type: 'string'}, description: 'Benign look-alikes; absent for head labels.'},
          },
          examples: [EXAMPLE_CATEGORIES.categories[0]],
        },
        CategoriesListing: {
          type: 'object',
          required: ['preset', 'model', 'categories'],
          additionalProperties: false,
          properties: {
            preset: {type: 'string', enum: [...PRESETS]},
            model: {type: 'string', description: 'Id of the model in use.'},
            categories: {type: 'array', items: ref('CategoryListing')},
          },
        },
        Segment: {
          type: 'object',
          description: 'A run of consecutive sampled frames whose score stayed at or above the threshold.',
          required: ['start', 'end', 'frames', 'max_confidence'],
          additionalProperties: false,
          properties: {
            start: {type: 'number', minimum: 0, description: "Seconds: the first frame's timestamp."},
            end: {type: 'number', minimum: 0, description: "Seconds: the last frame's timestamp plus 1/fps, capped at the duration."},
            frames: {type: 'integer', minimum: 1},
            max_confidence: unit,
          },
          examples: [EXAMPLE_VIDEO.violations[0].segments[0]],
        },
        VideoViolation: {
          type: 'object',
          required: ['name', 'parent', 'threshold', 'max_confidence', 'segments'],
          additionalProperties: false,
          properties: {
            name: {type: 'string'},
            parent: nullableName,
            threshold: unit,
            max_confidence: unit,
            segments: {type: 'array', items: ref('Segment'), minItems: 1},
          },
        },
        VideoResult: {
          type: 'object',
          required: ['source', 'is_safe', 'duration', 'fps', 'frames_analyzed', 'stopped_early', 'violations', 'not_evaluated'],
          additionalProperties: false,
          properties: {
            source: {type: 'string', description: 'The uploaded file name.'},
            is_safe: {type: 'boolean'},
            duration: {type: 'number', minimum: 0, description: 'Seconds.'},
            fps: {type: 'number', exclusiveMinimum: 0, maximum: 10},
            frames_analyzed: {type: 'integer', minimum: 0},
            stopped_early: {type: 'boolean'},
            violations: {type: 'array', items: ref('VideoViolation')},
            not_evaluated: {
              type: 'array',
              items: {type: 'string'},
              description:
                'Categories of the policy that no loaded signal could score (e.g. no CLIP model installed, only the ' +
                'embedded NSFW specialist); they are not in `labels`. Empty when every category was scored.',
            },
          },
          examples: [EXAMPLE_VIDEO],
        },
        Health: {
          type: 'object',
          required: ['status', 'model_loaded', 'signals'],
          additionalProperties: false,
          properties: {
            status: {type: 'string', const: 'ok'},
            model_loaded: {type: 'boolean', description: 'Whether the models are in memory.'},
            signals: {
              type: 'object',
              description:
                'Per signal: `loaded`, `not_installed` (its categories are not evaluated; e.g. no CLIP model pulled), ' +
                '`off` (switched off by the policy or configuration) or `not_loaded` (before the first load).',
              required: ['clip', 'nsfw', 'head'],
              additionalProperties: false,
              properties: Object.fromEntries(
                ['clip', 'nsfw', 'head'].map((s) => [s, {type: 'string', enum: ['loaded', 'not_installed', 'off', 'not_loaded']}]),
              ),
            },
          },
        },
        ErrorCode: {type: 'string', enum: [...ERROR_CODES]},
        Error: {
          type: 'object',
          required: ['error'],
          additionalProperties: false,
          properties: {
            error: {
              type: 'object',
              required: ['code', 'message'],
              additionalProperties: false,
              properties: {code: ref('ErrorCode'), message: {type: 'string', description: 'For a person.'}},
            },
          },
          examples: [{error: {code: 'bad_request', message: EXAMPLE_MESSAGES.bad_request}}],
        },
        ModerateJsonRequest: {
          description: 'Exactly one of the two keys; other keys are ignored.',
          oneOf: [
            {
              title: 'Inline image',
              type: 'object',
              required: ['image_base64'],
              properties: {
                image_base64: {
                  type: 'string',
                  minLength: 1,
                  contentEncoding: 'base64',
                  description:
                    'The image bytes in standard, padded base64 (line breaks allowed), or a `data:…;base64,` URI; ' +
                    `at most ${humanBytes(limits.maxBytes)} once decoded.`,
                },
              },
            },
            {
              title: 'Image URL',
              type: 'object',
              required: ['url'],
              properties: {
                url: {type: 'string', minLength: 1, format: 'uri', description: 'An http(s) URL of a public image.'},
              },
            },
          ],
          examples: [{url: 'https://example.com/beach.jpg'}, {image_base64: 'iVBORw0KGgo='}],
        },
      },
    },
  }
}

export type Handler = (req: IncomingMessage, res: ServerResponse) => void

/** Serves the document as JSON; it is serialised once. */
export function openapiHandler(doc: OpenApiDocument): Handler {
  const body = Buffer.from(JSON.stringify(doc))
  return (_req, res) => {
    res.statusCode = 200
    res.setHeader('Content-Type', 'application/json; charset=utf-8')
    res.setHeader('Content-Length', body.length)
    res.setHeader('Cache-Control', 'no-cache')
    res.setHeader('X-Content-Type-Options', 'nosniff')
    res.end(body)
  }
}
