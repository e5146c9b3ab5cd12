import type {IncomingMessage, ServerResponse} from 'node:http'

import {isModError} from '../lib/errors.js'
import type {TSchema} from '../lib/typebox.js'

import {ITEM_ERROR_CODES} from '../lib/schemas.js'
import * as results from '../lib/schemas.js'
import {clientCode, HTTP_ERROR_CODES, HTTP_ERRORS, WWW_AUTHENTICATE, type HttpErrorCode, type HttpErrorRow} from './errors.js'
import {COMPONENT_EXAMPLES, EXAMPLE_REQUEST_ID} from './examples.js'
import {Job, JobSegment} from './jobs/schema.js'
import {errorsOf, type Operation as Declared, type ServerFacts, type Success, type Text} from './route.js'
import {ROUTES} from './routes/index.js'
import {missingField} from './upload.js'
import {pathReader} from './validate.js'
import {ErrorBody, ErrorCode, Health, ModerateJsonRequest, Ready} from './schemas.js'
import {ImageJob, ImageJobLine, ImageJobManifest} from './jobs/images/schema.js'
import {formatSizeExact, grouped} from '../lib/sizes.js'
import {MAX_ANIMATION_FRAMES, MAX_FRAMES, MAX_OTHER_FRAMES, MAX_PAGES} from '../lib/image/animation-frames.js'
import {answeredNotModified, entityTagOf} from './entity-tags.js'
import {LINGER} from './linger.js'
import {HEAD_TIMEOUT_MS} from './client-error.js'
import {graceMs} from './upload-places.js'
import {humanSeconds} from '../lib/durations.js'

/**
 * The OpenAPI 3.1 description of one server, generated: paths from the route declarations, schemas from
 * the TypeBox schemas unchanged (a component embedded in another becomes a `$ref`), error responses from
 * each route's error codes and the status table in errors.ts. This file holds the prose and the wiring.
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
  /** Absent: the document-wide requirement (the API key, when the server has one) applies; `[]`: public. */
  security?: Record<string, string[]>[]
  parameters?: Parameter[]
  requestBody?: {description: string; required: boolean; content: Record<string, MediaType>}
  responses: Record<string, Response>
}

export interface OpenApiDocument {
  openapi: '3.1.0'
  info: {title: string; version: string; description: string; license: {name: string; identifier: string}}
  servers: {url: string; description: string}[]
  /** Only when the server has MOD_API_KEY set. */
  security?: Record<string, string[]>[]
  tags: {name: string; description: string}[]
  paths: Record<string, Partial<Record<'get' | 'post' | 'delete', Operation>>>
  components: {
    schemas: Record<string, Schema>
    securitySchemes?: Record<string, Record<string, string>>
  }
}

export interface OpenApiInfo extends ServerFacts {
  /** package.json version. */
  version: string
}

/** Component name → schema; wherever one of these objects is embedded, the document refers to it. */
const COMPONENTS: Record<string, TSchema> = {
  Origin: results.Origin,
  Label: results.Label,
  Violation: results.Violation,
  ModerationResult: results.ModerationResult,
  ErrorEntry: results.ErrorEntry,
  BatchResult: results.BatchResult,
  CategoryListing: results.CategoryListing,
  CategoriesResult: results.CategoriesResult,
  Segment: results.Segment,
  VideoViolation: results.VideoViolation,
  VideoResult: results.VideoResult,
  Health,
  Ready,
  JobSegment,
  Job,
  ErrorCode,
  Error: ErrorBody,
  ModerateJsonRequest,
  ImageJob,
  ImageJobLine,
  ImageJobManifest,
}

const COMPONENT_NAMES = new Map<unknown, string>(Object.entries(COMPONENTS).map(([name, schema]) => [schema, name]))

const ref = (name: string): Schema => ({$ref: `#/components/schemas/${name}`})

/** A plain copy of `schema` in which every embedded component is a `$ref`; `self` is the component being defined. */
function withRefs(schema: unknown, self?: string): Schema {
  const walk = (value: unknown, top: boolean): unknown => {
    if (Array.isArray(value)) return value.map((v) => walk(v, false))
    if (value === null || typeof value !== 'object') return value
    const name = COMPONENT_NAMES.get(value)
    if (name !== undefined && !(top && name === self)) return ref(name)
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, walk(v, false)]))
  }
  return walk(schema, true) as Schema
}

/**
 * The operations that serve the documentation itself (mounted by app.ts beside the routes). They are public:
 * they hold no secret, and a browser must open the page before its Authorize button can take the key.
 */
export const DOCUMENTATION: Declared[] = [
  {
    method: 'GET',
    path: '/openapi.json',
    operationId: 'getOpenApi',
    summary: 'This document',
    description: 'The OpenAPI 3.1 description of this server. Public: it holds no secret.',
    tags: ['service'],
    security: [],
    responses: {200: {description: 'The OpenAPI document.', schema: {type: 'object'}}},
    errors: [],
  },
  {
    method: 'GET',
    path: '/docs',
    operationId: 'getDocs',
    summary: 'Interactive documentation',
    description:
      'This page (Swagger UI, served with its assets under `/docs/` by this server). Public: it holds no secret; ' +
      'with a key configured, **Authorize** takes it for the calls made from the page, which keeps it only while it is open ' +
      '(the browser stores it nowhere).',
    tags: ['service'],
    security: [],
    responses: {200: {description: 'An HTML page.', media: 'text/html', schema: {type: 'string'}}},
    errors: [],
  },
]

/** How the document describes each header of the error table (errors.ts), which decides when it is sent. */
const ERROR_HEADERS: Record<keyof NonNullable<HttpErrorRow['headers']>, Header> = {
  'Retry-After': {
    description: 'Seconds to wait before retrying.',
    required: true,
    schema: {type: 'integer', minimum: 0},
  },
  'WWW-Authenticate': {
    description: `How to authenticate: \`${WWW_AUTHENTICATE}\`.`,
    required: true,
    schema: {type: 'string', const: WWW_AUTHENTICATE},
  },
}

/** How a number must be written in a query (validate.ts refuses the forms JavaScript's Number() reads besides). */
const NUMBER_FORMS: Record<string, string> = {
  integer: ' Digits only (no sign, exponent, hexadecimal or spaces).',
  number: ' Plain decimal (`2`, `0.5`; no exponent, hexadecimal, sign or spaces).',
}

/** The codes a batch entry or an image job's line can carry: the engine's item codes as a client sees them. */
const itemCodes = [...new Set(ITEM_ERROR_CODES.map(clientCode))]

const sentence = (text: string): string => text.charAt(0).toUpperCase() + text.slice(1)

const render = (text: Text, facts: ServerFacts): string => (typeof text === 'string' ? text : text(facts))

/** The answers of one status: the shared Error shape, narrowed to the codes this operation gives with it. */
function errorResponse(codes: HttpErrorCode[], facts: ServerFacts, examples: Partial<Record<HttpErrorCode, string>>): Response {
  const rows = codes.map((code) => HTTP_ERRORS[code])
  const names = [...new Set(rows.flatMap((r) => Object.keys(r.headers ?? {})))] as (keyof typeof ERROR_HEADERS)[]
  // A header is required only where every code of the status sends it: a 503 jobs_unavailable (a setting to
  // change, not a wait) has no Retry-After beside overloaded's, and a client must not count on one there.
  const header = (name: keyof typeof ERROR_HEADERS): Header => {
    const sentWith = codes.filter((_, i) => rows[i].headers?.[name] !== undefined)
    if (sentWith.length === codes.length) return ERROR_HEADERS[name]
    const which = sentWith.map((code) => `\`${code}\``).join(', ')
    return {...ERROR_HEADERS[name], description: `${ERROR_HEADERS[name].description} Sent with ${which} only.`, required: false}
  }
  return {
    description: codes.map((code, i) => `${sentence(rows[i].when(facts.limits))} (\`${code}\`).`).join(' '),
    ...(names.length > 0 ? {headers: Object.fromEntries(names.map((name) => [name, header(name)]))} : {}),
    content: {
      'application/json': {
        schema: {
          allOf: [ref('Error')],
          type: 'object',
          properties: {error: {type: 'object', properties: {code: {type: 'string', enum: codes}}}},
        },
        example: {error: {code: codes[0], message: examples[codes[0]] ?? rows[0].example, request_id: EXAMPLE_REQUEST_ID}},
      },
    },
  }
}

/**
 * The messages of this route's error examples where the error table's (a missing "file" field, a 25 MiB image)
 * would say what the route never answers: what its upload field, its path parameters and the route itself give.
 */
function errorExamples(op: Declared, facts: ServerFacts): Partial<Record<HttpErrorCode, string>> {
  const examples: Partial<Record<HttpErrorCode, string>> = {}
  const multipart = op.upload ?? (op.body?.media === 'multipart/form-data' ? op.body : undefined)
  if (multipart) examples.bad_request = missingField(multipart.field)
  if (op.pathParams !== undefined) {
    try {
      pathReader(op.pathParams)(Object.fromEntries(Object.keys(op.pathParams).map((name) => [name, 'x'])))
    } catch (e) {
      if (isModError(e) && e.code === 'bad_request') examples.bad_request = e.message
    }
  }
  for (const [code, text] of Object.entries(op.errorExamples ?? {}) as [HttpErrorCode, Text][]) examples[code] = render(text, facts)
  return examples
}

function operation(op: Declared, facts: ServerFacts): Operation {
  const needsKey = facts.apiKey && op.security === undefined
  const declared = errorsOf(op)
  const codes = HTTP_ERROR_CODES.filter((c) => declared.includes(c) || (needsKey && c === 'unauthorized'))
  const byStatus = new Map<number, HttpErrorCode[]>()
  for (const code of codes) byStatus.set(HTTP_ERRORS[code].status, [...(byStatus.get(HTTP_ERRORS[code].status) ?? []), code])

  const responses: Record<string, Response> = {}
  for (const [status, ok] of Object.entries(op.responses) as [string, Success][]) {
    responses[status] = {
      description: ok.description,
      ...(ok.headers ? {headers: Object.fromEntries(Object.entries(ok.headers).map(([n, h]) => [n, {...h, required: true}]))} : {}),
      content: {[ok.media ?? 'application/json']: {schema: withRefs(ok.schema), ...(ok.example === undefined ? {} : {example: ok.example})}},
    }
  }
  const examples = errorExamples(op, facts)
  for (const [status, list] of [...byStatus].sort(([a], [b]) => a - b)) responses[status] = errorResponse(list, facts, examples)

  const result: Operation = {
    operationId: op.operationId,
    summary: op.summary,
    description: render(op.description, facts),
    tags: op.tags,
    ...(facts.apiKey && op.security ? {security: op.security} : {}),
    responses,
  }
  const parameters: Parameter[] = Object.entries(op.pathParams ?? {}).map(([name, param]) => ({
    name,
    in: 'path',
    description: param.description,
    required: true,
    schema: withRefs(param.schema),
  }))
  if (op.query) {
    const required = new Set(op.query.required ?? [])
    for (const [name, schema] of Object.entries(op.query.properties as Record<string, Schema>)) {
      const {description, ...rest} = withRefs(schema)
      const text = `${String(description)}${NUMBER_FORMS[String(rest.type)] ?? ''}`
      parameters.push({name, in: 'query', description: text, ...(required.has(name) ? {required: true} : {}), schema: rest})
    }
  }
  if (parameters.length > 0) result.parameters = parameters
  if (op.body) {
    const body = op.body
    const media: MediaType =
      body.media === 'application/json'
        ? {schema: withRefs(body.schema), example: body.example}
        : {schema: body.schema(facts.limits)}
    const content: Record<string, MediaType> = {[body.media]: media}
    if (op.upload) content[op.upload.media] = {schema: op.upload.schema(facts.limits)}
    const description = render(body.description, facts) + (op.upload ? ` Or: ${render(op.upload.description, facts)}` : '')
    result.requestBody = {description, required: true, content}
  }
  return result
}

/**
 * The heading that opens the description's reference part (limits, formats, errors): the /docs page shows
 * what comes before it above the operations and the rest below them.
 */
export const DETAILS_TITLE = 'Limits, formats and errors'

/** The table of the limits this server applies, with their values. */
function limitsSection(limits: ServerFacts['limits']): string[] {
  return [
    '## Limits on this server',
    '| Setting | Value | Applies to |',
    '|---|---|---|',
    `| \`MOD_MAX_BYTES\` | ${formatSizeExact(limits.maxBytes)} | one image (upload, base64 or URL download) |`,
    `| \`MOD_MAX_PIXELS\` | ${grouped(limits.maxPixels)} pixels | decoded size of one image or frame |`,
    `| \`MOD_MAX_BATCH\` | ${limits.maxBatch} files | one batch request |`,
    `| \`MOD_MAX_BATCH_BYTES\` | ${formatSizeExact(limits.maxBatchBytes)} | the files of one batch request together |`,
    `| \`MOD_MAX_VIDEO_BYTES\` | ${formatSizeExact(limits.maxVideoBytes)} | one uploaded video |`,
    `| \`MOD_MAX_VIDEO_SECONDS\` | ${limits.maxVideoSeconds} s | video duration, enforced while decoding |`,
    `| \`MOD_URL_TIMEOUT_MS\` | ${humanSeconds(limits.urlTimeoutMs)} | one URL fetch, redirects and body included |`,
    `| \`MOD_QUEUE_LIMIT\` | ${limits.queueLimit} requests | waiting per worker before 503 \`overloaded\` |`,
    `| \`MOD_MAX_UPLOADS\` | ${limits.maxUploads} uploads | bodies being received per worker before 503 \`overloaded\` (a request queues only once its body is in); when every place is taken and no body trickles, they are shared fairly between networks (an IPv4 address, the /56 of an IPv6 address): a body of the network holding at least two more places than the new request's gives its place up, whatever its pace, and is 503 \`overloaded\` |`,
    `| \`MOD_MAX_BUFFERED_BYTES\` | ${formatSizeExact(limits.maxBufferedBytes)} | request bytes a worker holds in memory for requests not answered yet, before 503 \`overloaded\` |`,
    `| \`MOD_MAX_UPLOADS_PER_CLIENT\` | ${limits.maxUploadsPerClient} uploads | bodies one client address (an IPv6 /64) may be sending to a worker at once before 429 \`too_many_uploads\` |`,
    `| \`MOD_BODY_TIMEOUT_MS\` | ${humanSeconds(limits.bodyTimeoutMs)} | a request body that sends nothing for this long is 408 \`request_timeout\` |`,
    `| \`MOD_BODY_MIN_RATE\` | ${formatSizeExact(limits.bodyMinRate)} per second | the average a request body must keep once its first ${humanSeconds(limits.bodyTimeoutMs)} are over, else 408 \`request_timeout\` (a body of n bytes has ${humanSeconds(limits.bodyTimeoutMs)} + n / rate); when every upload place is taken, a body that averaged less since its first byte (after ${humanSeconds(graceMs(limits.bodyTimeoutMs))}) gives its place to the new request and is 408 \`request_timeout\` at once, the slowest first, unless the new request's network (its IPv4 address, or the /56 of its IPv6 address) has a body that has not kept this pace itself |`,
  ]
}

function description(info: OpenApiInfo): string {
  const {limits} = info
  const key = info.apiKey
    ? 'This server has `MOD_API_KEY` set (or `MOD_API_KEYS`): send a key in the `X-API-Key` header (on this page: **Authorize**).'
    : 'This server has no `MOD_API_KEY` set, so no key is required right now.'
  const urls = info.allowUrls
    ? 'URL fetching is **enabled** on this server.'
    : 'URL fetching is **disabled** on this server (`MOD_ALLOW_URLS` is false): a `url` request gets 403.'
  const errorRows = HTTP_ERROR_CODES.map((code) => {
    const {status, headers, when} = HTTP_ERRORS[code]
    const sent = Object.keys(headers ?? {}).map((name) => ` (+ \`${name}\`)`).join('')
    return `| ${sentence(when(limits))} | ${status}${sent} | \`${code}\` |`
  })
  return [
    'Self-hosted image and video moderation: each item is scored against the categories of the active policy ' +
      'and reported safe when no category reaches its threshold. Scores are in [0, 1], rounded to 4 decimals.',
    '',
    '## Authentication',
    'When `MOD_API_KEY` is set, every request requires the header `X-API-Key` with exactly that value, except ' +
      '`GET /health`, `GET /ready` and this documentation (`/docs` with its files, `/openapi.json`), which hold no ' +
      'secret; without the variable no key is enforced. `MOD_API_KEYS` adds named keys (`name:key,name:key`), each ' +
      'accepted the same way: a job belongs to the key that made it, and with any other key its `GET`, `DELETE` and ' +
      `results answer 404 \`not_found\`, as for an id that never existed. ${key}`,
    '',
    `The limits, formats and errors of this server are described under "${DETAILS_TITLE}" below the operations.`,
    '',
    `# ${DETAILS_TITLE}`,
    '',
    ...limitsSection(limits),
    '',
    'Uploads are streamed and the limits are counted as bytes arrive; a video is streamed to disk. A body keeping ' +
      '`MOD_BODY_MIN_RATE` may take as long as its size needs; a request\'s head must arrive whole within ' +
      `${humanSeconds(HEAD_TIMEOUT_MS)} (\`408\`). A body answered before it was read is dropped at the same pace after the answer, ` +
      'or its connection is closed.',
    '',
    'An error answered before the request body was read to its end (a refused upload) carries `Connection: close`; ' +
      `the server then ends its side and drops what the client still sends for at most ${humanSeconds(LINGER.ms)} or ` +
      `${formatSizeExact(LINGER.bytes)} before it closes, so that a client still writing its body reads the answer. ` +
      'The answers to a request that is not valid HTTP, to a head that did not arrive in time and to a `CONNECT` close the same way.',
    '',
    '## Accepted formats',
    `- Images: JPEG, PNG, WebP, GIF, AVIF, TIFF. For animated GIF/WebP up to ${MAX_FRAMES} frames are scored, chosen by the time ` +
      `each is on screen (a delay of 10 ms or less counts as 100 ms, as browsers show it): those shown at ${MAX_FRAMES} instants evenly ` +
      'spaced from the middle of the first frame to the middle of the last, and always the frame shown longest; then up to ' +
      `${MAX_OTHER_FRAMES} more of the frames left out that are other pictures than every frame scored (a slideshow of up to ` +
      `${MAX_ANIMATION_FRAMES} pictures is scored on every picture). Every page of a multi-page TIFF is scored; a TIFF of ` +
      `more than ${MAX_PAGES} pages is refused with 413 \`payload_too_large\`. Each label keeps its maximum score. ` +
      "An animated PNG (APNG) is refused with 415 `unsupported_media`: only its " +
      'default image could be decoded; send the animation as GIF or WebP. An image is scored as displayed: EXIF ' +
      'orientation applied (a malformed tag, which viewers read differently, in each reading: docs/cli.md), colour converted ' +
      "to sRGB as browsers convert it (an ICC profile, a PNG's gAMA, cHRM and cICP chunks, an AVIF's nclx box; HDR tone-mapped to SDR), and an image with " +
      'transparency scored as a light page shows it (flattened onto white) and as a dark page does (onto black), each ' +
      'label keeping the higher score. The embedded NSFW specialist also judges the image turned a quarter (90, 180 or ' +
      '270 degrees) where its first model finds that turn clearly more telling, each of its labels keeping the higher ' +
      'score (its models were trained on upright pictures and miss much of what a photo turned on its side shows).',
    '- Videos: whatever the bundled or system ffmpeg decodes; at least MP4/MOV (H.264), WebM (VP8/VP9), MKV, ' +
      'animated GIF and animated AVIF. Each sampling instant is scored on the frame on screen then and, unless it is ' +
      'that frame again, on the frame most like the interval until the next instant; frames with transparency as a ' +
      'light and a dark page show them. Frames are scaled to at most 448 px on their shorter side and 1024 on the ' +
      'longer, a video under 224 px on its shorter side enlarged to it, and a stream whose picture size changes midway ' +
      'is fitted into the size of its first pictures; an MPEG-TS whose video moves to another PID is decoded on. A ' +
      'file with a subtitle stream of pictures (PGS, DVB, VobSub), or whose streams take more than 1 MiB to describe, ' +
      'is refused with 415 `unsupported_media`.',
    '',
    '## Fetching images by URL',
    `\`POST /v1/moderate/json\` with \`url\` is honoured only when \`MOD_ALLOW_URLS\` is true. ${urls} Rules:`,
    '- only `http` and `https` URLs, without a user name or password, and not on a port browsers refuse ' +
      '(mail, shell, IRC, …);',
    '- the host is resolved once and every address must be public: private, loopback, link-local, ' +
      'unique-local, multicast, CGNAT, unspecified and other reserved addresses are refused (422 ' +
      '`url_blocked`), and the connection goes only to the checked addresses;',
    '- every redirect is checked the same way, at most 5 are followed;',
    `- the body may be at most ${formatSizeExact(limits.maxBytes)} and the whole fetch must finish within ` +
      `${humanSeconds(limits.urlTimeoutMs)}.`,
    '',
    '## Errors',
    'Every error response is JSON: `{"error": {"code": "<snake_case>", "message": "<for a person>", "request_id": ' +
      '"<X-Request-Id>"}}`. Each ' +
      'operation lists the statuses it can answer; an unknown path and another method on a listed path are ' +
      'answered the same way everywhere (404, 405).',
    '',
    '| Case | Status | Code |',
    '|---|---|---|',
    ...errorRows,
    '',
    'In a batch, a file that cannot be read does not fail the request: its entry in `results` is an error ' +
      `entry with one of the codes ${itemCodes.map((c) => `\`${c}\``).join(', ')}, the code \`/v1/moderate\` answers for ` +
      'the same file (an image job\'s line likewise).',
  ].join('\n')
}

/** The document for one server: limits and switches appear in the descriptions as this server applies them. */
export function openapiDocument(info: OpenApiInfo): OpenApiDocument {
  const paths: OpenApiDocument['paths'] = {}
  for (const op of [...ROUTES, ...DOCUMENTATION]) {
    paths[op.path] = {...paths[op.path], [op.method.toLowerCase()]: operation(op, info)}
  }
  const schemas = Object.fromEntries(
    Object.entries(COMPONENTS).map(([name, schema]) => {
      const examples = COMPONENT_EXAMPLES[name]
      return [name, {...withRefs(schema, name), ...(examples ? {examples} : {})}]
    }),
  )
  return {
    openapi: '3.1.0',
    info: {
      title: 'mod: image and video moderation',
      version: info.version,
      description: description(info),
      license: {name: 'MIT', identifier: 'MIT'},
    },
    // Relative to this document's own URL, as OpenAPI allows: behind a reverse proxy that serves this server under a
    // path prefix (/mod/openapi.json), calls go to /mod/v1/…, where '/' would send them to /v1/….
    servers: [{url: './', description: 'This server (where this document was read from)'}],
    ...(info.apiKey ? {security: [{ApiKey: []}]} : {}),
    tags: [
      {name: 'moderation', description: 'Score images (uploaded, in base64 or by URL) and an uploaded video against the policy, answered in the request.'},
      {name: 'policy', description: 'The categories in force.'},
      {name: 'jobs', description: 'Asynchronous jobs: a long video, or many images, scored in the background; poll a job, read its results, cancel it.'},
      {name: 'service', description: 'Health, readiness, metrics and this documentation.'},
    ],
    paths,
    components: {
      schemas,
      ...(info.apiKey
        ? {
            securitySchemes: {
              ApiKey: {
                type: 'apiKey',
                in: 'header',
                name: 'X-API-Key',
                description:
                  'This server has `MOD_API_KEY` set (or `MOD_API_KEYS`): the header must equal one of its keys exactly ' +
                  '(compared in constant time); a job is seen only with the key that made it. `GET /health`, ' +
                  '`GET /ready`, `/docs` and `/openapi.json` never need it.',
              },
            },
          }
        : {}),
    },
  }
}

export type Handler = (req: IncomingMessage, res: ServerResponse) => void

/** Serves the document as JSON; it is serialised once. A revalidation of the same document is a 304. */
export function openapiHandler(doc: OpenApiDocument): Handler {
  const body = Buffer.from(JSON.stringify(doc))
  const etag = entityTagOf(body)
  return (req, res) => {
    if (answeredNotModified(req, res, etag, 'no-cache')) return
    res.statusCode = 200
    res.setHeader('Content-Type', 'application/json; charset=utf-8')
    res.setHeader('Content-Length', body.length)
    res.setHeader('Cache-Control', 'no-cache')
    res.setHeader('ETag', etag)
    res.setHeader('X-Content-Type-Options', 'nosniff')
    res.end(body)
  }
}
