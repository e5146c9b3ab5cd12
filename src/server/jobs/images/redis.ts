import {Queue, Worker, type Job as BullJob} from 'bullmq'
import {Redis} from 'ioredis'

import {createAjv} from '../../ajv.js'
import type {Log} from '../../errors.js'
import {DEFAULT_COMMAND_TIMEOUT_MS, guarded, redisConnection} from '../redis-connection.js'
import {visibleTo} from '../owner.js'
import {removeJobFolder} from '../storage.js'
import {readChunk} from './chunk-data.js'
import {chunksKey, clientKey, linesKey, metaKey, reservedKey} from './keys.js'
import {failedLines} from './lines.js'
import {tooManyJobs} from '../admission.js'
import {ImageJob, type ImageJobBody} from './schema.js'
import {chunksOf, imageJobBody, type Chunk, type ChunkRunner, type ImageJobQueue, type ImageJobState, type ImageQueueHooks} from './types.js'

export interface RedisImageQueueOptions extends ImageQueueHooks {
  url: string
  storage: string
  ttlSeconds: number
  maxPerClient: number
  log: Log
  /** BullMQ's stalled-chunk handling: how long a worker's lock on a chunk lasts without renewal. */
  lockDurationMs?: number
  stalledIntervalMs?: number
  /** Deadline of one Redis command from a request. Default 2000 ms. */
  commandTimeoutMs?: number
}

export const QUEUE_NAME = 'mod-image-chunks'
const CANCEL_CHANNEL = 'mod:imagejobs:cancel'
/** BullMQ ids may not hold ':'. */
const chunkId = (id: string, index: number) => `${id}.${index}`

/** Runs of a chunk whose runner threw (Redis away, say) before its items get the error as their lines. */
const ATTEMPTS = 3
/** Times a chunk whose worker died is put back; beyond, its items get an error line. Workers rarely die twice on one chunk. */
const MAX_STALLED = 5

/**
 * Records a chunk's lines and its completion in one step, so that a chunk run again (its worker died between
 * scoring and here, or before BullMQ heard of it) overwrites its own lines: each item has one line whatever
 * happens. A deleted job (no meta key) records nothing. Answers 1 to the one call that completes the job (its
 * keys then expire after MOD_JOB_TTL), 0 otherwise, -1 when the job is gone.
 * KEYS: meta, lines, chunks. ARGV: chunk index, now, ttl seconds, then index/line pairs.
 */
const COMMIT = `
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
for i = 4, #ARGV, 2 do redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 1]) end
redis.call('SADD', KEYS[3], ARGV[1])
redis.call('HSET', KEYS[1], 'updated_at', ARGV[2])
if redis.call('SCARD', KEYS[3]) < tonumber(redis.call('HGET', KEYS[1], 'chunks')) then return 0 end
if redis.call('HSETNX', KEYS[1], 'finished_at', ARGV[2]) == 0 then return 0 end
for i = 1, 3 do redis.call('EXPIRE', KEYS[i], ARGV[3]) end
return 1
`

/** Marks the job started, unless it is gone (a plain HSET would bring back a key of a deleted job). */
const START = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'started', '1')
return 1
`

/**
 * Counts the client's jobs not done and places reserved, forgetting the others, and reserves one more for a new job
 * unless that reaches the limit: one script, so concurrent requests (of any process) are counted one after the
 * other. Answers 1 when reserved, 0 when the client is at its limit.
 * KEYS: the client's set. ARGV: limit, new job id, now (ms), reservation lifetime (ms), then the prefix and the
 * suffix that make a job's meta key and reservation key from its id (keys.ts).
 */
const RESERVE = `
local open = 0
for _, id in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  local meta = ARGV[5] .. id
  local live
  if redis.call('EXISTS', meta) == 1 then live = redis.call('HEXISTS', meta, 'finished_at') == 0
  else live = redis.call('EXISTS', meta .. ARGV[6]) == 1 end
  if live then open = open + 1 else redis.call('ZREM', KEYS[1], id) end
end
if open >= tonumber(ARGV[1]) then return 0 end
redis.call('SET', ARGV[5] .. ARGV[2] .. ARGV[6], '1', 'PX', ARGV[4])
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[2])
return 1
`

/** A reservation lapses this long after its last renewal: a process that died mid-upload frees its place then. */
const RESERVATION_MS = 60_000
/** Its reader renews it this often while the upload is read. */
const RENEW_MS = 20_000

const validJob = createAjv().compile<ImageJobBody>(ImageJob)

/**
 * Image jobs on Redis: the job's record and lines in plain keys, its chunks on a BullMQ queue that any `mod worker`
 * or `mod serve` with the same MOD_REDIS_URL takes from. A worker that dies mid-chunk loses its lock, and BullMQ's
 * stalled-job check gives the chunk to another worker.
 */
export function createRedisImageQueue(o: RedisImageQueueOptions): ImageJobQueue {
  const {client, logOnce} = redisConnection(o.url, 'image job queue', o.log, o.commandTimeoutMs)
  const queue = new Queue(QUEUE_NAME, {connection: client, skipWaitingForReady: true})
  queue.on('error', logOnce('image job queue'))
  const connections: Redis[] = [client]
  const running = new Map<string, AbortController>()
  let worker: Worker | undefined

  async function state(id: string): Promise<(ImageJobState & {client: string; owner?: string; callbackUrl?: string}) | undefined> {
    const [meta, itemsDone, chunksDone] = await Promise.all([client.hgetall(metaKey(id)), client.hlen(linesKey(id)), client.scard(chunksKey(id))])
    if (meta.id !== id) return undefined
    return {
      id,
      total: Number(meta.total),
      chunks: Number(meta.chunks),
      created_at: meta.created_at,
      updated_at: meta.updated_at,
      started: meta.started !== undefined,
      finished: meta.finished_at !== undefined,
      itemsDone,
      chunksDone,
      client: meta.client,
      ...(meta.owner === undefined ? {} : {owner: meta.owner}),
      ...(meta.callback_url ? {callbackUrl: meta.callback_url} : {}),
    }
  }

  async function commit(chunk: Chunk, lines: string[]): Promise<number> {
    const pairs = lines.flatMap((line, i) => [String(chunk.start + i), line])
    const keys = [metaKey(chunk.job), linesKey(chunk.job), chunksKey(chunk.job)]
    return (await client.eval(COMMIT, 3, ...keys, String(chunk.index), new Date().toISOString(), String(o.ttlSeconds), ...pairs)) as number
  }

  async function recorded(chunk: Chunk, lines: string[]): Promise<void> {
    if ((await commit(chunk, lines)) !== 1) return
    // The process that completed the job ends it: its uploads go, its callback is sent.
    await removeJobFolder(o.storage, chunk.job)
    const s = await state(chunk.job)
    if (s) o.onEnd?.(imageJobBody(s), s.callbackUrl)
  }

  async function runChunk(job: BullJob, runner: ChunkRunner): Promise<void> {
    const chunk = readChunk(job.data)
    // A chunk of a deleted job is dropped unrun.
    if ((await client.eval(START, 1, metaKey(chunk.job))) === 0) return
    const controller = new AbortController()
    running.set(chunk.job, controller)
    let lines: string[]
    try {
      lines = await runner(chunk, controller.signal)
    } catch (e) {
      if (controller.signal.aborted) return
      if (job.attemptsMade + 1 < ATTEMPTS) throw e
      lines = failedLines(chunk, o.describeError(e))
    } finally {
      running.delete(chunk.job)
    }
    await recorded(chunk, lines)
  }

  /** Reserves a place for job `id` of client `c`, or refuses with too_many_jobs. */
  async function take(c: string, id: string): Promise<void> {
    const suffix = reservedKey(id).slice(metaKey(id).length)
    const taken = await guarded(() => client.eval(RESERVE, 1, clientKey(c), String(o.maxPerClient), id, String(Date.now()), String(RESERVATION_MS), metaKey(''), suffix))
    if (taken !== 1) throw tooManyJobs(o.maxPerClient)
  }

  /** Job ids whose place this process reserved and that are not submitted yet, with their renewal timer. */
  const reserved = new Map<string, NodeJS.Timeout>()

  return {
    async reserve(c, id) {
      await take(c, id)
      const renew = setInterval(() => void client.pexpire(reservedKey(id), RESERVATION_MS).catch(() => {}), RENEW_MS)
      renew.unref()
      reserved.set(id, renew)
      return {
        async release() {
          if (!reserved.has(id)) return
          clearInterval(reserved.get(id))
          reserved.delete(id)
          // The lapse frees the place anyway if Redis is away now.
          await client.multi().del(reservedKey(id)).zrem(clientKey(c), id).exec().catch(() => {})
        },
      }
    },
    async submit(spec) {
      if (!reserved.has(spec.id)) await take(spec.client, spec.id)
      const chunks = chunksOf(spec)
      const now = new Date().toISOString()
      await guarded(async () => {
        await client
          .multi()
          .del(reservedKey(spec.id))
          .hset(metaKey(spec.id), {
            id: spec.id,
            client: spec.client,
            total: spec.items.length,
            chunks: chunks.length,
            created_at: now,
            updated_at: now,
            ...(spec.owner === undefined ? {} : {owner: spec.owner}),
            ...(spec.callbackUrl === undefined ? {} : {callback_url: spec.callbackUrl}),
          })
          .zadd(clientKey(spec.client), Date.now(), spec.id)
          .exec()
        // The place is the job's now.
        clearInterval(reserved.get(spec.id))
        reserved.delete(spec.id)
        try {
          await queue.addBulk(
            chunks.map((chunk) => ({
              name: 'chunk',
              data: chunk,
              opts: {jobId: chunkId(spec.id, chunk.index), attempts: ATTEMPTS, backoff: {type: 'fixed', delay: 1000}, removeOnComplete: true, removeOnFail: {age: o.ttlSeconds}},
            })),
          )
        } catch (e) {
          await client.del(metaKey(spec.id)).catch(() => {})
          throw e
        }
      })
      return imageJobBody({id: spec.id, total: spec.items.length, chunks: chunks.length, created_at: now, updated_at: now, started: false, finished: false, itemsDone: 0, chunksDone: 0})
    },
    async get(id, owner) {
      return guarded(async () => {
        const s = await state(id)
        if (!s || !visibleTo(s.owner, owner)) return undefined
        const body = imageJobBody(s)
        if (validJob(body)) return body
        // Anyone who can write to that Redis can write a job record: one that is not a job's is not answered.
        logOnce('image job queue')(new Error(`image job ${JSON.stringify(id)} was not answered: what Redis holds of it is not valid`))
        return undefined
      })
    },
    async lines(id, from, count) {
      return guarded(async () => {
        const fields = Array.from({length: count}, (_, i) => String(from + i))
        return (await client.hmget(linesKey(id), ...fields)).map((line) => line ?? undefined)
      })
    },
    async remove(id, owner) {
      return guarded(async () => {
        const s = await state(id)
        if (!s || !visibleTo(s.owner, owner)) return undefined
        // Without its meta key a chunk records nothing: one still running finishes in vain, the others are dropped.
        if ((await client.del(metaKey(id))) === 0) return undefined
        await client.multi().del(linesKey(id), chunksKey(id)).zrem(clientKey(s.client), id).exec()
        await client.publish(CANCEL_CHANNEL, id)
        for (let i = 0; i < s.chunks; i++) await queue.remove(chunkId(id, i))
        await removeJobFolder(o.storage, id)
        const body = imageJobBody(s)
        if (s.finished) return body
        const cancelled = {...body, status: 'cancelled' as const, updated_at: new Date().toISOString()}
        o.onEnd?.(cancelled, s.callbackUrl)
        return cancelled
      })
    },
    work(runner) {
      const connection = new Redis(o.url, {maxRetriesPerRequest: null})
      connection.on('error', logOnce('image job worker (redis)'))
      connections.push(connection)
      worker = new Worker(QUEUE_NAME, (job) => runChunk(job, runner), {
        connection,
        concurrency: 1,
        lockDuration: o.lockDurationMs ?? 30_000,
        stalledInterval: o.stalledIntervalMs ?? 5_000,
        maxStalledCount: MAX_STALLED,
      })
      worker.on('error', logOnce('image job worker'))
      // A chunk that kept losing its worker is recorded with an error on each item, so its job still ends.
      worker.on('failed', (job, e) => {
        if (!job || !/stalled more than/i.test(e.message)) return
        let chunk: Chunk
        try {
          chunk = readChunk(job.data)
        } catch {
          return
        }
        recorded(chunk, failedLines(chunk, {code: 'internal', message: 'the chunk was interrupted too many times (its worker stopped while running it)'})).catch(logOnce('image job queue'))
      })
      const subscriber = new Redis(o.url, {maxRetriesPerRequest: null})
      subscriber.on('error', logOnce('image job worker (redis)'))
      connections.push(subscriber)
      subscriber.on('message', (_channel, id: string) => running.get(id)?.abort())
      void subscriber.subscribe(CANCEL_CHANNEL).catch(() => {})
    },
    async close() {
      for (const renew of reserved.values()) clearInterval(renew)
      await Promise.race([Promise.allSettled([queue.waitUntilReady(), ...(worker ? [worker.waitUntilReady()] : [])]), new Promise((r) => setTimeout(r, o.commandTimeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS).unref())])
      await worker?.close()
      await queue.close()
      for (const c of connections) c.disconnect()
    },
  }
}
