import type {IncomingMessage, ServerResponse} from 'node:http'

import type {Scheduler} from '../../lib/pipeline/scheduler.js'
import type {StepTimes} from '../../lib/pipeline/steps.js'
import {clientOf} from '../client-address.js'
import type {RouteContext} from '../context.js'
import {requestLog} from '../logger.js'
import type {Upload} from '../upload-places.js'
import {serverTiming} from '../server-timing.js'

/**
 * The path of every moderation request: the input is received (upload, JSON, URL fetch) on an upload place of
 * its own (MOD_MAX_UPLOADS, MOD_MAX_UPLOADS_PER_CLIENT; a full queue already refuses here, before anything is read), its bytes counted
 * against the worker's MOD_MAX_BUFFERED_BYTES through `upload`, and only then does the request take a place in
 * the queue (503 when full). Then, the model loaded, `work` runs on the engine with the request's scheduler:
 * decoding takes turns with the worker's other requests and goes on while the model infers theirs, a bounded few
 * prepared inputs ahead (queue.ts), and inference is batched with them. The held bytes
 * are given back once the request is answered. With MOD_SERVER_TIMING, `work` gets a record to fill with the
 * engine's steps, and the answer a Server-Timing header with them, the receiving and the whole.
 */
export async function moderate<I, R>(
  ctx: RouteContext,
  req: IncomingMessage,
  res: ServerResponse,
  receive: (upload: Upload, signal: AbortSignal) => Promise<I>,
  work: (input: I, scheduler: Scheduler, signal: AbortSignal, steps?: StepTimes) => Promise<R>,
): Promise<R> {
  const started = performance.now()
  const steps: StepTimes | undefined = ctx.settings.serverTiming ? {} : undefined
  const upload = ctx.gate.receive(clientOf(req))
  const signal = clientGone(res)
  try {
    let input: I
    try {
      input = await receive(upload, signal)
    } finally {
      upload.done()
    }
    const received = performance.now() - started
    const ticket = ctx.gate.admit()
    try {
      await ctx.model.ensure(requestLog(ctx.log, res))
      const result = await work(input, ticket.scheduler(signal), signal, steps)
      if (steps) res.setHeader('Server-Timing', serverTiming(received, steps, performance.now() - started))
      return result
    } finally {
      ticket.release()
    }
  } finally {
    upload.release()
  }
}

/** Aborted when the connection closes before the answer was sent (the client went away). */
function clientGone(res: ServerResponse): AbortSignal {
  const controller = new AbortController()
  res.on('close', () => {
    if (!res.writableFinished) controller.abort()
  })
  return controller.signal
}
