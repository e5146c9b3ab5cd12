import type {IncomingMessage, ServerResponse} from 'node:http'

import type {ServerSettings} from '../lib/config/settings.js'
import type {Engine} from '../lib/engine.js'
import type {ImageFetcher} from '../lib/fetch/url.js'
import type {Log} from './errors.js'
import type {Verdict} from './metrics.js'
import type {JobQueue} from './jobs/types.js'
import type {ImageJobQueue} from './jobs/images/types.js'
import type {ModelLoad} from './model-load.js'
import type {Gate} from './queue.js'

/** What every route needs, built once per server by buildServer. */
export interface RouteContext {
  engine: Engine
  /** Loads the engine's model on first use (MOD_PRELOAD=false) and remembers whether the last attempt failed. */
  model: ModelLoad
  settings: ServerSettings
  gate: Gate
  /** Asynchronous video jobs (in-process, or BullMQ on Redis). */
  jobs: JobQueue
  /** Bulk image jobs, run in chunks (in-process, or BullMQ on Redis). */
  imageJobs: ImageJobQueue
  /** Video uploads go to a fresh folder under this one (made when first needed), removed when the request ends. */
  tmpDir: string
  log: Log
  /** fetchImageUrl with the server's size and time limits. */
  fetchImage: ImageFetcher
  /** True once the server is shutting down: /ready answers 503 so load balancers stop sending traffic. */
  draining: () => boolean
  /** The version of mod serving (package.json). */
  version: string
  /**
   * Counts a verdict answered synchronously (GET /metrics), called just before `res` carries it: one whose client
   * has gone (its request counted 499) is not answered, so not counted.
   */
  verdict: (res: ServerResponse, result: Verdict) => void
  /** What GET /metrics answers (Prometheus text). */
  metricsText: () => Promise<string>
  /**
   * The name of the API key the request came with (MOD_API_KEY's is `default`, MOD_API_KEYS' their own): the owner
   * of the jobs it makes, and the only one that sees them. Undefined when the server needs no key.
   */
  owner: (req: IncomingMessage) => string | undefined
}

/** A request as polka hands it over: `path` is the pathname, `url` still carries the query. */
export type Request = IncomingMessage & {path: string}
