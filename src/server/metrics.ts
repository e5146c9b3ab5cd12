import {createRequire} from 'node:module'

import {AggregatorRegistry, collectDefaultMetrics, Counter, Gauge, Histogram, Registry} from 'prom-client'

import type {EngineObserver} from '../lib/engine.js'

/** Prometheus text format, version 0.0.4. */
export const METRICS_CONTENT_TYPE = Registry.PROMETHEUS_CONTENT_TYPE

/** One serving process's metrics, in a registry of its own (no process-wide registry). */
export interface ServerMetrics {
  registry: Registry
  /**
   * Counts an answered request. Its labels must come from closed sets (the route pattern, not the raw path; a known
   * method or `other`): each new value is a new series. Without `seconds` (a request Node could not parse, whose
   * start is unknown) only the counter is added to.
   */
  request(method: string, route: string, status: number, seconds?: number): void
  /** Where the queue depth is read from at each scrape. */
  watchQueue(depth: () => number): void
  /** Hooks for the engine's batcher and model loading. */
  engine: EngineObserver
  /** Counts a verdict answered synchronously (an image, a batch entry, a video): safe or not, and per violated category. */
  verdict(result: Verdict): void
  /** Counts an error answer by its code. */
  error(code: string): void
}

/** What a verdict counter reads of a moderation or video result. */
export interface Verdict {
  is_safe: boolean
  violations: readonly {name: string}[]
}

/** The versions a build runs with: mod's, Node's and onnxruntime's (the same relative path from src/ and dist/). */
export function buildInfo(): {version: string; node: string; onnxruntime: string} {
  const require = createRequire(import.meta.url)
  return {
    version: (require('../../package.json') as {version: string}).version,
    node: process.versions.node,
    onnxruntime: (require('onnxruntime-node/package.json') as {version: string}).version,
  }
}

export function createServerMetrics(): ServerMetrics {
  const registry = new Registry()
  // process_* and nodejs_*: prom-client gives each an aggregator, so a cluster's sum stays meaningful
  // (memory and CPU summed, event-loop lag averaged, start time left out).
  collectDefaultMetrics({register: registry})
  registerBuildInfo(registry)
  // Registered in the order /metrics lists them.
  const verdict = verdictCounters(registry)
  const errors = new Counter({name: 'mod_errors_total', help: 'Error answers, by error code.', labelNames: ['code'], registers: [registry]})
  const request = requestMetrics(registry)
  const watchQueue = queueDepth(registry)
  const engine = engineMetrics(registry)
  return {registry, request, watchQueue, engine, verdict, error: (code) => errors.inc({code})}
}

function registerBuildInfo(registry: Registry): void {
  new Gauge({
    name: 'mod_build_info',
    help: 'Always 1; the labels name the versions of mod, Node and onnxruntime.',
    labelNames: ['version', 'node', 'onnxruntime'],
    // Every worker runs the same build: one sample, not the number of workers.
    aggregator: 'first',
    registers: [registry],
  }).set(buildInfo(), 1)
}

function verdictCounters(registry: Registry): ServerMetrics['verdict'] {
  const results = new Counter({
    name: 'mod_results_total',
    help: 'Verdicts answered synchronously (images, batch entries, videos), by verdict.',
    labelNames: ['verdict'],
    registers: [registry],
  })
  const violations = new Counter({
    name: 'mod_violations_total',
    help: 'Violations in verdicts answered synchronously, by category.',
    labelNames: ['category'],
    registers: [registry],
  })
  return (result) => {
    results.inc({verdict: result.is_safe ? 'safe' : 'unsafe'})
    for (const v of result.violations) violations.inc({category: v.name})
  }
}

function requestMetrics(registry: Registry): ServerMetrics['request'] {
  const labelNames = ['method', 'route', 'status'] as const
  const requests = new Counter({name: 'mod_http_requests_total', help: 'Requests, by the status of their answer (499: the client went away before any).', labelNames, registers: [registry]})
  const latency = new Histogram({
    name: 'mod_http_request_duration_seconds',
    help: 'Time from the request to the end of its answer.',
    labelNames,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [registry],
  })
  return (method, route, status, seconds) => {
    const labels = {method, route, status: String(status)}
    requests.inc(labels)
    if (seconds !== undefined) latency.observe(labels, seconds)
  }
}

function queueDepth(registry: Registry): ServerMetrics['watchQueue'] {
  let depth = () => 0
  new Gauge({
    name: 'mod_queue_depth',
    help: 'Moderation requests admitted and not finished: receiving, waiting or running.',
    registers: [registry],
    collect() {
      this.set(depth())
    },
  })
  return (read) => {
    depth = read
  }
}

function engineMetrics(registry: Registry): EngineObserver {
  const inference = new Histogram({
    name: 'mod_inference_duration_seconds',
    help: 'Duration of one inference run of the batcher.',
    buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  })
  const batchSize = new Histogram({
    name: 'mod_inference_batch_size',
    help: 'Images (video frames count one each) per inference run.',
    buckets: [1, 2, 4, 8, 16, 32],
    registers: [registry],
  })
  const load = new Gauge({
    name: 'mod_model_load_seconds',
    help: 'How long loading the models took (the slowest worker).',
    aggregator: 'max',
    registers: [registry],
  })
  return {
    batch(size, seconds) {
      batchSize.observe(size)
      inference.observe(seconds)
    },
    loaded: (seconds) => load.set(seconds),
  }
}

/** The cluster primary's own metrics: what only it sees. */
export interface PrimaryMetrics {
  registry: Registry
  workerRestarted(): void
}

export function createPrimaryMetrics(): PrimaryMetrics {
  const registry = new Registry()
  const restarts = new Counter({
    name: 'mod_worker_restarts_total',
    help: 'Workers that exited while serving and were replaced.',
    registers: [registry],
  })
  return {registry, workerRestarted: () => restarts.inc()}
}

/** One worker's metrics as the primary sums them: prom-client's JSON form of its registry. */
export type WorkerMetrics = Awaited<ReturnType<Registry['getMetricsAsJSON']>>

/** In the primary: the workers' metrics summed (the load time is the maximum), then the primary's own. */
export async function clusterMetricsText(workers: WorkerMetrics[], primary: PrimaryMetrics): Promise<string> {
  return `${await AggregatorRegistry.aggregate(workers).metrics()}\n${await primary.registry.metrics()}`
}

/**
 * What a worker that exited leaves in the cluster's sum: `before` (what earlier ones left) plus the counters and
 * histograms of its last metrics, the samples that only grow and are summed. Its gauges (memory, queue depth) went
 * with it.
 */
export async function departedCounters(before: WorkerMetrics, last: WorkerMetrics): Promise<WorkerMetrics> {
  // prom-client's types give `type` as a numeric enum; its JSON holds the name.
  const grows = last.filter((m) => ['counter', 'histogram'].includes(String(m.type)) && (m.aggregator ?? 'sum') === 'sum')
  return AggregatorRegistry.aggregate([before, grows]).getMetricsAsJSON()
}
