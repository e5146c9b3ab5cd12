import {Type} from '../lib/typebox.js'

import {CategoryState, Coverage, SignalStates} from '../lib/schemas.js'
import {DEFAULT_SAMPLING, MAX_FPS, MAX_MIN_FRAMES, MIN_FPS} from '../lib/video/options.js'
import {BASE64_EXPECTED, BASE64_PATTERN} from './body.js'
import {HTTP_ERROR_CODES} from './errors.js'

/**
 * What the REST API reads and answers beyond the engine's results (src/lib/schemas.ts), as JSON Schema:
 * the routes validate with these and the OpenAPI document shows them unchanged.
 */

const closed = {additionalProperties: false} as const

/** Longest URL a request may name (an image's or a callback's): longer ones are 400 here, not a remote's refusal. */
export const MAX_URL_LENGTH = 8192

export const Health = Type.Object(
  {
    status: Type.Literal('ok'),
    version: Type.String({description: 'The version of mod serving.'}),
    model_loaded: Type.Boolean({description: 'Whether the models are in memory.'}),
    signals: SignalStates(
      'Per signal: `loaded`; `not_installed` (its categories are not evaluated, e.g. no CLIP model pulled); `off` ' +
        '(switched off by the policy or configuration); `not_loaded` (before the first load).',
    ),
    coverage: Coverage,
    categories: Type.Array(CategoryState, {
      description:
        'Each category of the policy: evaluated (by which signals) or not, and why. Before the models are loaded, ' +
        'what they will score once loaded.',
    }),
    policy: Type.Optional(
      Type.Object(
        {sha256: Type.String({pattern: '^[0-9a-f]{64}$', description: 'Changes whenever anything in the policy in force changes (categories, thresholds, prompts, text rules, hash lists and what their files hold, as read when the server started).'})},
        {...closed, description: 'Which policy scores: clients (`mod scan --server`) print it and tie resumable runs to it.'},
      ),
    ),
    jobs: Type.Optional(
      Type.Union([Type.Literal('in_process'), Type.Literal('redis'), Type.Literal('redis_unreachable'), Type.Literal('off')], {
        description:
          'Where the jobs API keeps its jobs: `in_process` (no `MOD_REDIS_URL`), `redis` (connected and answering), ' +
          '`redis_unreachable` (not connected, or a probe unanswered for 2 s: the job routes answer 503 `overloaded` until it is back; `/ready` does not depend on ' +
          'it, as every replica shares the one Redis), or `off` (several workers without `MOD_REDIS_URL`).',
      }),
    ),
    limits: Type.Optional(
      Type.Object(
        {
          max_batch: Type.Integer({minimum: 1, description: 'Files per batch request (MOD_MAX_BATCH).'}),
          max_bytes: Type.Integer({minimum: 1, description: 'Bytes per image (MOD_MAX_BYTES).'}),
          max_batch_bytes: Type.Integer({minimum: 1, description: 'Bytes of the files of one batch request together (MOD_MAX_BATCH_BYTES).'}),
        },
        {...closed, description: 'The upload limits, so that a client sizes its batches to fit.'},
      ),
    ),
  },
  closed,
)

export const Ready = Type.Object(
  {
    status: Type.Literal('ready'),
    coverage: Coverage,
  },
  {
    ...closed,
    description:
      'Ready even when some categories are not evaluated (e.g. no CLIP model installed): `coverage` says how many ' +
      'results score, and which they leave out.',
  },
)

export const ErrorCode = Type.Enum(HTTP_ERROR_CODES)

export const ErrorBody = Type.Object(
  {
    error: Type.Object(
      {
        code: ErrorCode,
        message: Type.String({description: 'For a person.'}),
        request_id: Type.String({description: 'The `X-Request-Id` of the answer: the one the request carried, or a generated one.'}),
      },
      closed,
    ),
  },
  closed,
)

/**
 * Exactly one of the two keys as a non-empty string; `null` counts as absent and other keys are ignored.
 * The types sit on the properties and the presence in `oneOf`, so a wrong type is reported as such.
 */
export const ModerateJsonRequest = Type.Object(
  {
    image_base64: Type.Optional(
      Type.Union([Type.String({minLength: 1, pattern: BASE64_PATTERN, contentEncoding: 'base64', title: BASE64_EXPECTED}), Type.Null()], {
        description:
          'The image bytes in standard base64 (`+` and `/`; base64url is refused), or a `data:…;base64,` URI. ' +
          'Whitespace and line breaks are allowed anywhere. Padding is optional, but the length must be one base64 ' +
          'has: a last group of one character (an impossible length), or `=` padding that does not complete the last ' +
          'group of 4, is 400 `bad_request`.',
      }),
    ),
    // No `format: uri`: RFC 3986 refuses URLs that browsers and fetch take (the WHATWG URL standard), such as a host
    // or path in any script (`http://bücher.example/café.jpg`) or a space; the route parses it as they do.
    url: Type.Optional(
      Type.Union([Type.String({minLength: 1, maxLength: MAX_URL_LENGTH, title: 'an absolute http(s) URL'}), Type.Null()], {
        description: 'An http(s) URL of a public image, as the WHATWG URL standard reads it (any script in the host and path).',
      }),
    ),
  },
  {
    description: 'Exactly one of `image_base64` and `url`; `null` counts as absent, other keys are ignored.',
    oneOf: [
      {title: 'Inline image', required: ['image_base64'], properties: {image_base64: {type: 'string'}}},
      {title: 'Image URL', required: ['url'], properties: {url: {type: 'string'}}},
    ],
  },
)

/** Query parameters arrive as text: the server coerces them to these types and fills in the defaults. */
export const VideoQuery = Type.Object({
  fps: Type.Optional(
    Type.Number({
      minimum: MIN_FPS,
      maximum: MAX_FPS,
      default: DEFAULT_SAMPLING.fps,
      description: `Frames sampled per second of video, from ${MIN_FPS} (one frame per 100 s) to ${MAX_FPS}.`,
    }),
  ),
  min_frames: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: MAX_MIN_FRAMES,
      default: DEFAULT_SAMPLING.minFrames,
      description: 'Consecutive flagged frames a segment needs; shorter runs are dropped.',
    }),
  ),
  stop_on_violation: Type.Optional(
    Type.Boolean({
      default: DEFAULT_SAMPLING.stopOnViolation,
      description:
        'Stop decoding once a segment of `min_frames` frames exists (`stopped_early` is then true). ' +
        '`true`, `false`, `1` or `0`.',
    }),
  ),
})
