// mod's ajv instances compile without checking schemas against the JSON Schema 2020-12 meta-schema (each such check
// cost a process 30 ms of CPU). This file checks, once, every schema they compile: each route's query, path
// parameters, bodies and answers, the error body, the job records kept in Redis, and the answers `mod scan --server`
// reads, as JSON Schema 2020-12 (meta-schema) that compiles in strict mode.
import type {AnySchema} from 'ajv/dist/2020.js'
import {test} from 'uvu'
import * as assert from 'uvu/assert'

import {DEFAULT_LIMITS} from '../../src/lib/config/settings.js'
import {CategoriesResult, ErrorEntry, ModerationResult, Segment, VideoResult} from '../../src/lib/schemas.js'
import {createAjv} from '../../src/server/ajv.js'
import {ImageJob} from '../../src/server/jobs/images/schema.js'
import {Job} from '../../src/server/jobs/schema.js'
import {ROUTES} from '../../src/server/routes/index.js'
import {ErrorBody} from '../../src/server/schemas.js'

/** A schema as ajv takes it (TypeBox's types lack the index signature ajv's type has). */
type Schema = object

function routeSchemas(): [string, Schema][] {
  return ROUTES.flatMap((r): [string, Schema][] => {
    const name = `${r.method} ${r.path}`
    const bodies = [r.body, r.upload].flatMap((b): [string, Schema][] => (b ? [[`${name} body`, typeof b.schema === 'function' ? b.schema(DEFAULT_LIMITS) : b.schema]] : []))
    return [
      ...(r.query ? [[`${name} query`, r.query] satisfies [string, Schema]] : []),
      ...Object.entries(r.pathParams ?? {}).map(([p, param]): [string, Schema] => [`${name} {${p}}`, param.schema]),
      ...bodies,
      ...Object.entries(r.responses).map(([status, s]): [string, Schema] => [`${name} ${status}`, s.schema]),
    ]
  })
}

const OTHERS: [string, Schema][] = Object.entries({ErrorBody, ImageJob, Job, CategoriesResult, ErrorEntry, ModerationResult, Segment, VideoResult})

test('every schema mod compiles is JSON Schema 2020-12 and compiles in strict mode', () => {
  const schemas = [...routeSchemas(), ...OTHERS]
  assert.ok(schemas.length > 30, `${schemas.length} schemas`)
  for (const [name, schema] of schemas) {
    const checking = createAjv({validateSchema: true})
    assert.ok(checking.validateSchema(schema as AnySchema), `${name}: ${checking.errorsText(checking.errors)}`)
    assert.type(checking.compile(schema as AnySchema), 'function', name)
  }
})

test('the check refuses a schema that breaks the meta-schema, which ajv as mod sets it up compiles unseen', () => {
  // An annotation of the wrong type: strict compiling passes over it, the meta-schema does not.
  const broken = {type: 'object', properties: {size: {type: 'integer', title: 7}}}
  const checking = createAjv({validateSchema: true})
  assert.not.ok(checking.validateSchema(broken))
  assert.match(checking.errorsText(checking.errors), /title must be string/)
  assert.type(createAjv().compile(broken), 'function')
})

test.run()
