/**
 * onnxruntime off the event loop. onnxruntime-node runs a session on the thread that calls `run`, synchronously
 * (its `run` only defers the call with setImmediate): run on the main thread, a 40 ms inference holds up the
 * whole process for 40 ms, the next request's upload, decoding and preprocessing included. The sessions of a
 * process live instead in one worker thread (inference-worker.ts), started on the first session: the event loop
 * stays free while a model infers, and runs still take turns, one at a time, as the thread does one thing at a
 * time (onnxruntime's own intra-op threads do each run's work). One thread for the whole process rather than one
 * per engine, as onnxruntime's environment is the process's. Tensors cross by copy (structured clone): the 600
 * KB of a 224 x 224 image take a fraction of a millisecond. An idle thread does not keep the process alive.
 *
 * The cores are shared, not multiplied: while a run keeps onnxruntime's intra-op threads busy, decoding the next
 * image takes one more thread (libvips works on one thread per image where sharp keeps its default on Linux with
 * glibc, which mod does not raise: more decoding threads would take cores from the inference threads, and each
 * of onnxruntime's parallel steps waits for its slowest thread).
 */
import type {Worker} from 'node:worker_threads'

import type * as ort from 'onnxruntime-node'

import {startModuleWorker, stopBetweenTasks, threadStopped} from '../worker-module.js'
import {fromWire, toWire, type Answer, type Ask, type Leave} from './inference-wire.js'

/** What the engine uses of an onnxruntime session. */
export interface ModelSession {
  readonly inputNames: readonly string[]
  readonly outputNames: readonly string[]
  readonly inputMetadata: readonly ort.InferenceSession.ValueMetadata[]
  run(feeds: Record<string, ort.Tensor>, fetches?: readonly string[]): Promise<Record<string, ort.Tensor>>
  release(): Promise<void>
}

/** What onnxruntime itself raised in the thread (a model it cannot load or run), as against the thread's stopping. */
export class InferenceError extends Error {}

interface Waiter {
  resolve: (a: Answer) => void
  reject: (e: Error) => void
}

interface Thread {
  worker: Worker
  ready: Promise<void>
  waiting: Map<number, Waiter>
}

let thread: Thread | undefined
let nextAsk = 0
/**
 * Set while the thread is leaving (the process is about to): no question is asked and no thread starts meanwhile.
 * Cleared once it has left, for a process that goes on (a test running commands in its own process).
 */
let leaving = false

/** What the sessions of a model file did in this process. */
export interface SessionActivity {
  readonly opened: number
  readonly runs: number
}

const activity = new Map<string, {opened: number; runs: number}>()

/**
 * What the sessions of this process did so far, by model file (the path they were opened from): sessions opened
 * and runs asked of them. The sessions live in the thread, out of reach of a caller that would watch onnxruntime.
 */
export function sessionActivity(): ReadonlyMap<string, SessionActivity> {
  return new Map([...activity].map(([path, a]) => [path, {...a}]))
}

const stopped = (e: unknown): Error => threadStopped('the inference thread', e)

function startThread(): Thread {
  const worker = startModuleWorker(new URL(import.meta.resolve('./inference-worker.js')), new URL('./inference-worker.ts', import.meta.url))
  worker.unref()
  const waiting = new Map<number, Waiter>()
  let started = () => {}
  let failedStart: (e: Error) => void = () => {}
  const ready = new Promise<void>((resolve, reject) => {
    started = resolve
    failedStart = reject
  })
  const t: Thread = {worker, ready, waiting}
  worker.on('message', (m: Answer | 'ready') => {
    if (m === 'ready') return started()
    const waiter = waiting.get(m.id)
    waiting.delete(m.id)
    // A thread asked to leave stays referenced until it has: the process waits for it.
    if (waiting.size === 0 && !leaving) worker.unref()
    if ('error' in m) waiter?.reject(new InferenceError(m.error))
    else waiter?.resolve(m)
  })
  const fail = (e: unknown) => {
    if (thread === t) thread = undefined
    failedStart(stopped(e))
    for (const waiter of waiting.values()) waiter.reject(stopped(e))
    waiting.clear()
  }
  worker.on('error', fail)
  // Before the process leaves in the middle of work, the thread ends between two tasks (worker-module.ts).
  const unregister = stopBetweenTasks(async () => {
    if (thread === t) thread = undefined
    leaving = true
    const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()))
    // Waited for: the process stays up until the thread has left.
    worker.ref()
    worker.postMessage({op: 'leave'} satisfies Leave)
    await exited
    leaving = false
  })
  worker.on('exit', (code) => {
    unregister()
    fail(code)
  })
  return t
}

type Question = Ask extends infer A ? (A extends Ask ? Omit<A, 'id'> : never) : never

async function ask(question: Question): Promise<Answer> {
  if (leaving) throw new Error('the inference thread stopped: the process is leaving')
  const t = (thread ??= startThread())
  const id = nextAsk++
  const answered = new Promise<Answer>((resolve, reject) => t.waiting.set(id, {resolve, reject}))
  // A question waiting for its answer (or for the thread to start) keeps the process alive, as work on the main
  // thread would.
  t.worker.ref()
  // A thread that could not start has rejected `answered` already.
  await t.ready.catch(() => undefined)
  if (t.waiting.has(id)) t.worker.postMessage({...question, id})
  return answered
}

/** Opens the model at `path` in the inference thread; a model onnxruntime cannot load rejects with its message. */
export async function openThreadSession(path: string, options: ort.InferenceSession.SessionOptions): Promise<ModelSession> {
  const opened = await ask({op: 'open', path, options})
  if (!('session' in opened)) throw new Error('the inference thread did not open the session')
  const {session, inputNames, outputNames, inputMetadata} = opened
  const owner = thread
  const tally = activity.get(path) ?? {opened: 0, runs: 0}
  activity.set(path, tally)
  tally.opened++
  let released = false
  return {
    inputNames,
    outputNames,
    inputMetadata,
    async run(feeds, fetches) {
      if (thread !== owner) throw new Error('the inference thread stopped, and its sessions with it')
      tally.runs++
      const out = await ask({op: 'run', session, feeds: toWire(feeds), ...(fetches ? {fetches: [...fetches]} : {})})
      if (!('outputs' in out)) throw new Error('the inference thread sent no outputs')
      return fromWire(out.outputs)
    },
    async release() {
      // A thread that stopped took its sessions with it.
      if (released || thread !== owner) return
      released = true
      await ask({op: 'release', session}).catch(() => undefined)
    },
  }
}
