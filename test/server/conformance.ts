/**
 * Checks HTTP responses against the OpenAPI document: the operation exists, the status is declared for
 * it, required headers are present and valid, the content type is one the document names, and a JSON
 * body matches the schema (ajv, draft 2020-12). Server tests call it on every response they see:
 *
 *   const conformance = createConformance(doc)
 *   const body = await assertConforms(conformance, await fetch(`${base}/health`))
 */
import Ajv2020Module, {type ErrorObject, type ValidateFunction} from 'ajv/dist/2020.js'
import addFormatsModule from 'ajv-formats'

import type {OpenApiDocument, Operation, Response as OaResponse, Schema} from '../../src/server/openapi.js'

// Both are CommonJS modules whose default export NodeNext types as the module namespace.
const Ajv2020 = Ajv2020Module as unknown as typeof Ajv2020Module.default
const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default

export type HeadersLike = Headers | Record<string, string | string[] | number | undefined>

export interface Declared {
  method: string
  path: string
  status: number
}

export interface Conformance {
  readonly doc: OpenApiDocument
  /**
   * Throws a readable error unless the response conforms. `path` may carry a query string. For a JSON
   * media type, a string or Buffer body is parsed first; any other value is taken as the parsed body.
   */
  check(method: string, path: string, status: number, headers: HeadersLike, body: unknown): void
  /** Throws unless `value` matches the component schema `name`. */
  checkSchema(name: string, value: unknown): void
  /**
   * The problems the document finds in a request body of `media` for `method path` (parsed JSON, or a multipart
   * form as an object of fields), or [] when it admits it: what a client, or a fuzzer, reads as valid.
   */
  requestProblems(method: string, path: string, media: string, body: unknown): string[]
  /** Every (method, path, status) the document declares. */
  readonly declared: Declared[]
  /** What `check` accepted so far, as "GET /health 200". */
  readonly seen: Set<string>
  /** Declared responses `check` has not accepted yet. */
  uncovered(): Declared[]
}

const BASE_ID = 'urn:mod:openapi'
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const

/** `#/components/schemas/X` becomes an absolute reference into the schema registered under BASE_ID. */
function absoluteRefs<T>(value: T): T {
  return JSON.parse(JSON.stringify(value), (key, v: unknown) =>
    key === '$ref' && typeof v === 'string' && v.startsWith('#/components/schemas/')
      ? `${BASE_ID}#/$defs/${v.slice('#/components/schemas/'.length)}`
      : v,
  ) as T
}

function keyOf(d: Declared): string {
  return `${d.method.toUpperCase()} ${d.path} ${d.status}`
}

function templateMatches(template: string, path: string): boolean {
  const a = template.split('/')
  const b = path.split('/')
  return a.length === b.length && a.every((seg, i) => (/^\{[^}]+\}$/.test(seg) ? b[i] !== '' : seg === b[i]))
}

function headerGetter(headers: HeadersLike): (name: string) => string | undefined {
  if (typeof (headers as Headers).get === 'function') {
    return (name) => (headers as Headers).get(name) ?? undefined
  }
  const lower = new Map(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]))
  return (name) => {
    const v = lower.get(name.toLowerCase())
    return v === undefined ? undefined : Array.isArray(v) ? v.join(', ') : String(v)
  }
}

function isJsonMedia(media: string): boolean {
  return media === 'application/json' || media.endsWith('+json')
}

function mediaMatches(declared: string, actual: string): boolean {
  if (declared === actual || declared === '*/*') return true
  return declared.endsWith('/*') && actual.startsWith(declared.slice(0, -1))
}

function describeErrors(errors: ErrorObject[] | null | undefined): string {
  return (errors ?? [])
    .slice(0, 12)
    .map((e) => `  ${e.instancePath || '(root)'} ${e.message ?? ''} ${JSON.stringify(e.params)} [${e.schemaPath}]`)
    .join('\n')
}

function parsedJson(body: unknown, fail: (problem: string) => never): unknown {
  if (typeof body !== 'string' && !Buffer.isBuffer(body)) return body
  try {
    return JSON.parse(body.toString())
  } catch {
    return fail('the body is not valid JSON')
  }
}

function excerpt(body: unknown): string {
  const text = typeof body === 'string' ? body : Buffer.isBuffer(body) ? body.toString('utf8') : JSON.stringify(body)
  return text === undefined ? '(none)' : text.length > 600 ? `${text.slice(0, 600)}…` : text
}

export function createConformance(doc: OpenApiDocument): Conformance {
  // Validators are compiled per response on first use and run a few times each: ajv's optimisation pass of the
  // generated code costs more (a third of compiling) than it saves here. The schemas are checked against the
  // meta-schema once, in ajv.test.ts and openapi.test.ts, not again in each server test.
  const ajv = new Ajv2020({strict: true, allErrors: true, allowUnionTypes: true, validateSchema: false, code: {optimize: false}})
  addFormats(ajv)
  // Keywords of the OpenAPI 3.1 base dialect beside JSON Schema, and OpenAPI's file format.
  ajv.addVocabulary(['example', 'discriminator', 'xml', 'externalDocs'])
  ajv.addFormat('binary', true)
  ajv.addSchema({$id: BASE_ID, $defs: absoluteRefs(doc.components.schemas)})

  const validators = new Map<string, ValidateFunction>()
  const validator = (key: string, schema: Schema): ValidateFunction => {
    let v = validators.get(key)
    if (!v) {
      v = ajv.compile(absoluteRefs(schema))
      validators.set(key, v)
    }
    return v
  }

  const declared: Declared[] = []
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const method of METHODS) {
      const op = (item as Record<string, Operation | undefined>)[method]
      for (const status of Object.keys(op?.responses ?? {})) declared.push({method, path, status: Number(status)})
    }
  }
  const seen = new Set<string>()

  function templateOf(pathname: string): string | undefined {
    return pathname in doc.paths ? pathname : Object.keys(doc.paths).find((t) => templateMatches(t, pathname))
  }

  function methodsOf(template: string): string[] {
    return METHODS.filter((m) => (doc.paths[template] as Record<string, unknown>)[m] !== undefined)
  }

  /**
   * What the document leaves out still has a fixed answer (see its error table): an unknown path is 404
   * `not_found`, another method on a known path is 405 `method_not_allowed` with an Allow header naming
   * the documented methods, and either may be 401 first when a key is required.
   */
  function checkUndocumented(
    template: string | undefined,
    status: number,
    get: (name: string) => string | undefined,
    body: unknown,
    fail: (problem: string) => never,
  ): void {
    const expected: Record<number, string> =
      template === undefined ? {401: 'unauthorized', 404: 'not_found'} : {401: 'unauthorized', 405: 'method_not_allowed'}
    const code = expected[status]
    if (code === undefined) {
      fail(
        template === undefined
          ? 'the path is not in the document (only 404 or 401 may answer it)'
          : `the document has no such operation on ${template} (only 405 or 401 may answer it)`,
      )
    }
    if (status === 405) {
      const allow = (get('allow') ?? '').split(',').map((m) => m.trim().toLowerCase())
      const missing = methodsOf(template as string).filter((m) => !allow.includes(m))
      if (missing.length > 0) fail(`the Allow header ${JSON.stringify(get('allow'))} lacks ${missing.join(', ').toUpperCase()}`)
    }
    const media = get('content-type')?.split(';')[0].trim().toLowerCase()
    if (media !== 'application/json') fail(`Content-Type ${media} is not application/json`)
    const value = parsedJson(body, fail)
    const v = validator(`undocumented ${code}`, {
      allOf: [{$ref: '#/components/schemas/Error'}],
      type: 'object',
      properties: {error: {type: 'object', properties: {code: {const: code}}}},
    })
    if (!v(value)) fail(`the body does not match the Error schema with code ${code}:\n${describeErrors(v.errors)}`)
  }

  function check(method: string, path: string, status: number, headers: HeadersLike, body: unknown): void {
    const pathname = path.split('?')[0]
    const where = `${method.toUpperCase()} ${pathname} → ${status}`
    const fail = (problem: string): never => {
      throw new Error(`${where} does not conform to the OpenAPI document: ${problem}\nbody: ${excerpt(body)}`)
    }
    const get = headerGetter(headers)
    const template = templateOf(pathname)
    const item = template === undefined ? undefined : (doc.paths[template] as Record<string, Operation | undefined>)
    const op = item?.[method.toLowerCase()]
    if (template === undefined || op === undefined) return checkUndocumented(template, status, get, body, fail)
    const response: OaResponse | undefined = op.responses[String(status)]
    if (!response) fail(`status ${status} is not declared (declared: ${Object.keys(op.responses).join(', ')})`)
    const declaredResponse = response as OaResponse

    for (const [name, header] of Object.entries(declaredResponse.headers ?? {})) {
      const raw = get(name)
      if (raw === undefined) {
        if (header.required) fail(`required header ${name} is missing`)
        continue
      }
      const type = header.schema.type
      const value = type === 'integer' || type === 'number' ? (raw.trim() === '' ? raw : Number(raw)) : raw
      const v = validator(`header ${template} ${method} ${status} ${name}`, header.schema)
      if (!v(value)) fail(`header ${name}: ${JSON.stringify(raw)}\n${describeErrors(v.errors)}`)
    }

    const content = declaredResponse.content
    if (!content) {
      const empty = body === undefined || body === null || body === '' || (Buffer.isBuffer(body) && body.length === 0)
      if (!empty) fail('the document declares no body for this response')
    } else {
      const contentType = get('content-type')
      if (!contentType) fail('Content-Type is missing')
      const media = (contentType as string).split(';')[0].trim().toLowerCase()
      const key = Object.keys(content).find((k) => mediaMatches(k.toLowerCase(), media))
      if (key === undefined) fail(`Content-Type ${media} is not declared (declared: ${Object.keys(content).join(', ')})`)
      if (isJsonMedia(media)) {
        const value = parsedJson(body, fail)
        const v = validator(`body ${template} ${method} ${status} ${key}`, content[key as string].schema)
        if (!v(value)) fail(`the body does not match the schema:\n${describeErrors(v.errors)}`)
      }
    }
    seen.add(keyOf({method, path: template, status}))
  }

  function checkSchema(name: string, value: unknown): void {
    if (!(name in doc.components.schemas)) throw new Error(`no component schema ${name}`)
    const v = validator(`schema ${name}`, {$ref: `#/components/schemas/${name}`})
    if (!v(value)) {
      throw new Error(`value does not match the schema ${name}:\n${describeErrors(v.errors)}\nvalue: ${excerpt(value)}`)
    }
  }

  function requestProblems(method: string, path: string, media: string, body: unknown): string[] {
    const template = templateOf(path)
    const op = template === undefined ? undefined : (doc.paths[template] as Record<string, Operation | undefined>)[method.toLowerCase()]
    const schema = op?.requestBody?.content[media]?.schema
    if (!schema) throw new Error(`the document declares no ${media} body for ${method} ${path}`)
    const v = validator(`request ${template} ${method} ${media}`, schema)
    return v(body) ? [] : (v.errors ?? []).map((e) => `${e.instancePath || '(root)'} ${e.message ?? ''}`)
  }

  return {
    doc,
    check,
    checkSchema,
    requestProblems,
    declared,
    seen,
    uncovered: () => declared.filter((d) => !seen.has(keyOf(d))),
  }
}

const byDocument = new WeakMap<OpenApiDocument, Conformance>()

/**
 * Checks a fetch Response and returns its body (parsed when JSON, else text). The method defaults to
 * the only operation of the path; pass `body` when the response was already read.
 */
export async function assertConforms(
  target: Conformance | OpenApiDocument,
  res: globalThis.Response,
  options: {method?: string; body?: string} = {},
): Promise<unknown> {
  let conformance = 'check' in target ? target : byDocument.get(target)
  if (!conformance) {
    conformance = createConformance(target as OpenApiDocument)
    byDocument.set(target as OpenApiDocument, conformance)
  }
  const url = new URL(res.url)
  const method = options.method ?? onlyMethod(conformance.doc, url.pathname)
  const text = options.body ?? (await res.clone().text())
  conformance.check(method, url.pathname, res.status, res.headers, text)
  const media = res.headers.get('content-type')?.split(';')[0].trim().toLowerCase() ?? ''
  return isJsonMedia(media) && text !== '' ? JSON.parse(text) : text
}

function onlyMethod(doc: OpenApiDocument, pathname: string): string {
  const item = doc.paths[pathname] ?? Object.entries(doc.paths).find(([t]) => templateMatches(t, pathname))?.[1]
  const methods = item ? Object.keys(item).filter((k) => (METHODS as readonly string[]).includes(k)) : []
  if (methods.length !== 1) throw new Error(`assertConforms: pass the method for ${pathname}`)
  return methods[0].toUpperCase()
}
