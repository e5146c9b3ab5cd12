import {Queue, Worker, type Job as BullJob, type DefaultJobOptions} from 'bullmq'
import {Redis} from 'ioredis'

import type {Log} from '../errors.js'
import {DEFAULT_COMMAND_TIMEOUT_MS, redisConnection} from './redis-connection.js'
import type {WorkSource} from './skeleton.js'

export interface BullBackendOptions<Data, Answer> {
  /** MOD_REDIS_URL. */
  url: string
  log: Log
  /** How log lines name the queue's jobs: `job`, `image job`. */
  what: string
  /** The BullMQ queue's name. */
  name: string
  /** The channel on which a DELETE asks every worker to stop a job. */
  cancelChannel: string
  /** Deadline of one Redis command from a request, so that a Redis outage answers 503 instead of waiting. */
  commandTimeoutMs?: number
  defaultJobOptions?: DefaultJobOptions
  /** BullMQ's stalled-job handling (recovery.ts). */
  lockDurationMs: number
  stalledIntervalMs: number
  maxStalledCount: number
  /** A unit BullMQ failed (its runs kept failing, or its workers kept dying). */
  onFailed?(job: BullJob<Data, Answer> | undefined, e: Error): void
  onCompleted?(job: BullJob<Data, Answer>): void
  /** Waited for once the worker has stopped, before the queue closes (work the worker's events started). */
  drain?(): Promise<unknown>
}

export interface BullBackend<Data, Answer> {
  client: Redis
  /** Logs each distinct error once (redis-connection.ts). */
  logOnce: (what: string) => (e: Error) => void
  /** Whether Redis answers (redis-connection.ts). */
  reachable: () => boolean
  queue: Queue<Data, Answer>
  source: WorkSource<BullJob<Data, Answer>, Answer>
}

/** Waits until every promise has settled, or `ms` has passed. */
async function settled(promises: Promise<unknown>[], ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  const deadline = new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))
  await Promise.race([Promise.allSettled(promises), deadline])
  clearTimeout(timer)
}

/**
 * The storage of a job queue on BullMQ (either kind): units wait on a BullMQ queue that any process with the same
 * MOD_REDIS_URL adds to, and every process that works takes from it, one unit at a time. A worker that dies mid-unit
 * loses its lock; BullMQ's stalled-job check puts the unit back for another worker, up to `maxStalledCount` times.
 * A DELETE reaches the worker running the job over Redis pub/sub.
 */
export function bullBackend<Data, Answer>(o: BullBackendOptions<Data, Answer>): BullBackend<Data, Answer> {
  const {client, logOnce, reachable} = redisConnection(o.url, `${o.what} queue`, o.log, o.commandTimeoutMs)
  const queue = new Queue<Data, Answer>(o.name, {
    connection: client,
    skipWaitingForReady: true,
    // BullMQ asks Redis its version once, when the queue is made, and a failed ask (a server started before its
    // Redis) would fail every later call of the queue for good. The workers' connections, which wait for Redis
    // without a deadline, still check it.
    skipVersionCheck: true,
    ...(o.defaultJobOptions ? {defaultJobOptions: o.defaultJobOptions} : {}),
  })
  queue.on('error', logOnce(`${o.what} queue`))
  let worker: Worker<Data, Answer> | undefined
  // Connections BullMQ was handed are not closed by it.
  const connections: Redis[] = [client]

  /** A connection of the worker's own (BullMQ's blocking commands wait without a deadline). */
  const workerConnection = (): Redis => {
    const connection = new Redis(o.url, {maxRetriesPerRequest: null})
    connection.on('error', logOnce(`${o.what} worker (redis)`))
    connections.push(connection)
    return connection
  }

  const source: WorkSource<BullJob<Data, Answer>, Answer> = {
    consume(process, abort) {
      worker = new Worker<Data, Answer>(o.name, (job) => process(job), {
        connection: workerConnection(),
        concurrency: 1,
        lockDuration: o.lockDurationMs,
        stalledInterval: o.stalledIntervalMs,
        maxStalledCount: o.maxStalledCount,
      })
      worker.on('error', logOnce(`${o.what} worker`))
      if (o.onFailed) worker.on('failed', o.onFailed)
      if (o.onCompleted) worker.on('completed', o.onCompleted)
      const subscriber = workerConnection()
      subscriber.on('message', (_channel, id: string) => abort(id))
      void subscriber.subscribe(o.cancelChannel).catch(() => {})
    },
    async cancel(id) {
      await client.publish(o.cancelChannel, id)
    },
    async close() {
      // BullMQ reports a connection closed while it is still being set up as an 'error' on an object that no
      // longer has a listener, which ends the process: a queue closed right after it started (a short-lived
      // server) first lets its connections finish, for no longer than a Redis command may take.
      const commandMs = o.commandTimeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS
      await settled([queue.waitUntilReady(), ...(worker ? [worker.waitUntilReady()] : [])], commandMs)
      if (client.status === 'ready') {
        await worker?.close()
        await o.drain?.()
        await queue.close()
      } else {
        // Redis unreachable: BullMQ's close waits for commands that cannot be sent, for ever. The running unit is let
        // go (its lock expires in Redis, and another worker takes it up again), the connections are cut below.
        await settled([(async () => {
          await worker?.close(true)
          await queue.close()
        })()], commandMs)
      }
      for (const c of connections) c.disconnect()
      // Units left waiting stay in Redis for the other workers.
      return []
    },
  }
  return {client, logOnce, reachable, queue, source}
}
