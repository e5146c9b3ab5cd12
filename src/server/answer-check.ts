import type {ErrorObject, ValidateFunction} from 'ajv/dist/2020.js'
import type {TSchema} from '../lib/typebox.js'

import {createAjv} from './ajv.js'
import type {Success} from './route.js'
import {ErrorBody} from './schemas.js'

/**
 * Every JSON answer is checked against the schema its route declares for its status (ajv, compiled once per schema
 * and process, when an answer of that schema is first sent: a few milliseconds each, where compiling every route's
 * at start cost each server 0.1 s of CPU, most of it for routes it may never answer). Cheap beside a request (a
 * /v1/moderate result takes about a microsecond, see docs/development.md), so the server checks in production too:
 * an answer that breaks its schema is a bug of the server, and the client gets 500 `internal` rather than a body
 * its generated client would misread.
 */

// Without ajv's optimisation pass, compiling every answer's schema takes half as long (about 0.1 s), and a check
// stays about a microsecond.
const ajv = createAjv({allErrors: true, code: {optimize: false}})
const compiled = new WeakMap<object, ValidateFunction>()

function validatorOf(schema: object): ValidateFunction {
  let validate = compiled.get(schema)
  if (!validate) {
    validate = ajv.compile(schema)
    compiled.set(schema, validate)
  }
  return validate
}

const describeErrors = (errors: ErrorObject[] | null | undefined): string =>
  (errors ?? [])
    .slice(0, 8)
    .map((e) => `${e.instancePath || '(root)'} ${e.message ?? ''}`)
    .join('; ')

/** Why `body` breaks `schema`, or undefined when it matches. */
export function schemaProblem(schema: object, body: unknown): string | undefined {
  const validate = validatorOf(schema)
  return validate(body) ? undefined : describeErrors(validate.errors)
}

/** The TypeBox schema of a JSON success answer, or undefined where the answer is not JSON (text, NDJSON, HTML). */
export function jsonSchemaOf(success: Success | undefined): TSchema | undefined {
  if (!success || (success.media !== undefined && success.media !== 'application/json')) return undefined
  return success.schema as TSchema
}

/** Why an error body breaks the Error schema (a request_id included), or undefined. */
export const errorBodyProblem = (body: unknown): string | undefined => schemaProblem(ErrorBody, body)
