// Checked by `npm run typecheck`, never run: a route's Reply admits only its declared answers. Each expected
// error below fails the typecheck if the types ever let that answer through.
import {Ready} from '../../src/server/schemas.js'
import {Job} from '../../src/server/jobs/schema.js'
import {declareRoute, type Operation} from '../../src/server/route.js'
import {LOCATION} from '../../src/server/routes/jobs.js'

const declaration: Omit<Operation, 'responses'> = {method: 'GET', path: '/x', operationId: 'x', summary: '', description: '', tags: ['service'], errors: []}

export const ready = declareRoute({
  ...declaration,
  responses: {200: {description: '', schema: Ready}},
  handler: async (_ctx, _req, reply) => {
    reply.send(200, {status: 'ready', coverage: {evaluated: 0, total: 0, not_evaluated: []}})
    // @ts-expect-error a body that is not of the declared schema
    reply.send(200, {status: 'ok', coverage: {evaluated: 0, total: 0, not_evaluated: []}})
    // @ts-expect-error a status the route does not declare
    reply.send(202, {status: 'ready', coverage: {evaluated: 0, total: 0, not_evaluated: []}})
  },
})

export const job = declareRoute({
  ...declaration,
  responses: {202: {description: '', schema: Job, headers: LOCATION}},
  handler: async (_ctx, _req, reply) => {
    const body = {} as Parameters<typeof reply.send>[1]
    reply.send(202, body, {Location: '/v1/jobs/x'})
    // @ts-expect-error the declared Location header is missing
    reply.send(202, body)
  },
})

export const text = declareRoute({
  ...declaration,
  responses: {200: {description: '', media: 'text/plain', schema: {type: 'string'}}},
  handler: async (_ctx, _req, reply) => {
    // @ts-expect-error an answer declared as text is written on reply.raw, not sent as JSON
    reply.send(200, 'text')
  },
})
