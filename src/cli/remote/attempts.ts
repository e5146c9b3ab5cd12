import {setTimeout as sleep} from 'node:timers/promises'

import {ModError} from '../../lib/errors.js'
import {visible} from '../visible.js'
import {badAnswer} from './answers.js'
import {exchange, type Answer, type ExchangeContext, type Send} from './exchange.js'
import {madeNothing, notNow} from './refusal.js'
import {isConnectionError, neverReached, retryDelayMs} from './retry.js'
import {seconds} from './run-clock.js'
import {tlsFailure} from './tls.js'

/** A request's retry policy: how many tries in all, and the key the refusals talk about. */
export interface AttemptContext extends ExchangeContext {
  attempts: number
  apiKey?: string
}

/** What a request asks for: a name for messages, how to send it, which statuses it accepts, how much it reads. */
export interface RequestPlan {
  what: string
  send: Send
  accept: (status: number) => boolean
  maxBytes: number
  /**
   * The request makes something on the server (a job): sent again only when it cannot have been made, after a
   * connection that never reached the server or mod serve's own "not now". A lost answer could hide a job made, and
   * a second one would run the same work again for nobody.
   */
  creates?: boolean
}

/** A creating request whose answer was lost: the server may have made what it asked for. */
function mayHaveMade(server: string, what: string, how: string): ModError {
  return new ModError(
    'server_unreachable',
    `${what} to ${server} failed with ${how} after the request was sent: the server may have made the job, so it is not sent again (a second job would run the same work); run the command again`,
  )
}

export interface Accepted {
  status: number
  headers: Answer['headers']
  body: unknown
}

function parsed(server: string, text: string, what: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    throw badAnswer(server, what, 'a body that is not JSON')
  }
}

/** One try: the accepted answer, or why it failed in a way worth another try (and the wait the server asked for). */
async function once(ctx: AttemptContext, plan: RequestPlan): Promise<{accepted: Accepted} | {failure: string; wait?: number}> {
  try {
    const answer = await exchange(ctx, plan.send, plan.accept, plan.maxBytes, plan.what)
    if (plan.accept(answer.status)) return {accepted: {status: answer.status, headers: answer.headers, body: parsed(ctx.server, answer.text, plan.what)}}
    const later = notNow(ctx.server, answer, ctx.apiKey)
    if (plan.creates && !madeNothing(answer)) throw mayHaveMade(ctx.server, plan.what, `an answer ${answer.status} not from mod serve`)
    return later
  } catch (e) {
    // undici's parser refused the answer: whatever answered is not an HTTP server.
    if ((e as Error).name === 'HTTPParserError') throw badAnswer(ctx.server, plan.what, `an answer that is not HTTP/1.1 (${visible((e as Error).message)})`)
    const tls = tlsFailure(ctx.server, e)
    if (tls) throw tls
    if (ctx.signal?.aborted || !isConnectionError(e)) throw e
    const failure = visible(`${(e as {code: string}).code}${(e as Error).message ? ` (${(e as Error).message})` : ''}`)
    if (plan.creates && !neverReached(e)) throw mayHaveMade(ctx.server, plan.what, failure)
    return {failure}
  }
}

/**
 * The request, tried until accepted: again after a connection failure or a "not now", waiting as the server's
 * Retry-After says or backing off, at most `attempts` times and never past the run's --timeout.
 */
export async function untilAccepted(ctx: AttemptContext, plan: RequestPlan): Promise<Accepted> {
  const {server, clock} = ctx
  for (let n = 1; ; n++) {
    if (clock.left() <= 0) throw clock.overTime()
    const tried = await once(ctx, plan)
    if ('accepted' in tried) return tried.accepted
    if (n >= ctx.attempts) {
      throw new ModError(
        'server_unreachable',
        `${plan.what} to ${server} failed ${n} ${n === 1 ? 'time' : 'times'}, last with ${tried.failure}: the server is down, unreachable or overloaded`,
      )
    }
    const delay = retryDelayMs(n, tried.wait)
    // A wait that would end past the run's time limit is not begun.
    if (delay >= clock.left()) {
      throw new ModError(
        'server_unreachable',
        `${plan.what} to ${server} failed with ${tried.failure}, and the next try (in ${seconds(delay)}) would come after the run's --timeout of ${seconds(clock.timeoutMs ?? 0)}`,
      )
    }
    await sleep(delay, undefined, {signal: ctx.signal})
  }
}
