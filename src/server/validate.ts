import type {IncomingMessage} from 'node:http'

import type {ErrorObject, ValidateFunction} from 'ajv/dist/2020.js'
import type {Static, TObject, TSchema} from '../lib/typebox.js'

import {ModError} from '../lib/errors.js'
import {plural} from '../lib/plural.js'
import {createAjv} from './ajv.js'
import {readBody} from './body.js'
import {duplicateKey} from './json-keys.js'
import type {BodyLimits} from './body-stream.js'

/**
 * Request validation from the routes' schemas (ajv, JSON Schema 2020-12): query strings and path parameters
 * are coerced to the declared types and take the declared defaults; JSON bodies are checked as sent. A problem
 * is `bad_request` with a message for a person naming the parameter or the field (never ajv's own wording).
 */

// Query and path values are text: coerced to the declared types, the declared defaults filled in.
const textAjv = createAjv({coerceTypes: true, useDefaults: true})
// Every error is collected, so that the one reported can be the most specific (see bodyProblem).
const bodyAjv = createAjv({useDefaults: true, allErrors: true, verbose: true})

type Schema = Record<string, unknown>

/** A query's values once coerced: the parameters with a default are always present. */
export type QueryValues<Q extends TObject> = Required<Static<Q>>

/** Query text for a boolean beside what ajv coerces (`true`, `false`). */
const BOOLEAN_TEXT: Record<string, boolean> = {true: true, false: false, 1: true, 0: false}

/** What a value of `schema` looks like, for a person: its `title` when it has one (a string of some form, a list's size). */
function expected(schema: Schema): string {
  const {type, minimum, title} = schema
  // A whole number past 2^53 - 1 is refused (plainNumber): the bound is stated where the schema gives none.
  const maximum = schema.maximum ?? (type === 'integer' ? Number.MAX_SAFE_INTEGER : undefined)
  if (typeof title === 'string') return title
  if (type === 'boolean') return 'true, false, 1 or 0'
  const kind = KINDS[String(type)] ?? 'a value'
  if (minimum !== undefined && maximum !== undefined) return `${kind} from ${minimum} to ${maximum}`
  if (minimum !== undefined) return `${kind} of at least ${minimum}`
  if (maximum !== undefined) return `${kind} of at most ${maximum}`
  return kind
}

const KINDS: Record<string, string> = {
  string: 'a string',
  number: 'a number',
  integer: 'a whole number',
  boolean: 'true or false',
  object: 'a JSON object',
  array: 'a list',
  null: 'null',
}

const invalidText = (name: string, text: string, schema: Schema, hint = ''): ModError =>
  new ModError('bad_request', `${name}=${quoted(text)} is not valid: expected ${expected(schema)}${hint}`)

/** How a query writes a whole number, and a number: digits, with a point between digits. */
const WHOLE = /^[0-9]+$/
const DECIMAL = /^[0-9]+(?:\.[0-9]+)?$/

/** For a number refused for its spelling (`.5`, `5.`, `1e0`, `+1`), not its value: how to write it. */
function spellingHint(text: string, type: unknown): string {
  const spelled = (type === 'integer' ? WHOLE : DECIMAL).test(text)
  const value = Number(text)
  if (spelled || text.trim() === '' || !(type === 'integer' ? Number.isInteger(value) : Number.isFinite(value))) return ''
  return type === 'integer' ? ', written in digits only' : ', written in digits, with a point between digits (0.5)'
}

/**
 * The text of a number as a query may give it: plain decimal without a sign, digits only for an integer. What ajv
 * coerces besides (JavaScript's Number(): `0x1`, `1e0`, `+1`, ` 1`, `Infinity`) is refused, as is an integer past
 * 2^53 that Number() would round to another one.
 */
function plainNumber(text: string, type: unknown): boolean {
  if (type === 'integer') return WHOLE.test(text) && Number.isSafeInteger(Number(text))
  return type !== 'number' || DECIMAL.test(text)
}

/**
 * Reads the declared parameters of a query string into typed values. Parameters the schema does not declare are
 * ignored, or, with `strict` (`POST /v1/moderate/video`: the route named there), refused: a misspelt `fsp=2`, or a
 * `threshold` a route does not take, would otherwise be answered as if it had been applied. A declared one given
 * twice is refused (which of its values was meant cannot be known), and so is a number not in plain decimal.
 */
export function queryReader<Q extends TObject>(schema: Q, strict?: string): (search: URLSearchParams) => QueryValues<Q> {
  const properties = schema.properties as Record<string, Schema>
  const validate = textAjv.compile(schema)
  return (search) => {
    const raw: Record<string, string> = {}
    const values: Record<string, unknown> = {}
    for (const [name, text] of search) {
      if (!(name in properties) && strict !== undefined) throw unknownParameter(name, strict, Object.keys(properties))
      if (!(name in properties)) continue
      if (name in raw) throw new ModError('bad_request', `the query gives ${name} more than once; give it once`)
      raw[name] = text
      const {type} = properties[name]
      if (!plainNumber(text, type)) throw invalidText(name, text, properties[name], spellingHint(text, type))
      const {maxLength} = properties[name]
      if (typeof maxLength === 'number' && text.length > maxLength) throw new ModError('bad_request', `${name} is too long: at most ${plural(maxLength, 'character')}`)
      values[name] = type === 'boolean' ? (BOOLEAN_TEXT[text] ?? text) : text
    }
    if (!validate(values)) {
      const bad = validate.errors?.[0]?.instancePath.slice(1) ?? ''
      throw invalidText(bad, raw[bad], properties[bad] ?? {})
    }
    return values as QueryValues<Q>
  }
}

function unknownParameter(name: string, route: string, known: readonly string[]): ModError {
  const takes = known.length > 0 ? `it takes ${known.join(', ')}` : 'it takes none'
  return new ModError('bad_request', `${quoted(name)} is not a query parameter of ${route}: ${takes}`)
}

/**
 * A UUID in the one spelling ids are stored in, as randomUUID makes them: lower case, without the `urn:uuid:` prefix
 * that the uuid format admits. UUIDs are case-insensitive (RFC 9562), so an id a client upper-cased is the same job.
 */
const canonicalUuid = (value: string): string => value.toLowerCase().replace(/^urn:uuid:/, '')

/** Checks the path parameters of a request against their declared string schemas; UUIDs come out in their stored spelling. */
export function pathReader(params: Record<string, {schema: TSchema}>): (values: Record<string, string>) => Record<string, string> {
  const checks = Object.entries(params).map(([name, {schema}]) => [name, schema, textAjv.compile(schema)] as const)
  return (values) => {
    const read = {...values}
    for (const [name, schema, validate] of checks) {
      if (!validate(values[name])) throw invalidText(name, values[name] ?? '', schema as Schema)
      if ((schema as Schema).format === 'uuid') read[name] = canonicalUuid(values[name])
    }
    return read
  }
}

/** Where a JSON pointer leads, written as a person writes it: `items[0].url`. */
function pathOf(pointer: string): string {
  let path = ''
  for (const key of pointer.split('/').slice(1).map((k) => k.replaceAll('~1', '/').replaceAll('~0', '~'))) {
    path += /^(?:0|[1-9][0-9]*)$/.test(key) ? `[${key}]` : path === '' ? key : `.${key}`
  }
  return path
}

/** A field name or value as the request gave it, quoted and cut: it may be as long as the body or the query. */
const quoted = (name: string): string => JSON.stringify(name.length > 64 ? `${name.slice(0, 64)}…` : name)

/** One problem of the value at `path` (`''`: the body), for a person, in the words of the rule it breaks. */
function problem(path: string, error: ErrorObject): string {
  const name = path === '' ? 'the body' : path
  const parent = (error.parentSchema ?? {}) as Schema
  const {limit} = error.params as {limit: number}
  switch (error.keyword) {
    case 'required': {
      const missing = String(error.params.missingProperty)
      return `${path === '' ? missing : `${path}.${missing}`} is missing`
    }
    case 'additionalProperties': {
      const known = Object.keys((parent.properties ?? {}) as Schema)
      return `${name} has an unknown field ${quoted(String(error.params.additionalProperty))}; its fields are ${known.join(', ')}`
    }
    case 'minItems':
    case 'maxItems': {
      const count = (error.data as unknown[]).length
      const wanted = typeof parent.title === 'string' ? parent.title : error.keyword === 'minItems' ? `at least ${plural(limit, 'item')}` : `at most ${plural(limit, 'item')}`
      return `${name} ${count === 0 ? 'is an empty list' : `has ${plural(count, 'item')}`}: send ${wanted}`
    }
    case 'maxLength':
      return `${name} is too long: at most ${plural(limit, 'character')}`
    case 'minLength':
      return limit === 1 ? `${name} is an empty string` : `${name} is too short: at least ${plural(limit, 'character')}`
    default:
      return `${name} is not valid: expected ${expected(parent)}`
  }
}

/**
 * One field's problem: a rule of its form when its type is one it may have (the other branches of a union then
 * report a type error too), else the types it may have.
 */
function fieldProblem(path: string, errors: ErrorObject[]): string {
  const other = errors.find((e) => e.keyword !== 'type')
  if (other) return problem(path, other)
  const types = errors.map((e) => KINDS[String(e.params.type)] ?? String(e.params.type))
  return `${path === '' ? 'the body' : path} must be ${types.join(' or ')}`
}

/**
 * The one error to report: a field's own problem first (a wrong type, a missing or unknown field, a value not of its
 * form), then a broken "exactly one of" rule, then anything about the body as a whole.
 */
function bodyProblem(errors: ErrorObject[]): string {
  const outsideOneOf = errors.filter((e) => !e.schemaPath.startsWith('#/oneOf') && e.keyword !== 'anyOf')
  const first = outsideOneOf.find((e) => e.instancePath !== '') ?? outsideOneOf[0]
  if (first) return fieldProblem(pathOf(first.instancePath), outsideOneOf.filter((e) => e.instancePath === first.instancePath))
  const oneOf = errors.find((e) => e.keyword === 'oneOf')
  if (oneOf) {
    const names = (oneOf.schema as Schema[]).flatMap((branch) => (branch.required as string[] | undefined) ?? [])
    return `send exactly one of ${names.join(' and ')}`
  }
  return 'the body is not valid'
}

/** Reads a JSON body of at most `limit` bytes and checks it against the schema. */
export function jsonBodyReader<B extends TSchema>(schema: B): (req: IncomingMessage, limits: BodyLimits) => Promise<Static<B>> {
  const validate: ValidateFunction = bodyAjv.compile(schema)
  return async (req, limits) => {
    const text = (await readBody(req, limits)).toString('utf8')
    let value: unknown
    try {
      value = JSON.parse(text)
    } catch {
      // Windows PowerShell and Notepad write one: JSON may not start with it (RFC 8259).
      const bom = text.startsWith('\uFEFF') ? ': it starts with a byte order mark (BOM); send it without one' : ''
      throw new ModError('bad_request', `the body is not valid JSON${bom}`)
    }
    const twice = duplicateKey(text)
    if (twice !== undefined) throw new ModError('bad_request', `the body gives ${JSON.stringify(twice)} more than once in one object; give it once`)
    if (!validate(value)) throw new ModError('bad_request', bodyProblem(validate.errors ?? []))
    return value as Static<B>
  }
}
