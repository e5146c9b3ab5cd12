import {lstat, rm, rmdir} from 'node:fs/promises'
import type {Server} from 'node:http'

import {defaultJobStorage} from '../lib/config/jobs.js'
import type {ServerSettings} from '../lib/config/settings.js'
import type {Engine} from '../lib/engine.js'
import {isModError} from '../lib/errors.js'
import {listenProblem} from './address.js'
import {buildServer, type ModServer, type ServerOptions} from './app.js'
import {refusedCredentials} from './jobs/redis-connection.js'
import {SWEEP_GRACE_MS, SWEEP_INTERVAL_MS, sweepEvery, sweepJobFolders} from './jobs/sweep.js'
import {describe, type Log} from './errors.js'
import {growHeapForServing} from './heap.js'
import {EXIT_OK, EXIT_START_FAILED, sweepLeftovers, uploadRoots} from './lifecycle.js'
import {makeUploadDir, processUploadDir, uploadsRoot} from './upload-dirs.js'

export interface RunOptions {
  engine: Engine
  settings: ServerSettings
  host: string
  port: number
  log: Log
  /** Called once the port is open, with the port actually bound (useful with port 0). */
  onListening: (port: number) => void
  /** Settles when the server should stop: a signal, or the cluster primary asking. */
  stop: Promise<unknown>
  /** The access logger and metrics of the server. */
  server?: Pick<ServerOptions, 'logger' | 'metrics' | 'metricsText'>
}

/** How often a serving process looks for uploads left by ended processes, besides when it starts. */
const SWEEP_EVERY_MS = 10 * 60_000

/**
 * With the in-process queues (no MOD_REDIS_URL) no job outlives its server: the folders of jobs a killed server
 * held (their uploads) are nobody's. They are removed once unchanged for an hour, as the Redis queue removes those of
 * jobs it lost (sweep.ts); another server of this user sharing the storage keeps its jobs' folders changing.
 */
function sweepInProcessJobs(o: RunOptions, handle: Pick<ModServer, 'jobs' | 'imageJobs'>): NodeJS.Timeout | undefined {
  if (o.settings.jobs.redisUrl !== undefined) return undefined
  const sweep = async () => {
    const removed = await sweepJobFolders({
      storage: o.settings.jobs.storage,
      graceMs: SWEEP_GRACE_MS,
      isKnown: async (id) => (await handle.jobs.get(id)) !== undefined || (await handle.imageJobs.get(id)) !== undefined,
    })
    if (removed.length > 0) o.log(`job storage: removed ${removed.length} folder(s) of jobs no queue has (left by a server that was killed)`)
  }
  return sweepEvery(sweep, SWEEP_INTERVAL_MS, (e) => o.log(`job storage: sweep failed: ${describe(e)}`, 'warn'))
}

/**
 * Checked before the port opens: the folders uploads are written to in the system's temporary folder, whose names
 * anyone can guess. Another user's (or a folder others may write to) would fail every video upload and job later,
 * each as a 500, while /ready said ready. The default job storage is checked if it is there already.
 */
async function checkUploadFolders(o: RunOptions): Promise<string | undefined> {
  const {storage} = o.settings.jobs
  const folders = [processUploadDir(uploadsRoot())]
  if (storage === defaultJobStorage() && (await lstat(storage).catch(() => undefined))) folders.push(storage)
  try {
    for (const folder of folders) await makeUploadDir(folder)
  } catch (e) {
    return `${isModError(e) ? e.message : describe(e)} (start mod with TMPDIR set to a folder of its own user)`
  }
  return undefined
}

/**
 * Every request has ended (or none began: a failed start), and with it its upload folder: this process's own folder
 * goes too, and the shared root when no other process has a folder in it (rmdir leaves a folder that is not empty);
 * the default job storage likewise, once no job of any process is kept in it.
 */
async function removeOwnFolders(o: RunOptions): Promise<void> {
  await rm(processUploadDir(uploadsRoot()), {recursive: true, force: true}).catch(() => undefined)
  await rmdir(uploadsRoot()).catch(() => undefined)
  if (o.settings.jobs.storage === defaultJobStorage()) await rmdir(o.settings.jobs.storage).catch(() => undefined)
}

/** MOD_REDIS_URL's password, when Redis refuses it: a setting to mend, not a Redis to wait for. */
async function checkRedis(o: RunOptions): Promise<string | undefined> {
  const url = o.settings.jobs.redisUrl
  const refused = url === undefined ? undefined : await refusedCredentials(url)
  return refused === undefined ? undefined : `MOD_REDIS_URL: Redis refused its credentials (${refused}): every job route would answer 503; mend the password in the URL`
}

function listen(server: Server, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, host, () => {
      server.off('error', reject)
      const address = server.address()
      resolve(typeof address === 'object' && address ? address.port : port)
    })
  })
}

/**
 * One serving process (the only one, or a cluster worker): with MOD_PRELOAD the model is loaded before
 * the port opens, so /health says model_loaded: true from its first answer; then it serves until `stop`
 * settles, lets requests in flight finish, releases the model and returns the exit code.
 */
export async function runServer(o: RunOptions): Promise<number> {
  growHeapForServing()
  let stopping = false
  void o.stop.then(() => (stopping = true))
  if (o.settings.preload) {
    try {
      await o.engine.load()
    } catch (e) {
      o.log(`the model could not be loaded: ${describe(e)}`)
      return EXIT_START_FAILED
    }
    const missing = await o.engine.notEvaluated()
    if (missing.length > 0) {
      o.log(`not evaluated: ${missing.join(', ')} (no CLIP model installed; run \`mod models pull ${o.engine.preset}\` to score them); results name them in not_evaluated`, 'warn')
    }
  }
  if (stopping) {
    await o.engine.close()
    return EXIT_OK
  }

  const unsafe = (await checkRedis(o)) ?? (await checkUploadFolders(o))
  if (unsafe !== undefined) {
    o.log(unsafe)
    await removeOwnFolders(o)
    await o.engine.close()
    return EXIT_START_FAILED
  }
  const roots = uploadRoots(o.settings.jobs.storage)
  await sweepLeftovers(o.log, roots)
  const sweeper = setInterval(() => void sweepLeftovers(o.log, roots), SWEEP_EVERY_MS).unref()
  void o.stop.then(() => clearInterval(sweeper))
  const handle = buildServer(o.engine, o.settings, {...o.server, log: o.log})
  const orphans = sweepInProcessJobs(o, handle)
  void o.stop.then(() => clearInterval(orphans))
  let port: number
  try {
    port = await listen(handle.server, o.port, o.host)
  } catch (e) {
    o.log(listenProblem(e, o.host, o.port))
    await removeOwnFolders(o)
    await o.engine.close()
    return EXIT_START_FAILED
  }
  o.onListening(port)

  await o.stop
  if (o.settings.drainDelayMs > 0) {
    // Load balancers see /ready fail and stop sending traffic before the port closes.
    handle.drain()
    o.log(`draining: /ready answers 503 for ${o.settings.drainDelayMs} ms before the port closes`, 'info')
    await new Promise((resolve) => setTimeout(resolve, o.settings.drainDelayMs))
  }
  const inFlight = handle.gate.admitted + handle.gate.receiving
  // close() stops accepting at once; the line is printed once new connections are already refused.
  const closed = handle.close()
  o.log(inFlight > 0 ? `stopping: finishing ${inFlight} request(s) in flight` : 'stopping', 'info')
  await closed
  await o.engine.close()
  await removeOwnFolders(o)
  return EXIT_OK
}
