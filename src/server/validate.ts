import type {IncomingMessage} from 'node:http'

import Ajv2020Module, {type ErrorObject, type ValidateFunction} from 'ajv/dist/2020.js'
import addFormatsModule from 'ajv-formats'
import type {Static, TObject, TSchema} from 'typebox'

import {ModError} from '../lib/errors.js'
import {readBody} from './body.js'
import type {BodyLimits} from './body-stream.js'

/**
 * Request validation from the routes' schemas (ajv, JSON Schema 2020-12): query strings are coerced to
 * the declared types and take the declared defaults; JSON bodies are checked as sent. A problem is
 * `bad_request` with a message naming the parameter or the field.
 */

// Both are CommonJS modules whose default export NodeNext types as the module namespace.
const Ajv2020 = Ajv2020Module as unknown as typeof Ajv2020Module.default
const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default

const queryAjv = new Ajv2020({strict: true, allowUnionTypes: true, coerceTypes: true, useDefaults: true})
// Every error is collected, so that the one reported can be the most specific (see bodyProblem).
const bodyAjv = new Ajv2020({strict: true, allowUnionTypes: true, useDefaults: true, allErrors: true, verbose: true})
addFormats(bodyAjv)

type Schema = Record<string, unknown>

/** A query's values once coerced: the parameters with a default are always present. */
export type QueryValues<Q extends TObject> = Required<Static<Q>>

/** Query text for a boolean beside what ajv coerces (`true`, `false`). */
const BOOLEAN_TEXT: Record<string, boolean> = {true: true, false: false, 1: true, 0: false}

function expected(schema: Schema): string {
  const {type, minimum, maximum} = schema
  if (type === 'boolean') return 'true, false, 1 or 0'
  const kind = type === 'integer' ? 'a whole number' : type === 'number' ? 'a number' : `a ${String(type)}`
  if (minimum !== undefined && maximum !== undefined) return `${kind} from ${minimum} to ${maximum}`
  if (minimum !== undefined) return `${kind} of at least ${minimum}`
  if (maximum !== undefined) return `${kind} of at most ${maximum}`
  return kind
}

/**
 * Reads the declared parameters of a query string into typed values. Parameters the schema does not
 * declare are ignored; a repeated one counts once, with its last value.
 */
export function queryReader<Q extends TObject>(schema: Q): (search: URLSearchParams) => QueryValues<Q> {
  const properties = schema.properties as Record<string, Schema>
  const validate = queryAjv.compile(schema)
  return (search) => {
    const raw: Record<string, string> = {}
    const values: Record<string, unknown> = {}
    for (const [name, text] of search) {
      if (!(name in properties)) continue
      raw[name] = text
      values[name] = properties[name].type === 'boolean' ? (BOOLEAN_TEXT[text] ?? text) : text
    }
    const valid = validate(values)
    // ajv coerces "Infinity" to a number and then skips the range keywords, which only apply to finite ones.
    const bad = valid
      ? Object.keys(raw).find((name) => typeof values[name] === 'number' && !Number.isFinite(values[name]))
      : (validate.errors?.[0]?.instancePath.slice(1) ?? '')
    if (bad !== undefined) {
      throw new ModError('bad_request', `${bad}=${JSON.stringify(raw[bad])} is not valid: expected ${expected(properties[bad] ?? {})}`)
    }
    return values as QueryValues<Q>
  }
}

/**
 * The one error to report: a field's own problem first (a wrong type, an empty string), then a broken
 * "exactly one of" rule, then anything about the body as a whole.
 */
function bodyProblem(errors: ErrorObject[]): string {
  const outsideOneOf = errors.filter((e) => !e.schemaPath.startsWith('#/oneOf') && e.keyword !== 'anyOf')
  const field = outsideOneOf.find((e) => e.instancePath !== '')
  if (field) return `${field.instancePath.slice(1).replaceAll('/', '.')} ${field.message ?? 'is not valid'}`
  const whole = outsideOneOf[0]
  if (whole) return `the body ${whole.message ?? 'is not valid'}`
  const oneOf = errors.find((e) => e.keyword === 'oneOf')
  if (oneOf) {
    const names = (oneOf.schema as Schema[]).flatMap((branch) => (branch.required as string[] | undefined) ?? [])
    return `send exactly one of ${names.join(' and ')}`
  }
  return `the body is not valid: ${errors[0]?.message ?? ''}`
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
