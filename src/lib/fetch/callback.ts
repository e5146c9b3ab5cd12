import {createHmac} from 'node:crypto'

import ipaddr from 'ipaddr.js'

import {ModError} from '../errors.js'
import {blockReason, parseHost} from './address.js'
import {type Dial, directDial, pinnedClient} from './pinned.js'
import {type Resolver, checkUrl, describeUrl, namesLoopback, systemResolver} from './target.js'

export interface CallbackTargetOptions {
  /** MOD_CALLBACK_ALLOW_PRIVATE: private, loopback and other non-public addresses are allowed too. */
  allowPrivate: boolean
  resolve?: Resolver
}

export interface CallbackOptions extends CallbackTargetOptions {
  /** MOD_CALLBACK_SECRET: signs the body (X-Mod-Signature); unset, no signature is sent. */
  secret?: string
  /** Attempts in all; a 2xx answer ends them. Default 5. */
  attempts?: number
  /** Wait before the second attempt, doubled for each later one. Default 1000 ms. */
  backoffMs?: number
  /** One attempt's deadline. Default 10 000 ms. */
  timeoutMs?: number
  connect?: Dial
  /** Ends the retries early (the process is stopping). */
  signal?: AbortSignal
}

/** `sha256=<hex>`: HMAC-SHA256 of the exact body bytes with the shared secret. */
export function signature(secret: string, body: string | Buffer): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`
}

/**
 * The addresses a callback may be sent to, with the rules of image URLs (http(s) only, no credentials, no
 * browser-refused port, every resolved address public, resolved once), unless private addresses are allowed.
 */
export async function callbackAddresses(raw: string, o: CallbackTargetOptions): Promise<{url: URL; addresses: string[]}> {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    throw new ModError('bad_request', 'callback_url is not a valid absolute URL')
  }
  // Named as the callback's: an image job's refusal would otherwise read as one of its items' URLs.
  checkUrl(url, 'the callback URL')
  const host = parseHost(url.hostname)
  let answers: string[]
  if (host.kind === 'ip') answers = [host.address.toString()]
  else if (namesLoopback(host.name) && !o.allowPrivate) {
    throw new ModError('url_blocked', `the callback URL ${describeUrl(url)} names the loopback host; only public addresses are called (MOD_CALLBACK_ALLOW_PRIVATE)`)
  } else {
    try {
      answers = await (o.resolve ?? systemResolver)(host.name)
    } catch {
      throw new ModError('url_fetch_failed', `could not resolve ${host.name}`)
    }
    if (answers.length === 0) throw new ModError('url_fetch_failed', `could not resolve ${host.name}`)
  }
  for (const answer of answers) {
    if (!ipaddr.isValid(answer)) throw new ModError('url_blocked', `the callback URL ${describeUrl(url)} resolves to ${answer}, which is not an IP address`)
    const reason = blockReason(ipaddr.parse(answer))
    if (reason && !o.allowPrivate) {
      throw new ModError(
        'url_blocked',
        `the callback URL ${describeUrl(url)} is ${reason}; only public addresses are called (MOD_CALLBACK_ALLOW_PRIVATE)`,
      )
    }
  }
  return {url, addresses: answers}
}

const wait = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(done, ms)
    function done() {
      clearTimeout(timer)
      signal?.removeEventListener('abort', done)
      resolve()
    }
    signal?.addEventListener('abort', done, {once: true})
  })

/**
 * POSTs `body` (JSON text) to the callback URL, signed, connecting only to checked addresses (no redirect
 * is followed). Retries on a failure or a non-2xx answer with exponential backoff, `attempts` times in
 * all. Resolves with the number of attempts made once one succeeded; rejects with the last problem.
 */
export async function sendCallback(raw: string, body: string, o: CallbackOptions): Promise<number> {
  const attempts = o.attempts ?? 5
  const backoffMs = o.backoffMs ?? 1000
  const timeoutMs = o.timeoutMs ?? 10_000
  let problem: unknown
  for (let attempt = 1; attempt <= attempts; attempt++) {
    if (attempt > 1) await wait(backoffMs * 2 ** (attempt - 2), o.signal)
    if (o.signal?.aborted) break
    try {
      // Resolved and checked again on every attempt: the answer may have changed since the job was accepted.
      const {url, addresses} = await callbackAddresses(raw, o)
      const client = await pinnedClient(url.origin, addresses, o.connect ?? directDial, timeoutMs)
      try {
        const response = await client.request({
          path: url.pathname + url.search,
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'user-agent': 'mod (job callback)',
            ...(o.secret === undefined ? {} : {'x-mod-signature': signature(o.secret, body)}),
          },
          body,
          signal: AbortSignal.timeout(timeoutMs),
        })
        await response.body.dump()
        if (response.statusCode >= 200 && response.statusCode < 300) return attempt
        problem = new ModError('url_fetch_failed', `${describeUrl(url)} answered HTTP ${response.statusCode}`)
      } finally {
        await client.destroy()
      }
    } catch (e) {
      problem = e
      // A URL that is refused stays refused.
      if (e instanceof ModError && (e.code === 'url_blocked' || e.code === 'bad_request')) break
    }
  }
  throw problem ?? new ModError('url_fetch_failed', 'the callback was not sent')
}
