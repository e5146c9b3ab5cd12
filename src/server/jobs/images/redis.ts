import type {Job as BullJob} from 'bullmq'

import {createAjv} from '../../ajv.js'
import type {Log} from '../../errors.js'
import {tooManyJobs} from '../admission.js'
import {bullBackend, type BullBackend} from '../bull-backend.js'
import {LOCK_DURATION_MS, STALLED_INTERVAL_MS} from '../recovery.js'
import {guarded, unreachable} from '../redis-connection.js'
import {visibleTo} from '../owner.js'
import {attempt, jobSkeleton, type JobSkeleton} from '../skeleton.js'
import {removeJobFolder} from '../storage.js'
import {readChunk} from './chunk-data.js'
import {chunksKey, clientKey, linesKey, metaKey, reservedKey} from './keys.js'
import {failedLines} from './lines.js'
import {ImageJob, type ImageJobBody} from './schema.js'
import {
  chunksOf,
  deletedBody,
  imageJobBody,
  newImageJobState,
  type Chunk,
  type ChunkRunner,
  type ImageJobQueue,
  type ImageJobSpec,
  type ImageJobState,
  type ImageQueueHooks,
  type Reservation,
} from './types.js'

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
 * Records a chunk's lines and its completion in one step. A line once recorded is never replaced: a chunk run again
 * (its worker died between scoring and here, or its record reached Redis after the worker stopped waiting for the
 * answer) writes only the lines of items that have none, and nothing at all once the job is done, so each item
 * has one line whatever happens and a done job's lines never change. A deleted job (no meta key) records nothing.
 * Answers 1 to the one call that completes the job (its keys then expire after MOD_JOB_TTL, and it leaves its
 * client's set of jobs not done, which Redis deletes once empty), 2 when it was done already, 0 while it is not, -1
 * when the job is gone.
 * KEYS: meta, lines, chunks. ARGV: chunk index, now, ttl seconds, job id, the client set's key without the client
 * (keys.ts), then index/line pairs.
 */
const COMMIT = `
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
if redis.call('HEXISTS', KEYS[1], 'finished_at') == 1 then return 2 end
for i = 6, #ARGV, 2 do redis.call('HSETNX', KEYS[2], ARGV[i], ARGV[i + 1]) end
redis.call('SADD', KEYS[3], ARGV[1])
redis.call('HSET', KEYS[1], 'updated_at', ARGV[2])
if redis.call('SCARD', KEYS[3]) < tonumber(redis.call('HGET', KEYS[1], 'chunks')) then return 0 end
redis.call('HSET', KEYS[1], 'finished_at', ARGV[2])
for i = 1, 3 do redis.call('EXPIRE', KEYS[i], ARGV[3]) end
local client = redis.call('HGET', KEYS[1], 'client')
if client then redis.call('ZREM', ARGV[5] .. client, ARGV[4]) end
return 1
`

/**
 * Marks the job started and answers 1, unless it is gone (-1: a plain HSET would bring back a key of a deleted job)
 * or done (0: a chunk run again after the job ended has nothing left to do).
 */
const START = `
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
if redis.call('HEXISTS', KEYS[1], 'finished_at') == 1 then return 0 end
redis.call('HSET', KEYS[1], 'started', '1')
return 1
`

/**
 * Claims the report of a done job's end (its callback) for the caller: 1 to the first call, 0 to every other, and
 * to a job that is gone. The claim is apart from the commit that ends the job, so that a commit whose answer was
 * lost (its chunk is run again and finds the job done) still has its job's end reported, and only once.
 */
const CLAIM_END = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
return redis.call('HSETNX', KEYS[1], 'ended', '1')
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

type ChunkJob = BullJob<Chunk, void>

/** What the parts of the queue share: the backend, the options, and the places this process reserved. */
interface Images extends BullBackend<Chunk, void> {
  o: RedisImageQueueOptions
  /** Job ids whose place this process reserved and that are not submitted yet, with their renewal timer. */
  reserved: Map<string, NodeJS.Timeout>
}

type StoredState = ImageJobState & {client: string; owner?: string; callbackUrl?: string}

async function state(r: Images, id: string): Promise<StoredState | undefined> {
  const [meta, itemsDone, chunksDone] = await Promise.all([r.client.hgetall(metaKey(id)), r.client.hlen(linesKey(id)), r.client.scard(chunksKey(id))])
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

async function commit(r: Images, chunk: Chunk, lines: string[]): Promise<number> {
  const pairs = lines.flatMap((line, i) => [String(chunk.start + i), line])
  const keys = [metaKey(chunk.job), linesKey(chunk.job), chunksKey(chunk.job)]
  const args = [String(chunk.index), new Date().toISOString(), String(r.o.ttlSeconds), chunk.job, clientKey('')]
  return (await r.client.eval(COMMIT, 3, ...keys, ...args, ...pairs)) as number
}

/**
 * Ends a done job: its uploads go (whoever sees it done removes them, so a removal that failed or never ran is
 * made up for), and the one process that claims it reports the end (callback).
 */
async function ended(r: Images, id: string): Promise<void> {
  await removeJobFolder(r.o.storage, id)
  if ((await r.client.eval(CLAIM_END, 1, metaKey(id))) !== 1) return
  const s = await state(r, id)
  if (s) r.o.onEnd?.(imageJobBody(s), s.callbackUrl)
}

async function recorded(r: Images, chunk: Chunk, lines: string[]): Promise<void> {
  const committed = await commit(r, chunk, lines)
  if (committed === 1 || committed === 2) await ended(r, chunk.job)
}

async function runChunk(r: Images, job: ChunkJob, runner: ChunkRunner, controller: AbortController): Promise<void> {
  const chunk = readChunk(job.data)
  const started = (await r.client.eval(START, 1, metaKey(chunk.job))) as number
  // A chunk of a deleted job is dropped unrun; one of a done job only sees that the job's end was seen to.
  if (started === -1) return
  if (started === 0) return ended(r, chunk.job)
  const ran = await attempt(controller.signal, () => runner(chunk, controller.signal))
  if (ran.status === 'cancelled') return
  if (ran.status === 'failed' && job.attemptsMade + 1 < ATTEMPTS) throw ran.error
  await recorded(r, chunk, ran.status === 'done' ? ran.value : failedLines(chunk, r.o.describeError(ran.error)))
}

/**
 * A chunk BullMQ gave up on, because it kept losing its worker or kept failing to be recorded (Redis away), is
 * recorded with an error on each item that has no line yet, so its job still ends.
 */
function failed(r: Images, job: ChunkJob | undefined, e: Error): void {
  const stalled = /stalled more than/i.test(e.message)
  if (!job || (!stalled && job.finishedOn === undefined)) return
  let chunk: Chunk
  try {
    chunk = readChunk(job.data)
  } catch {
    return
  }
  const message = stalled ? 'the chunk was interrupted too many times (its worker stopped while running it)' : 'the chunk could not be recorded: the job queue was not reachable'
  recorded(r, chunk, failedLines(chunk, {code: 'internal', message})).catch(r.logOnce('image job queue'))
}

/**
 * Gives back the place of job `id`, as far as Redis has it. Also sent when Redis is slow to answer: on the same
 * connection it runs after whatever was sent before it (a reservation whose answer came too late), whether this
 * waits for it or not.
 */
function giveBack(r: Images, c: string, id: string): Promise<unknown> {
  return r.client.multi().del(reservedKey(id)).zrem(clientKey(c), id).exec()
}

/** Reserves a place for job `id` of client `c`, or refuses with too_many_jobs. */
async function take(r: Images, c: string, id: string): Promise<void> {
  const suffix = reservedKey(id).slice(metaKey(id).length)
  let taken
  try {
    taken = await r.client.eval(RESERVE, 1, clientKey(c), String(r.o.maxPerClient), id, String(Date.now()), String(RESERVATION_MS), metaKey(''), suffix)
  } catch (e) {
    // The script may still run once Redis answers again: the place of a job refused now must not stay taken.
    void giveBack(r, c, id).catch(() => {})
    throw unreachable(e)
  }
  if (taken !== 1) throw tooManyJobs(r.o.maxPerClient)
}

async function reserve(r: Images, c: string, id: string): Promise<Reservation> {
  await take(r, c, id)
  const renew = setInterval(() => void r.client.pexpire(reservedKey(id), RESERVATION_MS).catch(() => {}), RENEW_MS)
  renew.unref()
  r.reserved.set(id, renew)
  return {
    async release() {
      if (!r.reserved.has(id)) return
      clearInterval(r.reserved.get(id))
      r.reserved.delete(id)
      // The lapse frees the place anyway if Redis is away now.
      await giveBack(r, c, id).catch(() => {})
    },
  }
}

/**
 * The job's record on the place reserved for it, then its chunks on the queue. If either fails, the record goes: one
 * that reaches Redis late (it was slow to answer) must not stay as a job that never runs.
 */
async function store(r: Images, spec: ImageJobSpec, state: ImageJobState, chunks: Chunk[]): Promise<void> {
  const opts = {attempts: ATTEMPTS, backoff: {type: 'fixed', delay: 1000}, removeOnComplete: true, removeOnFail: {age: r.o.ttlSeconds}}
  try {
    await r.client
      .multi()
      .del(reservedKey(spec.id))
      .hset(metaKey(spec.id), {
        id: spec.id,
        client: spec.client,
        total: state.total,
        chunks: state.chunks,
        created_at: state.created_at,
        updated_at: state.updated_at,
        ...(spec.owner === undefined ? {} : {owner: spec.owner}),
        ...(spec.callbackUrl === undefined ? {} : {callback_url: spec.callbackUrl}),
      })
      .zadd(clientKey(spec.client), Date.now(), spec.id)
      .exec()
    // The place is the job's now.
    clearInterval(r.reserved.get(spec.id))
    r.reserved.delete(spec.id)
    await r.queue.addBulk(chunks.map((chunk) => ({name: 'chunk', data: chunk, opts: {jobId: chunkId(spec.id, chunk.index), ...opts}})))
  } catch (e) {
    // Sent after the record on the same connection, so it runs after it even if Redis answers neither in time.
    void r.client.del(metaKey(spec.id)).catch(() => {})
    throw e
  }
}

async function submit(r: Images, spec: ImageJobSpec): Promise<ImageJobBody> {
  if (!r.reserved.has(spec.id)) await take(r, spec.client, spec.id)
  const chunks = chunksOf(spec)
  const state = newImageJobState(spec, chunks.length)
  await guarded(() => store(r, spec, state, chunks))
  return imageJobBody(state)
}

async function get(r: Images, id: string, owner: string | undefined): Promise<ImageJobBody | undefined> {
  const s = await state(r, id)
  if (!s || !visibleTo(s.owner, owner)) return undefined
  const body = imageJobBody(s)
  if (validJob(body)) return body
  // Anyone who can write to that Redis can write a job record: one that is not a job's is not answered.
  r.logOnce('image job queue')(new Error(`image job ${JSON.stringify(id)} was not answered: what Redis holds of it is not valid`))
  return undefined
}

async function remove(r: Images, jobs: JobSkeleton<ChunkRunner>, id: string, owner: string | undefined): Promise<ImageJobBody | undefined> {
  const s = await state(r, id)
  if (!s || !visibleTo(s.owner, owner)) return undefined
  // Without its meta key a chunk records nothing: one still running finishes in vain, the others are dropped.
  if ((await r.client.del(metaKey(id))) === 0) return undefined
  await r.client.multi().del(linesKey(id), chunksKey(id)).zrem(clientKey(s.client), id).exec()
  await jobs.cancel(id)
  for (let i = 0; i < s.chunks; i++) await r.queue.remove(chunkId(id, i))
  await removeJobFolder(r.o.storage, id)
  return deletedBody(s, s.callbackUrl, r.o)
}

/**
 * Image jobs on Redis: the job's record and lines in plain keys, its chunks on a BullMQ queue (bull-backend.ts) that
 * any `mod worker` or `mod serve` with the same MOD_REDIS_URL takes from, run through the job skeleton. A worker that
 * dies mid-chunk loses its lock, and BullMQ's stalled-job check gives the chunk to another worker.
 */
export function createRedisImageQueue(o: RedisImageQueueOptions): ImageJobQueue {
  const backend = bullBackend<Chunk, void>({
    url: o.url,
    log: o.log,
    what: 'image job',
    name: QUEUE_NAME,
    cancelChannel: CANCEL_CHANNEL,
    commandTimeoutMs: o.commandTimeoutMs,
    lockDurationMs: o.lockDurationMs ?? LOCK_DURATION_MS,
    stalledIntervalMs: o.stalledIntervalMs ?? STALLED_INTERVAL_MS,
    maxStalledCount: MAX_STALLED,
    onFailed: (job, e) => failed(r, job, e),
  })
  const r: Images = {...backend, o, reserved: new Map()}
  const jobs = jobSkeleton<ChunkJob, ChunkRunner, void>(backend.source, {
    jobOf: (job) => readChunk(job.data).job,
    process: (job, runner, controller) => runChunk(r, job, runner, controller),
  })
  return {
    reserve: (c, id) => reserve(r, c, id),
    submit: (spec) => submit(r, spec),
    get: (id, owner) => guarded(() => get(r, id, owner)),
    lines: (id, from, count) =>
      guarded(async () => {
        const fields = Array.from({length: count}, (_, i) => String(from + i))
        return (await r.client.hmget(linesKey(id), ...fields)).map((line) => line ?? undefined)
      }),
    remove: (id, owner) => guarded(() => remove(r, jobs, id, owner)),
    work: (runner) => jobs.work(runner),
    // Its jobs wait in Redis for any worker: it goes on taking them.
    stopping: () => {},
    reachable: backend.reachable,
    async close() {
      for (const renew of r.reserved.values()) clearInterval(renew)
      await jobs.close()
    },
  }
}
