import {CategoriesResult} from '../../lib/schemas.js'
import {EXAMPLE_CATEGORIES} from '../examples.js'
import {declareRoute} from '../route.js'

/** GET /v1/categories: the active labels; it reads no model weights, so it does not queue. A head file that cannot be read is a server-side problem (500); nothing here queues or loads the model. */
export const categoriesRoute = declareRoute({
  method: 'GET',
  path: '/v1/categories',
  operationId: 'listCategories',
  summary: 'Categories of the active policy',
  description:
    'Every label that is scored: built-in and custom categories with their prompts and negatives, and ' +
    'the labels of a trained head (which carry no prompts), with parents and thresholds.',
  tags: ['policy'],
  responses: {200: {description: 'The categories in force.', schema: CategoriesResult, example: EXAMPLE_CATEGORIES}},
  errors: ['internal'],
  handler: async (ctx, _req, reply) => reply.send(200, await ctx.engine.categories()),
})
