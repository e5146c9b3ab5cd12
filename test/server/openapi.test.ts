import {readFileSync} from 'node:fs'

import {compileErrors, validate} from '@readme/openapi-parser'
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {DEFAULT_LIMITS, type Limits} from '../../src/lib/config/settings.js'
import {HTTP_ERRORS, type HttpErrorCode} from '../../src/server/errors.js'
import {EXAMPLE_REQUEST_ID} from '../../src/server/examples.js'
import {openapiDocument, type OpenApiDocument, type Operation} from '../../src/server/openapi.js'
import {createConformance} from './conformance.js'

const VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {version: string})
  .version

function documentWith(over: Partial<{apiKey: boolean; allowUrls: boolean; limits: Limits}> = {}): OpenApiDocument {
  return openapiDocument({version: VERSION, apiKey: false, allowUrls: false, limits: DEFAULT_LIMITS, ...over})
}

const doc = documentWith()
const keyed = documentWith({apiKey: true})

function operations(d: OpenApiDocument): [string, string, Operation][] {
  return Object.entries(d.paths).flatMap(([path, item]) =>
    Object.entries(item).map(([method, op]): [string, string, Operation] => [method, path, op]),
  )
}

async function validity(d: unknown): Promise<string> {
  // validate() dereferences its argument in place.
  const result = await validate(structuredClone(d) as Parameters<typeof validate>[0])
  return result.valid ? 'valid' : compileErrors(result)
}

test('the document is a valid OpenAPI 3.1 description', async () => {
  assert.is(doc.openapi, '3.1.0')
  assert.is(doc.info.version, VERSION)
  assert.equal(doc.servers, [{url: './', description: 'This server (where this document was read from)'}])
  assert.is(await validity(doc), 'valid')
  assert.is(await validity(documentWith({apiKey: true, allowUrls: true})), 'valid')
})

test('the validator rejects a broken document (so the check above means something)', async () => {
  const broken = structuredClone(doc) as unknown as {paths: Record<string, Record<string, {responses: unknown}>>}
  broken.paths['/health'].get.responses = {200: {content: {}}}
  assert.match(await validity(broken), /description/)
})

test("describes every endpoint of the spec's table with its method", () => {
  const table = [
    ['get', '/health'],
    ['get', '/ready'],
    ['get', '/v1/categories'],
    ['post', '/v1/moderate'],
    ['post', '/v1/moderate/batch'],
    ['post', '/v1/moderate/json'],
    ['post', '/v1/moderate/video'],
    ['get', '/metrics'],
  ]
  for (const [method, path] of table) {
    const op = (doc.paths[path] as Record<string, Operation> | undefined)?.[method]
    assert.ok(op, `${method} ${path}`)
    assert.ok(op.responses[200], `${method} ${path} 200`)
  }
  assert.equal(
    operations(doc).map(([m, p]) => `${m} ${p}`),
    [
      ...table.map(([m, p]) => `${m} ${p}`),
      'post /v1/jobs/video',
      'post /v1/jobs/images',
      'get /v1/jobs/{id}',
      'delete /v1/jobs/{id}',
      'get /v1/jobs/{id}/results',
      'get /openapi.json',
      'get /docs',
    ],
  )
})

test('every tag is declared once and used, and says what its routes do (jobs: each kind of job a POST creates)', () => {
  const declared = doc.tags.map((t) => t.name)
  const used = new Set(operations(doc).flatMap(([, , op]) => op.tags))
  assert.equal([...declared].sort(), [...used].sort())
  const jobs = doc.tags.find((t) => t.name === 'jobs')?.description ?? ''
  const kinds = operations(doc).filter(([method, , op]) => method === 'post' && op.tags.includes('jobs')).map(([, path]) => path.split('/').at(-1)?.replace(/s$/, '') ?? '')
  assert.equal(kinds.sort(), ['image', 'video'])
  for (const kind of kinds) assert.match(jobs, kind)
  const service = doc.tags.find((t) => t.name === 'service')?.description ?? ''
  for (const word of ['Health', 'readiness', 'metrics', 'documentation']) assert.match(service, word)
})

test('operation ids are unique and every operation has a summary and a description', () => {
  const ids = operations(doc).map(([, , op]) => op.operationId)
  assert.is(new Set(ids).size, ids.length)
  for (const [m, p, op] of operations(doc)) assert.ok(op.summary && op.description, `${m} ${p}`)
})

test('every error code is declared with its status, in the shape served (401 on a server with a key)', () => {
  const table: [string, number][] = [
    ['bad_request', 400],
    ['unauthorized', 401],
    ['url_fetch_disabled', 403],
    ['url_blocked', 422],
    ['url_fetch_failed', 502],
    ['url_fetch_timeout', 504],
    ['payload_too_large', 413],
    ['too_many_files', 413],
    ['video_too_long', 422],
    ['unsupported_media', 415],
    ['overloaded', 503],
    ['model_unavailable', 503],
    ['not_ready', 503],
    ['internal', 500],
  ]
  const c = createConformance(keyed)
  for (const [code, status] of table) {
    const body = {error: {code, message: 'for a person', request_id: 'r-1'}}
    const headers = {'content-type': 'application/json', 'retry-after': '1', 'www-authenticate': 'ApiKey header="X-API-Key"'}
    const accepting = operations(keyed).filter(([method, path, op]) => {
      if (!op.responses[status]) return false
      try {
        c.check(method, path, status, headers, body)
        return true
      } catch {
        return false
      }
    })
    assert.ok(accepting.length > 0, `${code} → ${status}`)
    assert.ok((doc.components.schemas.ErrorCode.enum as string[]).includes(code), code)
    assert.match(doc.info.description, new RegExp(`\\| [^|]*\\b${status}\\b[^|]*\\|[^|\\n]*\`${code}\``), code)
  }
})

test('errors land on the operations that can give them', () => {
  const statuses = (d: OpenApiDocument, path: string, method = 'post') =>
    Object.keys((d.paths[path] as Record<string, Operation>)[method].responses).map(Number)
  const expected: [string, string, number[]][] = [
    ['get', '/health', [200]],
    ['get', '/v1/categories', [200, 500]],
    ['post', '/v1/moderate', [200, 400, 408, 413, 415, 429, 500, 503]],
    ['post', '/v1/moderate/batch', [200, 400, 408, 413, 415, 429, 500, 503]],
    ['post', '/v1/moderate/json', [200, 400, 403, 408, 413, 415, 422, 429, 500, 502, 503, 504]],
    ['post', '/v1/moderate/video', [200, 400, 408, 413, 415, 422, 429, 500, 503]],
    ['get', '/openapi.json', [200]],
    ['get', '/docs', [200]],
    ['get', '/ready', [200, 503]],
    ['get', '/metrics', [200, 500]],
    ['post', '/v1/jobs/video', [202, 400, 408, 413, 415, 422, 429, 500, 503]],
    ['get', '/v1/jobs/{id}', [200, 400, 404, 500, 503]],
    ['delete', '/v1/jobs/{id}', [200, 400, 404, 500, 503]],
    ['post', '/v1/jobs/images', [202, 400, 403, 408, 413, 415, 422, 429, 500, 503]],
    ['get', '/v1/jobs/{id}/results', [200, 400, 404, 500, 503]],
  ]
  // Every operation of the document is listed above.
  assert.equal(
    expected.map(([method, path]) => `${method} ${path}`).sort(),
    operations(doc).map(([method, path]) => `${method} ${path}`).sort(),
  )
  for (const [method, path, codes] of expected) {
    assert.equal(statuses(doc, path, method), codes, `${method} ${path}`)
    const withKey = ['/health', '/ready', '/openapi.json', '/docs'].includes(path) ? codes : [...codes, 401].sort((a, b) => a - b)
    assert.equal(statuses(keyed, path, method), withKey, `${method} ${path} with a key`)
  }
  for (const [method, path, op] of operations(keyed)) {
    for (const status of [429, 503]) {
      const busy = op.responses[status]
      if (!busy) continue
      // Retry-After is required where every code of the status sends it (jobs_unavailable does not).
      const error = busy.content?.['application/json'].schema.properties as {error: {properties: {code: {enum: HttpErrorCode[]}}}}
      const codes = error.error.properties.code.enum
      const always = codes.every((code) => HTTP_ERRORS[code].headers?.['Retry-After'] !== undefined)
      assert.equal(busy.headers?.['Retry-After']?.required, always, `${method} ${path} ${status}`)
    }
    const unauthorized = op.responses[401]
    if (unauthorized) assert.equal(unauthorized.headers?.['WWW-Authenticate']?.required, true, `${method} ${path}`)
  }
})

test('the statuses and descriptions of error responses come from the one error table', () => {
  const batch = keyed.paths['/v1/moderate/batch']?.post?.responses ?? {}
  assert.equal(batch[413].content?.['application/json'].schema.properties, {
    error: {type: 'object', properties: {code: {type: 'string', enum: ['payload_too_large', 'too_many_files']}}},
  })
  assert.match(batch[413].description, /\(`payload_too_large`\)\. More than 16 files in one batch, or more items in one image job than `MOD_MAX_JOB_ITEMS` \(`too_many_files`\)\.$/)
  assert.equal(batch[503].content?.['application/json'].example, {error: {code: 'overloaded', message: 'the server is busy (64 requests already waiting); retry shortly', request_id: EXAMPLE_REQUEST_ID}})
  assert.is(batch[401].description, 'The `X-API-Key` header is missing or matches neither `MOD_API_KEY` nor a key of `MOD_API_KEYS` (`unauthorized`).')
})

test('with MOD_API_KEY set, the key applies to every operation but /health, /ready and the documentation', () => {
  assert.equal(keyed.components.securitySchemes?.ApiKey, {
    type: 'apiKey',
    in: 'header',
    name: 'X-API-Key',
    description: keyed.components.securitySchemes?.ApiKey.description,
  })
  assert.match(keyed.components.securitySchemes?.ApiKey.description ?? '', /This server has `MOD_API_KEY` set/)
  assert.equal(keyed.security, [{ApiKey: []}])
  const open = operations(keyed).filter(([, , op]) => op.security !== undefined)
  assert.equal(
    open.map(([m, p, op]) => [m, p, op.security]),
    [
      ['get', '/health', []],
      ['get', '/ready', []],
      ['get', '/openapi.json', []],
      ['get', '/docs', []],
    ],
  )
  for (const [method, path, op] of operations(keyed)) {
    assert.is(op.responses[401] !== undefined, !['/health', '/ready', '/openapi.json', '/docs'].includes(path), `${method} ${path} declares 401`)
  }
})

test('without MOD_API_KEY, the document requires no key and declares no 401', () => {
  assert.is(doc.security, undefined)
  assert.is(doc.components.securitySchemes, undefined)
  for (const [method, path, op] of operations(doc)) {
    assert.is(op.security, undefined, `${method} ${path}`)
    assert.is(op.responses[401], undefined, `${method} ${path}`)
  }
})

test('the video query parameters carry their bounds and defaults', () => {
  const params = doc.paths['/v1/moderate/video']?.post?.parameters ?? []
  assert.equal(
    params.map((p) => [p.name, p.in, p.required ?? false, p.schema]),
    [
      ['fps', 'query', false, {type: 'number', minimum: 0.01, maximum: 10, default: 1}],
      ['min_frames', 'query', false, {type: 'integer', minimum: 1, maximum: 1000, default: 1}],
      ['stop_on_violation', 'query', false, {type: 'boolean', default: false}],
    ],
  )
})

test('offset of the results pages is optional, defaulting to 0, and says numbers are digits only', () => {
  const offset = (doc.paths['/v1/jobs/{id}/results']?.get?.parameters ?? []).find((p) => p.name === 'offset')!
  assert.equal([offset.name, offset.required ?? false, offset.schema], ['offset', false, {type: 'integer', minimum: 0, default: 0}])
  assert.match(offset.description ?? '', 'Digits only')
})

test('the job id in the path is declared as a UUID, and the job query as the video query plus an absolute callback URL', () => {
  for (const method of ['get', 'delete'] as const) {
    const params = doc.paths['/v1/jobs/{id}']?.[method]?.parameters ?? []
    assert.equal(
      params.map((p) => [p.name, p.in, p.required, p.schema]),
      [['id', 'path', true, {type: 'string', format: 'uuid', title: 'a job id (a UUID, as POST /v1/jobs/video and /v1/jobs/images give)'}]],
    )
  }
  const query = doc.paths['/v1/jobs/video']?.post?.parameters ?? []
  assert.equal(query.map((p) => p.name), ['fps', 'min_frames', 'stop_on_violation', 'callback_url'])
  assert.equal(query[3].schema, {type: 'string', format: 'uri', maxLength: 8192, title: 'an absolute http(s) URL'})
})

test('request bodies: a multipart file, repeated files up to the batch limit, or exactly one of image_base64 and url', () => {
  const multipart = (path: string) => doc.paths[path]?.post?.requestBody?.content['multipart/form-data']?.schema
  assert.equal(multipart('/v1/moderate')?.required, ['file'])
  assert.equal(multipart('/v1/moderate/video')?.required, ['file'])
  // An empty file is refused by the single-file endpoints (415) and reported as an entry by the batch.
  for (const path of ['/v1/moderate', '/v1/moderate/video', '/v1/jobs/video']) {
    assert.is((multipart(path)?.properties as Record<string, {minLength?: number}>).file.minLength, 1, path)
  }
  assert.equal((multipart('/v1/moderate/batch')?.properties as Record<string, unknown>).files, {
    type: 'array',
    items: {type: 'string', format: 'binary'},
    minItems: 1,
    maxItems: 16,
  })
  const c = createConformance(doc)
  c.checkSchema('ModerateJsonRequest', {image_base64: 'iVBORw0KGgo='})
  c.checkSchema('ModerateJsonRequest', {url: 'https://example.com/a.png'})
  // A URL as browsers and fetch read it, any script in its host and path (not RFC 3986's ASCII `uri`).
  c.checkSchema('ModerateJsonRequest', {url: 'http://bücher.example/café.jpg'})
  // As served: null counts as absent, and other keys are ignored.
  c.checkSchema('ModerateJsonRequest', {image_base64: 'iVBORw0KGgo=', url: null})
  c.checkSchema('ModerateJsonRequest', {url: 'https://example.com/a.png', note: 'ignored'})
  c.checkSchema('ModerateJsonRequest', {image_base64: 'data:image/png;base64,iVBORw0K\nGgo='})
  const bads = [
    {},
    {image_base64: 'x', url: 'https://example.com/a.png'},
    {url: ''},
    {image_base64: 7},
    {image_base64: 'ab$d'},
    {image_base64: 'AAAA=AAA'},
    {image_base64: 'data:image/png,AAAA'},
  ]
  for (const bad of bads) {
    assert.throws(() => c.checkSchema('ModerateJsonRequest', bad), /does not match/, JSON.stringify(bad))
  }
})

test('every example in the document conforms to its own schema', () => {
  const c = createConformance(doc)
  let checked = 0
  for (const [method, path, op] of operations(doc)) {
    for (const [status, response] of Object.entries(op.responses)) {
      for (const [media, content] of Object.entries(response.content ?? {})) {
        if (content.example === undefined) continue
        c.check(method, path, Number(status), {'content-type': media, 'retry-after': '1', location: '/v1/jobs/1', 'x-mod-policy-sha256': 'a'.repeat(64)}, content.example)
        checked++
      }
    }
    const body = op.requestBody?.content['application/json']
    if (body?.example !== undefined) {
      c.checkSchema(String(body.schema.$ref).split('/').pop() as string, body.example)
      checked++
    }
  }
  for (const [name, schema] of Object.entries(doc.components.schemas)) {
    for (const example of (schema.examples as unknown[] | undefined) ?? []) {
      c.checkSchema(name, example)
      checked++
    }
  }
  assert.ok(checked >= 40, `only ${checked} examples`)
  // The /health example shows this build's version, as the route answers it.
  const health = doc.paths['/health'].get?.responses[200].content?.['application/json'].example as {version: string}
  assert.is(health.version, VERSION)
})

test('response schemas are closed, so an unexpected field fails the conformance check', () => {
  const open: string[] = []
  const visit = (schema: Record<string, unknown>, where: string): void => {
    if (schema.type === 'object' && schema.properties && !schema.allOf && schema.additionalProperties !== false) {
      open.push(where)
    }
    for (const [k, v] of Object.entries(schema)) {
      if (v && typeof v === 'object') visit(v as Record<string, unknown>, `${where}/${k}`)
    }
  }
  const {ModerateJsonRequest: _request, ...responseSchemas} = doc.components.schemas
  visit(responseSchemas, '#/components/schemas')
  assert.equal(open, [])
})

test('the description states the limits of this server in readable units', () => {
  const limits: Limits = {
    maxBytes: 3 * 1024 * 1024,
    maxPixels: 4_000_000,
    maxBatch: 4,
    maxVideoBytes: 1536 * 1024,
    maxVideoSeconds: 90,
    urlTimeoutMs: 2500,
    queueLimit: 8,
    maxUploads: 5,
    bodyTimeoutMs: 1500,
    bodyMinRate: 4096,
    maxUploadsPerClient: 2,
    maxBatchBytes: 2 * 1024 * 1024,
    maxBufferedBytes: 10 * 1024 * 1024,
  }
  const d = documentWith({limits})
  const text = d.info.description
  assert.match(text, '| `MOD_MAX_BYTES` | 3 MiB (3 145 728 bytes) |')
  assert.match(text, '| `MOD_MAX_PIXELS` | 4 000 000 pixels |')
  assert.match(text, '| `MOD_MAX_BATCH` | 4 files |')
  assert.match(text, '| `MOD_MAX_VIDEO_BYTES` | 1.5 MiB (1 572 864 bytes) |')
  assert.match(text, '| `MOD_MAX_VIDEO_SECONDS` | 90 s |')
  assert.match(text, '| `MOD_URL_TIMEOUT_MS` | 2500 ms |')
  assert.match(text, '| `MOD_QUEUE_LIMIT` | 8 requests |')
  assert.match(text, '| `MOD_MAX_UPLOADS` | 5 uploads |')
  assert.match(text, '| `MOD_MAX_BATCH_BYTES` | 2 MiB (2 097 152 bytes) |')
  assert.match(text, '| `MOD_MAX_BUFFERED_BYTES` | 10 MiB (10 485 760 bytes) |')
  assert.match(text, '| `MOD_BODY_TIMEOUT_MS` | 1500 ms |')
  assert.match(text, '| `MOD_MAX_UPLOADS_PER_CLIENT` | 2 uploads |')
  assert.match(text, '| `MOD_BODY_MIN_RATE` | 4 KiB (4 096 bytes) per second | the average a request body must keep once its first 1500 ms are over')
  assert.match(text, 'when every upload place is taken, a body that averaged less since its first byte (after 1 s) gives its place to the new request')
  const batch = d.paths['/v1/moderate/batch']?.post
  assert.equal(
    (batch?.requestBody?.content['multipart/form-data'].schema.properties as Record<string, {maxItems: number}>).files
      .maxItems,
    4,
  )
  assert.match(batch?.responses[413].description ?? '', 'More than 4 files')
  assert.match(d.paths['/v1/moderate/video']?.post?.responses[422].description ?? '', 'longer than 90 s')
  assert.match(d.paths['/v1/moderate/json']?.post?.responses[504].description ?? '', 'longer than 2500 ms')
})

test('the description lists the accepted formats and the URL fetching rules', () => {
  const text = doc.info.description
  assert.match(text, 'Images: JPEG, PNG, WebP, GIF, AVIF, TIFF')
  assert.match(text, 'MP4/MOV (H.264), WebM (VP8/VP9), MKV, animated GIF and animated AVIF')
  assert.match(text, 'the frame most like the interval until the next instant')
  assert.match(text, 'up to 56 more of the frames left out that are other pictures')
  assert.match(text, 'a TIFF of more than 64 pages is refused with 413 `payload_too_large`')
  assert.match(text, 'only `http` and `https` URLs')
  assert.match(text, 'every redirect is checked the same way')
  assert.match(text, 'private, loopback, link-local, unique-local, multicast, CGNAT, unspecified')
  assert.match(text, 'within 10 s')
})

test('the description says whether this server wants a key and fetches URLs', () => {
  assert.match(doc.info.description, 'no `MOD_API_KEY` set, so no key is required')
  assert.match(doc.info.description, 'URL fetching is **disabled** on this server')
  const d = documentWith({apiKey: true, allowUrls: true})
  assert.match(d.info.description, 'This server has `MOD_API_KEY` set')
  assert.match(d.info.description, 'URL fetching is **enabled** on this server.')
})

test.run()
