import type {IncomingMessage} from 'node:http'

import type {ErrorObject, ValidateFunction} from 'ajv/dist/2020.js'
import type {Static, TObject, TSchema} from '../lib/typebox.js'

import {ModError} from '../lib/errors.js'
import {createAjv} from './ajv.js'
import {readBody} from './body.js'
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

/** What a value of `schema` looks like, for a person: its `title` when it has one (a string of some form). */
function expected(schema: Schema): string {
  const {type, minimum, maximum, title} = schema
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

const invalidText = (name: string, text: string, schema: Schema): ModError =>
  new ModError('bad_request', `${name}=${JSON.stringify(text)} is not valid: expected ${expected(schema)}`)

/**
 * The text of a number as a query may give it: plain decimal without a sign, digits only for an integer. What ajv
 * coerces besides (JavaScript's Number(): `0x1`, `1e0`, `+1`, ` 1`, `Infinity`) is refused, as is an integer past
 * 2^53 that Number() would round to another one.
 */
function plainNumber(text: string, type: unknown): boolean {
  if (type === 'integer') return /^[0-9]+$/.test(text) && Number.isSafeInteger(Number(text))
  return type !== 'number' || /^[0-9]+(?:\.[0-9]+)?$/.test(text)
}

/**
 * Reads the declared parameters of a query string into typed values. Parameters the schema does not declare are
 * ignored; a declared one given twice is refused (which of its values was meant cannot be known), and so is a
 * number not in plain decimal.
 */
export function queryReader<Q extends TObject>(schema: Q): (search: URLSearchParams) => QueryValues<Q> {
  const properties = schema.properties as Record<string, Schema>
  const validate = textAjv.compile(schema)
  return (search) => {
    const raw: Record<string, string> = {}
    const values: Record<string, unknown> = {}
    for (const [name, text] of search) {
      if (!(name in properties)) continue
      if (name in raw) throw new ModError('bad_request', `the query gives ${name} more than once; give it once`)
      raw[name] = text
      const {type} = properties[name]
      if (!plainNumber(text, type)) throw invalidText(name, text, properties[name])
      values[name] = type === 'boolean' ? (BOOLEAN_TEXT[text] ?? text) : text
    }
    if (!validate(values)) {
      const bad = validate.errors?.[0]?.instancePath.slice(1) ?? ''
      throw invalidText(bad, raw[bad], properties[bad] ?? {})
    }
    return values as QueryValues<Q>
  }
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

/**
 * One field's problem, for a person: an empty string or a value not of its form when its type is one it may have
 * (the other branches of a union then report a type error too), else the types it may have.
 */
function fieldProblem(name: string, errors: ErrorObject[]): string {
  const other = errors.find((e) => e.keyword !== 'type')
  if (other?.keyword === 'minLength' && other.params.limit === 1) return `${name} is an empty string`
  if (other) return `${name} is not valid: expected ${expected((other.parentSchema ?? {}) as Schema)}`
  const types = errors.map((e) => KINDS[String(e.params.type)] ?? String(e.params.type))
  return `${name} must be ${types.join(' or ')}`
}

/**
 * The one error to report: a field's own problem first (a wrong type, an empty string, a value not of its form),
 * then a broken "exactly one of" rule, then anything about the body as a whole.
 */
function bodyProblem(errors: ErrorObject[]): string {
  const outsideOneOf = errors.filter((e) => !e.schemaPath.startsWith('#/oneOf') && e.keyword !== 'anyOf')
  const field = outsideOneOf.find((e) => e.instancePath !== '')
  if (field) {
    const name = field.instancePath.slice(1).replaceAll('/', '.')
    return fieldProblem(name, outsideOneOf.filter((e) => e.instancePath === field.instancePath))
  }
  const whole = outsideOneOf[0]
  if (whole) return whole.keyword === 'type' ? fieldProblem('the body', [whole]) : 'the body is not valid'
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
      throw new ModError('bad_request', 'the body is not valid JSON')
    }
    if (!validate(value)) throw new ModError('bad_request', bodyProblem(validate.errors ?? []))
    return value as Static<B>
  }
}
