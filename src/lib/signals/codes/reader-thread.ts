/**
 * The code reader off the event loop: zxing runs in a worker thread of its own (read-worker.ts), started on the
 * first frame and ended by close(), so that a frame that takes zxing long (a noise frame holds it for some 160 ms)
 * does not hold up other requests (GET /health). Frames are read one at a time, in the order asked. Each has a
 * time limit: past it the thread is ended, the frame counts as cut short (no codes, `timedOut`), and the next
 * frame starts a new thread. The limit is the thread's own CPU time where Node.js measures it (worker.cpuUsage,
 * Node.js 24.6 and later, 22.23 too), so that a server whose cores are busy with other work does not cut short frames
 * it would have read (a deny-listed code passed by loading the server); a starved thread is still cut at
 * WALL_LIMIT_FACTOR times the limit. Where it is not measured, the limit is wall time. The frame's luminance is
 * made here (read.ts frameLuminance: at most `maxPixels` bytes), so the thread is handed a fraction of the frame's
 * bytes and reads exactly what an in-thread reader would.
 */
import type {Worker} from 'node:worker_threads'

import type {RgbImage} from '../../image/rgb.js'
import {startModuleWorker, threadStopped} from '../../worker-module.js'
import {DEFAULT_MAX_PIXELS, frameLuminance, type CodeReaderOptions, type FoundCode, type FrameSize, type Luminance} from './read.js'

/**
 * A frame's time limit: zxing reads a 1920x1080 frame (the most it reads at full size) in some 20 to 200 ms, so a
 * frame still running after this is cut short rather than allowed to hold the reader.
 */
export const DEFAULT_FRAME_TIMEOUT_MS = 2000

/** How much longer than its CPU-time limit a frame may wait for the cores before it is cut short all the same. */
const WALL_LIMIT_FACTOR = 5

/** The shortest wait before the thread's CPU time is looked at again. */
const RECHECK_MS = 20

/** worker.cpuUsage, where this Node.js has it (the type is not in every @types/node the project admits). */
type CpuUsageOf = (previous?: NodeJS.CpuUsage) => Promise<NodeJS.CpuUsage>
const cpuUsageOf = (w: Worker): CpuUsageOf | undefined => {
  const f = (w as unknown as {cpuUsage?: CpuUsageOf}).cpuUsage
  return typeof f === 'function' ? f.bind(w) : undefined
}

export interface ThreadedReaderOptions extends CodeReaderOptions {
  /** A frame's time limit in the thread, in ms (default DEFAULT_FRAME_TIMEOUT_MS). */
  timeoutMs?: number
}

export interface FrameRead {
  codes: FoundCode[]
  /** Reading was stopped at the frame's time limit: codes in it may have been missed. */
  timedOut: boolean
}

export interface ThreadedCodeReader {
  read(image: RgbImage): Promise<FrameRead>
  close(): Promise<void>
}

/** The worker thread: read-worker.js (or .ts) beside this file. */
function startWorker(options: CodeReaderOptions): Worker {
  return startModuleWorker(new URL(import.meta.resolve('./read-worker.js')), new URL('./read-worker.ts', import.meta.url), {workerData: options})
}

interface Running {
  worker: Worker
  ready: Promise<void>
}

const stopped = (e: unknown): Error => threadStopped("the code reader's thread", e)

/** A thread started, and its first word: ready, or why it could not start. */
function startThread(options: CodeReaderOptions): Running {
  const worker = startWorker(options)
  // An idle thread does not keep the process alive; a frame being read does (ref in readOne).
  worker.unref()
  const ready = new Promise<void>((resolve, reject) => {
    const early = (e: unknown) => reject(stopped(e))
    worker.once('error', early)
    worker.once('exit', early)
    worker.once('message', (m) => {
      worker.off('error', early)
      worker.off('exit', early)
      if (m === 'ready') resolve()
      else reject(new Error(`the code reader's thread said ${JSON.stringify(m)} before it was ready`))
    })
  })
  return {worker, ready}
}

interface FrameAsk {
  id: number
  grey: Luminance
  size: FrameSize
}

/**
 * One frame asked of a ready thread: its answer, or cut short once it has taken `timeoutMs` of the thread's CPU
 * time (of wall time where that is not measured; module comment); `stop` ends a thread that failed or ran out of time.
 */
function askThread(r: Running, ask: FrameAsk, timeoutMs: number, stop: (r: Running) => void): Promise<FrameRead> {
  return new Promise<FrameRead>((resolve, reject) => {
    const cpuUsage = cpuUsageOf(r.worker)
    const asked = performance.now()
    // Read before the frame is posted, so that all of the frame's time counts; a rejection (the thread gone) cuts.
    const before = cpuUsage?.().catch(() => undefined)
    let finished = false
    const done = () => {
      finished = true
      clearTimeout(timer)
      r.worker.off('message', answer)
      r.worker.off('error', failed)
      r.worker.off('exit', failed)
    }
    const answer = (m: {id: number; codes?: FoundCode[]; error?: string}) => {
      if (m.id !== ask.id) return
      done()
      if (m.error !== undefined) reject(new Error(m.error))
      else resolve({codes: m.codes ?? [], timedOut: false})
    }
    const failed = (e: unknown) => {
      done()
      stop(r)
      reject(stopped(e))
    }
    const cut = () => {
      done()
      stop(r)
      resolve({codes: [], timedOut: true})
    }
    const spentMs = async (): Promise<number> => {
      const start = await before
      const now = start && (await cpuUsage?.(start).catch(() => undefined))
      return now ? (now.user + now.system) / 1000 : Infinity
    }
    const check = async () => {
      const waited = performance.now() - asked
      const spent = cpuUsage && waited < WALL_LIMIT_FACTOR * timeoutMs ? await spentMs() : Infinity
      if (finished) return
      if (spent >= timeoutMs) cut()
      else timer = setTimeout(() => void check(), Math.max(timeoutMs - spent, RECHECK_MS))
    }
    let timer = setTimeout(() => void check(), timeoutMs)
    r.worker.on('message', answer)
    r.worker.once('error', failed)
    r.worker.once('exit', failed)
    r.worker.postMessage(ask)
  })
}

export function openThreadedCodeReader(options: ThreadedReaderOptions = {}): ThreadedCodeReader {
  const {timeoutMs = DEFAULT_FRAME_TIMEOUT_MS, ...readerOptions} = options
  const maxPixels = options.maxPixels ?? DEFAULT_MAX_PIXELS
  let running: Running | undefined
  let closed = false
  let queue: Promise<unknown> = Promise.resolve()
  let nextId = 0

  function stop(r: Running): void {
    if (running === r) running = undefined
    void r.worker.terminate()
  }

  async function readOne(image: RgbImage): Promise<FrameRead> {
    if (closed) throw new Error('the code reader is closed')
    const r = (running ??= startThread(readerOptions))
    r.worker.ref()
    try {
      await r.ready
    } catch (e) {
      stop(r)
      throw e
    }
    const id = nextId++
    const grey = frameLuminance(image, maxPixels)
    try {
      return await askThread(r, {id, grey, size: {width: image.width, height: image.height}}, timeoutMs, stop)
    } finally {
      r.worker.unref()
    }
  }

  return {
    read(image) {
      const result = queue.then(() => readOne(image))
      queue = result.catch(() => undefined)
      return result
    },
    async close() {
      closed = true
      const r = running
      running = undefined
      if (r) await r.worker.terminate()
    },
  }
}
