import cluster from 'node:cluster'

import {Flags} from '@oclif/core'

import {ModCommand} from '../cli/base-command.js'
import {modelFlags, settingsInput} from '../cli/flags.js'
import type {EnvVars} from '../cli/help.js'
import {hostFlag, sizeFlag, wholeNumberFlag} from '../cli/value-flags.js'
import {loadConfig} from '../lib/config/load.js'
import {DEFAULT_HOST, DEFAULT_PORT, DEFAULT_WORKERS, MAX_WORKERS, SETTING_VARIABLES} from '../lib/config/settings.js'
import {baseUrl, checkListenable, startupWarnings} from '../server/address.js'
import {killWorkers, metricsFromPrimary, primaryStop, reportReady, runPrimary, sendMetricsToPrimary} from '../server/cluster.js'
import {jobsUnavailable} from '../server/jobs/availability.js'
import {createLogger, logTo, prettyDestination} from '../server/logger.js'
import {createPrimaryMetrics, createServerMetrics} from '../server/metrics.js'
import {stopSignals} from '../server/lifecycle.js'

export default class Serve extends ModCommand {
  static override description = `Serve the REST API (the same engine as scan) until SIGTERM, SIGHUP (a closed terminal) or Ctrl-C.

Endpoints: GET /health (liveness), GET /ready (readiness: 503 until the model is loaded and from SIGTERM on), GET /metrics, GET /v1/categories, POST /v1/moderate, /v1/moderate/batch, /v1/moderate/json, /v1/moderate/video, POST /v1/jobs/video (long videos as jobs), POST /v1/jobs/images (many images as one job), GET|DELETE /v1/jobs/{id} and GET /v1/jobs/{id}/results; interactive documentation at /docs, the OpenAPI document at /openapi.json.

With MOD_API_KEY set, every request but GET /health, GET /ready and the documentation (/docs, /openapi.json) needs the header X-API-Key. Log lines go to stderr, one JSON object per line (level, time, pid, worker, msg; one "request" line per request with method, path, status, bytes, duration_ms, request_id), or a short text form when stderr is a terminal; the first info line names the address ("listening on http://HOST:PORT"). GET /metrics answers Prometheus text. On SIGTERM, SIGHUP or Ctrl-C the server (after MOD_DRAIN_DELAY_MS of answering /ready with 503) stops accepting connections, finishes the requests in flight and exits 0; a second signal ends it at once, of that signal (a shell reports 128 + its number: 143 for SIGTERM, 130 for Ctrl-C, 129 for SIGHUP).`

  static override examples = [
    '<%= config.bin %> serve',
    '$ MOD_API_KEY=secret <%= config.bin %> serve --host 0.0.0.0 --port 8000 --workers 4',
    '<%= config.bin %> serve --port 0 --config policy.yaml --preset balanced',
  ]

  static override ownSignals = true

  static override envVars: EnvVars = [
    ['MOD_API_KEY', 'the X-API-Key value every request but GET /health, GET /ready and the documentation must carry (whitespace around it is dropped; empty: no key)'],
    ['MOD_API_KEYS', 'more keys, each named: name:key pairs separated by commas; a job is seen only with the key that made it'],
    ['MOD_ALLOW_URLS', 'allow "url" in POST /v1/moderate/json (default false)'],
    ['MOD_PRELOAD', 'load the model before the port opens (default true)'],
    ['MOD_MAX_BYTES', 'largest image (default 25 MiB)'],
    ['MOD_MAX_PIXELS', 'largest decoded image, width x height (default 100000000)'],
    ['MOD_MAX_BATCH', 'files per batch request (default 16)'],
    ['MOD_MAX_BATCH_BYTES', 'the files of one batch request together (default 100 MiB)'],
    ['MOD_MAX_BUFFERED_BYTES', 'request bytes a worker holds in memory before 503 overloaded (default 256 MiB)'],
    ['MOD_MAX_VIDEO_BYTES', 'largest video upload (default 200 MiB)'],
    ['MOD_MAX_VIDEO_SECONDS', 'longest video (default 600)'],
    ['MOD_URL_TIMEOUT_MS', 'total time of one URL fetch (default 10000)'],
    ['MOD_QUEUE_LIMIT', 'requests waiting per worker before 503 overloaded (default 64)'],
    ['MOD_MAX_UPLOADS', 'request bodies being received per worker before 503 overloaded (default 2 x (MOD_QUEUE_LIMIT + 1))'],
    ['MOD_BODY_TIMEOUT_MS', 'a request body that sends nothing for this long is answered 408 (default 30000)'],
    ['MOD_TEXT_BUDGET', "recogniser columns the text rules' reader may spend per image, over the policy's text.budget (default 32768)"],
    ['MOD_FFMPEG', 'the ffmpeg binary for video'],
    ['MOD_CORS_ORIGINS', 'origins browsers may call from, comma-separated, or * (default: no CORS)'],
    ['MOD_DRAIN_DELAY_MS', 'after SIGTERM, ms of /ready answering 503 before the port closes (default 0)'],
    ['MOD_KEEPALIVE_TIMEOUT_MS', "ms an idle connection is kept for the client's next request; behind a proxy or balancer, set it above the proxy's idle timeout (default 5000)"],
    ['MOD_LOG_LEVEL', 'error, warn, info or debug (default info)'],
    ['MOD_SERVER_TIMING', 'moderation answers carry a Server-Timing header: the time of each step, in ms (default false)'],
    ['MOD_REDIS_URL', 'jobs on BullMQ on this Redis (default: an in-process queue, one worker only: with --workers > 1 the job routes answer 503 jobs_unavailable)'],
    ['MOD_JOB_STORAGE', 'where job uploads wait; with Redis a folder every node mounts (default: a folder in the temp dir)'],
    ['MOD_JOB_TTL', 'seconds a finished job stays readable (default 3600)'],
    ['MOD_SERVE_JOBS', 'run jobs in this process too (default true)'],
    ['MOD_CALLBACK_SECRET', 'key of the X-Mod-Signature HMAC-SHA256 of job callbacks'],
    ['MOD_CALLBACK_ALLOW_PRIVATE', 'let callbacks reach private addresses (default false)'],
    ['MOD_MAX_JOB_ITEMS', 'items in one image job (default 10000)'],
    ['MOD_MAX_JOB_BYTES', 'uploaded files of one image job together (default 2GB)'],
    ['MOD_MAX_JOBS_PER_CLIENT', 'image jobs not done yet per client address (default 4)'],
  ]

  static override exitCodes: [string, string][] = [
    ['0', 'stopped by SIGTERM, SIGHUP or Ctrl-C after finishing the requests in flight'],
    ['2', 'it could not start: configuration, model or address error'],
    ['129', 'a second signal, SIGHUP: ended by it at once, without waiting'],
    ['130', 'a second signal, Ctrl-C: ended by it at once, without waiting'],
    ['143', 'a second signal, SIGTERM: ended by it at once, without waiting'],
  ]

  static override flags = {
    host: hostFlag({
      description: 'Interface to listen on; 0.0.0.0 for every interface.',
      env: SETTING_VARIABLES.host,
      default: DEFAULT_HOST,
    }),
    port: wholeNumberFlag({description: 'Port; 0 picks a free one.', min: 0, max: 65_535, env: SETTING_VARIABLES.port, default: DEFAULT_PORT}),
    workers: wholeNumberFlag({
      description:
        "Processes, each with its own engine, inferring one batch at a time while it receives and decodes the next requests; the model's weights are mapped from their files and shared, so each more worker costs about 125 MiB after a few requests, and up to some 75 MiB more under steady load (docs/operations.md). " +
        `Unless --threads is given, the cores are divided among them. At most ${MAX_WORKERS}.`,
      min: 1,
      max: MAX_WORKERS,
      env: SETTING_VARIABLES.workers,
      default: DEFAULT_WORKERS,
    }),
    'body-min-rate': sizeFlag({
      description:
        'Bytes per second a request body must average after its first MOD_BODY_TIMEOUT_MS, e.g. 8KB; slower is ' +
        'answered 408, so clients that trickle cannot hold the upload places. When every place is taken, a body ' +
        'slower than that since its first byte (after 1 s) gives its place to a new request at once (408).',
      env: SETTING_VARIABLES.bodyMinRate,
      defaultHelp: async () => '8KB',
    }),
    'max-uploads-per-client': wholeNumberFlag({
      description: 'Request bodies one client address (an IPv6 /64) may be sending at once per worker; more is answered 429.',
      min: 1,
      env: SETTING_VARIABLES.maxUploadsPerClient,
      defaultHelp: async () => 'MOD_MAX_UPLOADS / 4',
    }),
    ...modelFlags,
  }

  async run(): Promise<void> {
    const {flags} = await this.parse(Serve)
    const config = await loadConfig(settingsInput(flags), process.env)
    const settings = config.settings.server
    const {host, workers, port} = settings

    const logger = createLogger({
      level: settings.logLevel,
      destination: process.stderr.isTTY ? prettyDestination((text) => process.stderr.write(text)) : undefined,
      base: {worker: cluster.worker?.id ?? 0},
    })
    const log = logTo(logger)

    // Only a serving process loads the engine and the server (onnxruntime, sharp, the routes): the primary of
    // --workers N stays small, since its memory is paid once more beside the workers'.
    const serving = async () => ({
      ...(await import('../lib/compose.js')),
      ...(await import('../server/run.js')),
      ...(await import('../lib/model/threads.js')),
    })

    if (cluster.isWorker) {
      const {defaultThreads, engineFromConfig, runServer} = await serving()
      const metrics = createServerMetrics()
      const stop = Promise.race([stopSignals(log), primaryStop()])
      // The workers share the machine's cores instead of each taking all of them.
      const threads = config.settings.engine.threads ?? Math.max(1, Math.floor((await defaultThreads()) / workers))
      const engine = engineFromConfig({...config, settings: {...config.settings, engine: {...config.settings.engine, threads}}}, {observer: metrics.engine, eager: true})
      sendMetricsToPrimary(() => metrics.registry.getMetricsAsJSON())
      const server = {logger, metrics, metricsText: metricsFromPrimary()}
      process.exit(await runServer({engine, settings, host, port, log, onListening: reportReady, stop, server}))
    }

    // Before the first warning: a server that cannot listen there must not look as if it were starting.
    await checkListenable(host, port)
    for (const warning of startupWarnings(host, settings)) log(warning, 'warn')
    const jobsOff = jobsUnavailable(settings)
    if (jobsOff !== undefined) log(`job routes answer 503 jobs_unavailable: ${jobsOff}`, 'warn')
    if (workers > 1) {
      const primaryMetrics = createPrimaryMetrics()
      process.exit(await runPrimary({workers, host, port, log, metrics: primaryMetrics, jobStorage: settings.jobs.storage}, stopSignals(log, killWorkers)))
    }
    const {engineFromConfig, runServer} = await serving()
    const metrics = createServerMetrics()
    const code = await runServer({
      engine: engineFromConfig(config, {observer: metrics.engine, eager: true}),
      settings,
      host,
      port,
      log,
      onListening: (port) => log(`listening on ${baseUrl(host, port)}`, 'info'),
      stop: stopSignals(log),
      server: {logger, metrics},
    })
    process.exit(code)
  }
}
