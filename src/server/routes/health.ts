import type {Static} from '../../lib/typebox.js'

import {coverageOf} from '../../lib/signals/listing.js'
import type {RouteContext} from '../context.js'
import {jobsUnavailable} from '../jobs/availability.js'
import {EXAMPLE_HEALTH} from '../examples.js'
import {policyDigest} from '../policy-digest.js'
import {declareRoute} from '../route.js'
import {Health} from '../schemas.js'

/** Where the jobs API keeps its jobs, and whether it reaches Redis now. */
function jobsState(ctx: RouteContext): Static<typeof Health>['jobs'] {
  if (jobsUnavailable(ctx.settings) !== undefined) return 'off'
  if (ctx.settings.jobs.redisUrl === undefined) return 'in_process'
  return ctx.jobs.reachable() && ctx.imageJobs.reachable() ? 'redis' : 'redis_unreachable'
}

/** What GET /health answers: the version, which signals are loaded and what each category's state is. */
async function healthOf(ctx: RouteContext): Promise<Static<typeof Health>> {
  const categories = await ctx.engine.categoryStates()
  return {
    status: 'ok',
    version: ctx.version,
    model_loaded: ctx.engine.isLoaded(),
    signals: ctx.engine.signals(),
    coverage: coverageOf(categories),
    categories,
    policy: {sha256: policyDigest(ctx.engine.policy)},
    jobs: jobsState(ctx),
    limits: {max_batch: ctx.settings.limits.maxBatch, max_bytes: ctx.settings.limits.maxBytes, max_batch_bytes: ctx.settings.limits.maxBatchBytes},
  }
}

/**
 * GET /health: liveness for load balancers. Public: load balancers and container health checks call it without
 * the key; it never waits in the queue (the states read no model weights).
 */
export const healthRoute = declareRoute({
  method: 'GET',
  path: '/health',
  operationId: 'getHealth',
  summary: 'Health status',
  description:
    'Always public (never needs `X-API-Key`). `model_loaded` is false until the model is in memory. `categories` ' +
    'says for each category of the policy whether results score it and by which signals, or why not and what adds ' +
    'it (e.g. a CLIP model that is not installed: `mod models pull fast`); `coverage` counts them. A category that ' +
    'is not evaluated is never a violation, so `is_safe` does not cover it. `policy` identifies the policy in force and ' +
    '`limits` gives the upload limits (both used by `mod scan --server`). `jobs` says where the jobs API keeps its ' +
    'jobs, and whether it reaches Redis now.',
  tags: ['service'],
  security: [],
  responses: {200: {description: 'The server is up.', schema: Health, example: EXAMPLE_HEALTH}},
  errors: [],
  handler: async (ctx, _req, reply) => reply.send(200, await healthOf(ctx)),
})
