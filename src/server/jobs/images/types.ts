import {join} from 'node:path'

import type {JobError} from '../types.js'
import {jobPaths} from '../storage.js'
import type {ImageJobBody} from './schema.js'

/** An item to score: an image URL, or an uploaded file (kept in the job's folder, named by its index). */
export type ImageItem = {url: string; id?: string} | {file: string; id?: string}

/** What is known of an image job when it is accepted. */
export interface ImageJobSpec {
  id: string
  /** The client address the job counts against (MOD_MAX_JOBS_PER_CLIENT). */
  client: string
  /** The name of the API key that made the job (../owner.ts); absent when the server needs no key. */
  owner?: string
  items: ImageItem[]
  callbackUrl?: string
}

/** Items per chunk: the unit a worker takes, runs and records at once. */
export const CHUNK_SIZE = 32

/** A run of consecutive items of one job, from `start`. */
export interface Chunk {
  job: string
  index: number
  start: number
  items: ImageItem[]
}

export function chunksOf(spec: Pick<ImageJobSpec, 'id' | 'items'>, size = CHUNK_SIZE): Chunk[] {
  const chunks: Chunk[] = []
  for (let start = 0; start < spec.items.length; start += size) {
    chunks.push({job: spec.id, index: chunks.length, start, items: spec.items.slice(start, start + size)})
  }
  return chunks
}

/** The file name of an uploaded item in its job's folder: its index (never a name the client chose). */
export const itemName = (index: number): string => `item-${index}`

/** Where an uploaded item waits: in its job's folder, named by its index. */
export function itemPath(storage: string, job: string, index: number): string {
  return join(jobPaths(storage, job).dir, itemName(index))
}

/** A job place held for an upload being read (ImageJobQueue.reserve). */
export interface Reservation {
  /** Gives the place back unless its job was submitted; safe to call more than once. */
  release(): Promise<void>
}

/** Scores one chunk: one NDJSON line (no newline) per item, in order. */
export type ChunkRunner = (chunk: Chunk, signal: AbortSignal) => Promise<string[]>

export interface ImageQueueHooks {
  /** The error an item reports for what went wrong (the server's mapping: internal details stay in the log). */
  describeError(e: unknown): JobError
  /** Called once per job when it is done or deleted, by the process that saw it end. */
  onEnd?(body: ImageJobBody, callbackUrl: string | undefined): void
  /** The jobs an in-process queue stopped with, not done (lost with the process): each has ended cancelled. */
  onDropped?(ids: string[]): void
}

/** Progress as stored: what a body is made from. */
export interface ImageJobState {
  id: string
  total: number
  chunks: number
  created_at: string
  updated_at: string
  started: boolean
  finished: boolean
  itemsDone: number
  chunksDone: number
}

export function imageJobBody(s: ImageJobState): ImageJobBody {
  return {
    id: s.id,
    kind: 'images',
    status: s.finished ? 'done' : s.started ? 'running' : 'queued',
    created_at: s.created_at,
    updated_at: s.updated_at,
    progress: {items_done: s.itemsDone, items_total: s.total, chunks_done: s.chunksDone, chunks_total: s.chunks},
    results: `/v1/jobs/${s.id}/results`,
  }
}

/** The progress of a job just accepted. */
export function newImageJobState(spec: Pick<ImageJobSpec, 'id' | 'items'>, chunks: number): ImageJobState {
  const now = new Date().toISOString()
  return {id: spec.id, total: spec.items.length, chunks, created_at: now, updated_at: now, started: false, finished: false, itemsDone: 0, chunksDone: 0}
}

/** What DELETE answers, on either backend: a job not done yet ends there as cancelled, and its callback says so. */
export function deletedBody(s: ImageJobState, callbackUrl: string | undefined, hooks: ImageQueueHooks): ImageJobBody {
  const body = imageJobBody(s)
  if (s.finished) return body
  const cancelled = {...body, status: 'cancelled' as const, updated_at: new Date().toISOString()}
  hooks.onEnd?.(cancelled, callbackUrl)
  return cancelled
}

/**
 * Where image jobs wait and run, in chunks: the in-process queue (memory.ts) or BullMQ on Redis (redis.ts). A
 * chunk's lines are recorded by item index together with the chunk's completion, and a line once recorded is never
 * replaced, so a chunk run twice (its worker died after scoring) changes nothing: every item has exactly one line.
 */
export interface ImageJobQueue {
  /**
   * Takes one of `client`'s job places for the job `id` before its upload is read, in one step with counting them
   * (concurrent requests of one client cannot all pass), or refuses with too_many_jobs when `client` already has as
   * many jobs not done, or places taken, as the limit. The place is the job's once `submit` queues it; `release`
   * gives it back if that never happens (a place taken by a process that died lapses within a minute).
   */
  reserve(client: string, id: string): Promise<Reservation>
  /** Queues the job's chunks, on the place reserved for it; from now on the queue owns the job's folder. */
  submit(spec: ImageJobSpec): Promise<ImageJobBody>
  /** The job; undefined for an unknown one, and for one of another key than `owner` (../owner.ts). */
  get(id: string, owner?: string): Promise<ImageJobBody | undefined>
  /** The lines of items `from` to `from + count - 1`; undefined where an item has none yet. */
  lines(id: string, from: number, count: number): Promise<(string | undefined)[]>
  /**
   * Deletes the job: its chunks not run are dropped, a running one stopped; lines and files removed. Undefined for an
   * unknown job, and for one of another key than `owner`, which is left as it is.
   */
  remove(id: string, owner?: string): Promise<ImageJobBody | undefined>
  work(runner: ChunkRunner): void
  /** As JobQueue.stopping: an in-process queue refuses new jobs from now on, a queue on Redis goes on. */
  stopping(): void
  /** As JobQueue.reachable: Redis is connected (an in-process queue always is). */
  reachable(): boolean
  close(): Promise<void>
}
