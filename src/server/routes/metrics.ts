import type {RouteContext} from '../context.js'
import {METRICS_CONTENT_TYPE} from '../metrics.js'
import {declareRoute} from '../route.js'
import type {ServerResponse} from 'node:http'

/** GET /metrics: Prometheus text; under `--workers N`, the sum over every worker plus the primary's own. */
async function metrics(ctx: RouteContext, res: ServerResponse): Promise<void> {
  const text = await ctx.metricsText()
  res.statusCode = 200
  res.setHeader('Content-Type', METRICS_CONTENT_TYPE)
  res.setHeader('Content-Length', Buffer.byteLength(text))
  res.setHeader('Cache-Control', 'no-store')
  res.end(text)
}

const EXAMPLE_METRICS = [
  '# HELP mod_http_requests_total Requests, by the status of their answer (499: the client went away before any).',
  '# TYPE mod_http_requests_total counter',
  'mod_http_requests_total{method="POST",route="/v1/moderate",status="200"} 42',
  '',
].join('\n')

export const metricsRoute = declareRoute({
  method: 'GET',
  path: '/metrics',
  operationId: 'getMetrics',
  summary: 'Metrics in Prometheus text format',
  description:
    'Requests (`mod_http_requests_total`, `mod_http_request_duration_seconds` by method, route and status), ' +
    '`mod_queue_depth`, `mod_inference_duration_seconds`, `mod_inference_batch_size`, `mod_model_load_seconds`, ' +
    'verdicts answered synchronously (`mod_results_total{verdict="safe|unsafe"}`, `mod_violations_total{category}`), ' +
    'error answers (`mod_errors_total{code}`), `mod_build_info{version,node,onnxruntime}` (always 1), prom-client\'s ' +
    '`process_*` and `nodejs_*` defaults and, with more than one worker, `mod_worker_restarts_total`; summed over ' +
    'the workers (the build info is one sample, the event-loop lag an average). Needs the API key like the other endpoints.',
  tags: ['service'],
  responses: {
    200: {
      description: 'Prometheus text exposition format 0.0.4.',
      media: 'text/plain',
      schema: {type: 'string'},
      example: EXAMPLE_METRICS,
    },
  },
  errors: ['internal'],
  handler: (ctx, _req, reply) => metrics(ctx, reply.raw),
})
