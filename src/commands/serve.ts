import cluster from 'node:cluster'

import {Command, Flags} from '@oclif/core'

import {engineFromConfig} from '../cli/engine.js'
import {describeError, EXIT_ERROR} from '../cli/errors.js'
import {modelFlags} from '../cli/flags.js'
import {loadConfig} from '../lib/config/load.js'
import {defaultThreads} from '../lib/model/threads.js'
import {baseUrl, readServeOptions, startupWarnings} from '../server/address.js'
import {killWorkers, primaryStop, reportReady, runPrimary} from '../server/cluster.js'
import {runServer, stopSignals} from '../server/run.js'

export default class Serve extends Command {
  static override description = `Serve the REST API (the same engine as scan) until SIGTERM or Ctrl-C.

Endpoints: GET /health, GET /v1/categories, POST /v1/moderate, /v1/moderate/batch, /v1/moderate/json,
/v1/moderate/video; interactive documentation at /docs, the OpenAPI document at /openapi.json.
With MOD_API_KEY set, every request but GET /health needs the header X-API-Key. Other settings:
MOD_ALLOW_URLS, MOD_PRELOAD, MOD_MAX_BATCH, MOD_MAX_BYTES, MOD_MAX_PIXELS, MOD_MAX_VIDEO_BYTES,
MOD_MAX_VIDEO_SECONDS, MOD_URL_TIMEOUT_MS, MOD_QUEUE_LIMIT. Log lines go to stderr; the first one names
the address ("listening on http://HOST:PORT"). On SIGTERM the server stops accepting connections,
finishes the requests in flight and exits 0; exit code 2 when it cannot start.`

  static override examples = [
    '<%= config.bin %> serve',
    'MOD_API_KEY=secret <%= config.bin %> serve --host 0.0.0.0 --port 8000 --workers 4',
    '<%= config.bin %> serve --port 0 --config policy.yaml --preset balanced',
  ]

  static override flags = {
    host: Flags.string({description: 'Interface to listen on (MOD_HOST; default 127.0.0.1; 0.0.0.0 for every interface).'}),
    port: Flags.integer({description: 'Port (MOD_PORT; default 8000; 0 picks a free one).', min: 0, max: 65_535}),
    workers: Flags.integer({
      description:
        'Processes, each with its own copy of the model and one moderation at a time (MOD_WORKERS; default 1). ' +
        'Unless --threads is given, the cores are divided among them.',
      min: 1,
    }),
    ...modelFlags,
  }

  async run(): Promise<void> {
    const {flags} = await this.parse(Serve)
    const env = process.env
    let options
    let config
    try {
      options = readServeOptions(flags, env)
      config = await loadConfig(flags, env)
    } catch (e) {
      this.logToStderr(describeError(e))
      return this.exit(EXIT_ERROR)
    }
    const {host, workers} = options
    const {settings} = config

    if (cluster.isWorker) {
      const log = (line: string) => process.stderr.write(`worker ${process.pid}: ${line}\n`)
      const stop = Promise.race([stopSignals(log), primaryStop()])
      // The workers share the machine's cores instead of each taking all of them.
      const threads = settings.threads ?? Math.max(1, Math.floor((await defaultThreads()) / workers))
      const engine = engineFromConfig({...config, settings: {...settings, threads}})
      process.exit(await runServer({engine, settings, host, port: options.port, log, onListening: reportReady, stop}))
    }

    const log = (line: string) => process.stderr.write(`${line}\n`)
    for (const warning of startupWarnings(host, settings)) log(warning)
    if (workers > 1) {
      process.exit(await runPrimary({workers, host, port: options.port, log}, stopSignals(log, killWorkers)))
    }
    const code = await runServer({
      engine: engineFromConfig(config),
      settings,
      host,
      port: options.port,
      log,
      onListening: (port) => log(`listening on ${baseUrl(host, port)}`),
      stop: stopSignals(log),
    })
    process.exit(code)
  }
}
