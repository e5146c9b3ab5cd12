import type {Dispatcher} from 'undici'

import {ModError} from '../../lib/errors.js'
import {readCapped} from '../../lib/input/read-capped.js'
import {formatSize} from '../../lib/sizes.js'
import {badAnswer} from './answers.js'
import {seconds, type RunClock} from './run-clock.js'

/** How long one request may take: its answer's headers, then its body (with no pause longer than idleMs). */
export interface RequestTimeouts {
  headersMs: number
  bodyMs: number
  idleMs: number
}

/**
 * The server scores a whole batch before its answer starts, so headers may take a while on a busy server; a body
 * is JSON of a few MiB at most, which a working connection delivers in seconds.
 */
export const REQUEST_TIMEOUTS: RequestTimeouts = {headersMs: 60_000, bodyMs: 30_000, idleMs: 10_000}

/** An error answer (JSON `{error: {code, message}}`, or a balancer's page) is read up to this. */
const MAX_ERROR_BODY_BYTES = 64 * 1024

/** What every exchange of a run shares: the server it names, the limits, the run's clock, the run's abort. */
export interface ExchangeContext {
  server: string
  limits: RequestTimeouts
  clock: RunClock
  signal?: AbortSignal
}

/** Sends one request; the signal aborts it. */
export type Send = (signal: AbortSignal) => Promise<Dispatcher.ResponseData>

/** An answer read whole: at most the request's maxBytes when accepted, MAX_ERROR_BODY_BYTES when not. */
export interface Answer {
  status: number
  headers: Dispatcher.ResponseData['headers']
  text: string
}

/** The body as text, at most maxBytes, counted as it arrives (whatever Content-Length claims). */
async function readBody(server: string, res: Dispatcher.ResponseData, maxBytes: number, what: string): Promise<string> {
  const tooLarge = () => badAnswer(server, what, `a body larger than the ${formatSize(maxBytes)} it can hold`)
  const length = Number(res.headers['content-length'])
  if (Number.isFinite(length) && length > maxBytes) {
    res.body.destroy()
    throw tooLarge()
  }
  return (await readCapped(res.body, maxBytes, what, tooLarge)).toString('utf8')
}

/**
 * One exchange under its own time limits: the headers by headersMs (undici's own timer), then the whole body by
 * bodyMs; neither past the run's deadline.
 */
export async function exchange(ctx: ExchangeContext, send: Send, accept: (status: number) => boolean, maxBytes: number, what: string): Promise<Answer> {
  const {server, limits, clock} = ctx
  const timer = new AbortController()
  const signal = AbortSignal.any([timer.signal, ...(ctx.signal ? [ctx.signal] : [])])
  const arm = (ms: number, why: () => Error): NodeJS.Timeout => setTimeout(() => timer.abort(why()), Math.max(0, ms))
  // The headers' own limit is undici's (headersTimeout, counted from the upload's last progress): here only the run's.
  let alarm = clock.timeoutMs === undefined ? undefined : arm(clock.left(), clock.overTime)
  try {
    const res = await send(signal)
    clearTimeout(alarm)
    // A body that has begun and comes this slowly is a broken server or proxy, not a busy one: not retried.
    const slow = () =>
      new ModError('server_unreachable', `${what} to ${server}: the answer's body was not whole ${seconds(limits.bodyMs)} after its headers: a server or proxy sends it too slowly`)
    // Which limit comes first is decided now: a timer may fire a little before Date.now() reaches its time.
    const left = clock.left()
    alarm = left <= limits.bodyMs ? arm(left, clock.overTime) : arm(limits.bodyMs, slow)
    // A body already cut off by the timer throws its reason, not undici's "aborted".
    const onAbort = () => res.body.destroy(timer.signal.reason as Error)
    timer.signal.addEventListener('abort', onAbort, {once: true})
    const limit = accept(res.statusCode) ? maxBytes : MAX_ERROR_BODY_BYTES
    const text = await readBody(server, res, limit, what).catch((e: unknown) => {
      throw timer.signal.aborted ? timer.signal.reason : e
    })
    return {status: res.statusCode, headers: res.headers, text}
  } catch (e) {
    if (timer.signal.aborted && !ctx.signal?.aborted) throw timer.signal.reason
    throw e
  } finally {
    clearTimeout(alarm)
  }
}
