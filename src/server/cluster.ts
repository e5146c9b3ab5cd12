import cluster, {type Worker} from 'node:cluster'

import {ModError} from '../lib/errors.js'
import {plural} from '../lib/plural.js'
import {baseUrl} from './address.js'
import {describe, type Log} from './errors.js'
import {clusterMetricsText, departedCounters, type PrimaryMetrics, type WorkerMetrics} from './metrics.js'
import {EXIT_OK, EXIT_START_FAILED, sweepLeftovers, uploadRoots} from './lifecycle.js'

type ToWorker = {type: 'shutdown'} | {type: 'metrics'; id: number; text?: string; error?: string} | {type: 'collect'; id: number}
type FromWorker =
  | {type: 'ready'; port: number}
  | {type: 'metrics'; id: number}
  | {type: 'collected'; id: number; metrics?: WorkerMetrics; error?: string}

/**
 * glibc's allocator keeps a varying 35-240 MiB of what onnxruntime frees while loading a model unless its mmap
 * threshold is fixed (large blocks then go back to the system when freed), and gives each thread that allocates
 * an arena of its own (onnxruntime's, libvips's and libuv's threads: each arena keeps what it freed); two arenas
 * left 4-11 MiB less per worker in two measurements (bench/README.md, memory). glibc reads both only when a process starts, so the
 * primary starts its workers with them, as the container image does for its process.
 */
export const WORKER_MALLOC_ENV = {MALLOC_MMAP_THRESHOLD_: '1048576', MALLOC_ARENA_MAX: '2'}

/** What a worker's environment adds to the primary's: each malloc setting the user did not choose. */
export function workerEnv(env: NodeJS.ProcessEnv): Record<string, string> {
  return Object.fromEntries(Object.entries(WORKER_MALLOC_ENV).filter(([name]) => env[name] === undefined))
}

/**
 * V8's young generation grows to two 16 MiB semi-spaces under a worker's request load and keeps them. Capped at
 * 4 MiB each, a worker holds about 24 MiB less at no measurable cost (median request time +2% and -2% in two runs
 * on a busy machine, where two identical servers differed by 5%); 1 or 2 MiB saved a few MiB more but made
 * requests 16-20% slower (more scavenges).
 */
export const WORKER_SEMI_SPACE_FLAG = '--max-semi-space-size=4'

/** A worker's node options: the primary's, plus the semi-space cap unless the user set a semi-space size. */
export function workerExecArgv(execArgv: readonly string[], nodeOptions = ''): string[] {
  const chosen = [...execArgv, nodeOptions].some((option) => /semi[-_]space/.test(option))
  return chosen ? [...execArgv] : [...execArgv, WORKER_SEMI_SPACE_FLAG]
}

/** A worker that dies before it is ready is replaced only after this pause, so a broken model cannot spin. */
const RESTART_DELAY_MS = 1000

/** How long the primary waits for a ready worker's metrics before the scrape fails (prom-client's own wait). */
const COLLECT_TIMEOUT_MS = 5000

export interface PrimaryOptions {
  workers: number
  host: string
  port: number
  log: Log
  metrics: PrimaryMetrics
  /** MOD_JOB_STORAGE: a worker killed mid-upload leaves its job uploads there too. */
  jobStorage: string
}

/**
 * The cluster primary of `mod serve --workers N`: forks N workers (each runs the same command, loads
 * its own model and listens on the shared port), prints the address once all are ready, replaces a
 * worker that exits while serving, and on SIGTERM/SIGINT/SIGHUP asks every worker to finish its requests and
 * stop. Resolves with the exit code: 0 after a graceful stop, 2 when the workers could not start.
 *
 * Workers listen on the port as given: node:cluster shares one listening socket per (host, port) among
 * them, so with --port 0 a replacement joins the port the others hold (a new one only if all died).
 */
export function runPrimary(o: PrimaryOptions, stop: Promise<unknown>): Promise<number> {
  return new Promise((resolve) => {
    let started = false
    let stopping = false
    let failed = false
    const ready = new Set<Worker>()
    // A worker stays in cluster.workers until it has both exited and disconnected, in either order: one whose exit is
    // being handled may still be listed, and the last one's would then never settle the stop (exit 13: a top-level
    // await left unsettled).
    const alive = () => Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined && !w.isDead())
    const collect = collector()
    // Each worker's metrics as last scraped, and the counters of the workers that exited since: a sum that fell back
    // when a worker died would read to Prometheus as a reset of every counter, and rate() would count the survivors'
    // whole totals again. What a worker counted after its last scrape is lost with it.
    const lastScraped = new Map<Worker, WorkerMetrics>()
    let departed: Promise<WorkerMetrics> = Promise.resolve([])
    const scrape = (worker: Worker) =>
      collect.from(worker).then((metrics) => {
        if (metrics !== undefined && !worker.isDead()) lastScraped.set(worker, metrics)
        return metrics
      })

    // A worker answering GET /metrics asks for the sum over all workers, which only the primary can collect: over
    // the ready ones, as one still starting cannot answer yet (and has counted nothing).
    const sendMetrics = (worker: Worker, id: number) => {
      const reply = (answer: ToWorker) => worker.isConnected() && worker.send(answer)
      Promise.all([departed, ...[...ready].filter((w) => w.isConnected()).map(scrape)])
        .then((all) => clusterMetricsText(all.filter((m): m is WorkerMetrics => m !== undefined), o.metrics))
        .then(
          (text) => reply({type: 'metrics', id, text}),
          (e: unknown) => reply({type: 'metrics', id, error: describe(e)}),
        )
    }

    const fork = () => {
      const worker = cluster.fork(workerEnv(process.env))
      o.log(`worker ${worker.process.pid} started`, 'info')
      worker.on('message', (message: FromWorker) => {
        if (message?.type === 'metrics') sendMetrics(worker, message.id)
        if (message?.type === 'collected') collect.received(message)
        if (message?.type !== 'ready') return
        ready.add(worker)
        o.log(`worker ${worker.process.pid} ready`, 'info')
        if (!started && ready.size === o.workers) {
          started = true
          o.log(`listening on ${baseUrl(o.host, message.port)} (${plural(o.workers, 'worker')})`, 'info')
        }
      })
    }

    // A ready worker listens for the request to finish its work; one still starting has no request in
    // flight and may not listen for messages yet, so SIGTERM ends it (gracefully if it can already).
    const shutdown = () => {
      stopping = true
      for (const worker of alive()) {
        if (ready.has(worker) && worker.isConnected()) worker.send({type: 'shutdown'} satisfies ToWorker)
        else worker.process.kill('SIGTERM')
      }
      if (alive().length === 0) resolve(failed ? EXIT_START_FAILED : EXIT_OK)
    }

    cluster.on('exit', (worker, code, signal) => {
      // A worker killed mid-upload leaves its upload folder: removed now rather than at the next sweep.
      void sweepLeftovers(o.log, uploadRoots(o.jobStorage))
      const last = lastScraped.get(worker)
      lastScraped.delete(worker)
      if (last) departed = departed.then((before) => departedCounters(before, last).catch(() => before))
      const wasReady = ready.delete(worker)
      const how = signal ? `signal ${signal}` : `code ${code}`
      if (stopping) {
        if (alive().length === 0) resolve(failed ? EXIT_START_FAILED : EXIT_OK)
        return
      }
      if (!started) {
        o.log(`worker ${worker.process.pid} could not start (exit ${how}); stopping`)
        failed = true
        shutdown()
        return
      }
      o.log(`worker ${worker.process.pid} exited (${how}); starting a replacement`, 'warn')
      o.metrics.workerRestarted()
      if (wasReady) fork()
      else setTimeout(() => stopping || fork(), RESTART_DELAY_MS)
    })

    void stop.then(shutdown)
    // Each worker accepts its own connections from the shared socket. Under node's default (the primary accepts
    // and passes each connection on), a worker that died before taking the connection it was passed left that
    // client waiting until it gave up; now a worker's death closes exactly its own connections at once.
    cluster.schedulingPolicy = cluster.SCHED_NONE
    cluster.setupPrimary({execArgv: workerExecArgv(process.execArgv, process.env.NODE_OPTIONS)})
    for (let i = 0; i < o.workers; i++) fork()
  })
}

/**
 * In the primary: asks a worker for its metrics (`from`), which resolves with them, or with nothing when the worker
 * exits first, and rejects when it has not answered within COLLECT_TIMEOUT_MS; `received` takes the answers.
 */
function collector(): {from(worker: Worker): Promise<WorkerMetrics | undefined>; received(message: FromWorker & {type: 'collected'}): void} {
  let next = 0
  const waiting = new Map<number, (message: FromWorker & {type: 'collected'}) => void>()
  return {
    from: (worker) =>
      new Promise((resolve, reject) => {
        const id = next++
        const settle = () => {
          clearTimeout(timer)
          waiting.delete(id)
          worker.off('exit', gone)
        }
        const gone = () => {
          settle()
          resolve(undefined)
        }
        const timer = setTimeout(() => {
          settle()
          reject(new Error(`worker ${worker.process.pid} did not send its metrics in time`))
        }, COLLECT_TIMEOUT_MS)
        waiting.set(id, (message) => {
          settle()
          if (message.error !== undefined) reject(new Error(message.error))
          else resolve(message.metrics ?? [])
        })
        worker.once('exit', gone)
        worker.send({type: 'collect', id} satisfies ToWorker)
      }),
    received: (message) => waiting.get(message.id)?.(message),
  }
}

/** In a worker: answers the primary's requests for this process's metrics with what `read` gives. */
export function sendMetricsToPrimary(read: () => Promise<WorkerMetrics>): void {
  process.on('message', (message: ToWorker) => {
    if (message?.type !== 'collect') return
    read().then(
      (metrics) => process.send?.({type: 'collected', id: message.id, metrics} satisfies FromWorker),
      (e: unknown) => process.send?.({type: 'collected', id: message.id, error: describe(e)} satisfies FromWorker),
    )
  })
}

/** Ends every worker at once (a second signal: no more waiting). */
export function killWorkers(): void {
  for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGKILL')
}

/** In a worker: settles when the primary asks it to stop, or is gone (its IPC channel closed). */
export function primaryStop(): Promise<void> {
  return new Promise((resolve) => {
    process.on('message', (message: ToWorker) => {
      if (message?.type === 'shutdown') resolve()
    })
    process.on('disconnect', () => resolve())
  })
}

/** In a worker: GET /metrics's text, the primary's sum over every worker. */
export function metricsFromPrimary(): () => Promise<string> {
  let next = 0
  const pending = new Map<number, {resolve: (text: string) => void; reject: (e: ModError) => void}>()
  process.on('message', (message: ToWorker) => {
    if (message?.type !== 'metrics') return
    const waiting = pending.get(message.id)
    pending.delete(message.id)
    if (message.error !== undefined) waiting?.reject(new ModError('internal', `metrics could not be collected: ${message.error}`))
    else waiting?.resolve(message.text ?? '')
  })
  return () =>
    new Promise((resolve, reject) => {
      const id = next++
      pending.set(id, {resolve, reject})
      process.send?.({type: 'metrics', id} satisfies FromWorker)
    })
}

/** In a worker: tells the primary the port is open. */
export function reportReady(port: number): void {
  process.send?.({type: 'ready', port} satisfies FromWorker)
}
