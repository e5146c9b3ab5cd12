// The slow-upload attack on upload places, and the client it tries to keep out, on real sockets with chosen source
// addresses: used by test/server/slow-attack.test.ts at a small scale and by bench/slow-uploads.ts at full size.
import {request, type ClientRequest} from 'node:http'

const BOUNDARY = 'modattackboundary'
const TYPE = `multipart/form-data; boundary=${BOUNDARY}`
const HEAD = Buffer.from(
  `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="upload.png"\r\nContent-Type: application/octet-stream\r\n\r\n`,
)
const TAIL = Buffer.from(`\r\n--${BOUNDARY}--\r\n`)

export interface AttackOptions {
  /** The upload endpoint, e.g. http://127.0.0.1:8000/v1/moderate. */
  url: string
  /** Source addresses, each a local address of this machine. */
  addresses: string[]
  /** Connections held from each address. */
  perAddress: number
  /** `bytes` are sent every this many ms after the body's first part. */
  everyMs: number
  /** Bytes sent each `everyMs`: 1 (the default) trickles; more keeps a pace, e.g. 1200 every 100 ms is 12 000 B/s. */
  bytes?: number
  /** A connection refused (503, 429) or failed tries again after this long; answered 408, it reconnects at once. */
  retryMs: number
  /** The body size declared in Content-Length: within the server's limit, and far more than is ever sent. */
  declaredBytes?: number
}

export interface Attack {
  /** Answers the attack's connections got so far, by status ("error" for a connection that failed). */
  readonly answers: Record<string, number>
  /** Connections that sent their head and are not answered yet: the places they may hold. */
  readonly open: number
  /** Bytes the attack sent so far. */
  readonly sent: number
  /** Stops reconnecting and closes every connection. */
  stop(): void
}

/**
 * `perAddress` connections from each address, each sending the head of a multipart upload and then `bytes` every
 * `everyMs` (never past the declared size: a body all sent then ends), and reconnecting as soon as it is
 * answered: the attack of a client that holds upload places for almost no traffic, or at just the pace the server
 * asks for.
 */
export function trickleAttack(options: AttackOptions): Attack {
  const {url, addresses, perAddress, everyMs, retryMs, bytes = 1, declaredBytes = 1024 * 1024} = options
  const answers: Record<string, number> = {}
  const live = new Set<ClientRequest>()
  const tickers = new Set<NodeJS.Timeout>()
  let open = 0
  let sent = 0
  let stopped = false
  const count = (key: string) => (answers[key] = (answers[key] ?? 0) + 1)

  function connect(from: string): void {
    if (stopped) return
    let ticker: NodeJS.Timeout | undefined
    let settled = false
    const again = (delayMs: number) => {
      if (settled) return
      settled = true
      open--
      clearInterval(ticker)
      if (ticker) tickers.delete(ticker)
      live.delete(req)
      req.destroy()
      if (!stopped) setTimeout(() => connect(from), delayMs).unref()
    }
    const req = request(url, {method: 'POST', agent: false, localAddress: from, headers: {'content-type': TYPE, 'content-length': declaredBytes}}, (res) => {
      count(String(res.statusCode))
      res.resume()
      again(res.statusCode === 408 ? 0 : retryMs)
    })
    req.on('error', () => {
      if (!settled && !stopped) count('error')
      again(retryMs)
    })
    live.add(req)
    open++
    req.write(HEAD)
    sent += HEAD.length
    let left = declaredBytes - HEAD.length
    ticker = setInterval(() => {
      const n = Math.min(bytes, left)
      left -= n
      sent += n
      if (left > 0) req.write(Buffer.alloc(n, 'A'))
      else {
        clearInterval(ticker)
        req.end(Buffer.alloc(n, 'A'))
      }
    }, everyMs)
    tickers.add(ticker)
  }

  for (const from of addresses) for (let i = 0; i < perAddress; i++) connect(from)
  return {
    answers,
    get open() {
      return open
    },
    get sent() {
      return sent
    },
    stop() {
      stopped = true
      for (const ticker of tickers) clearInterval(ticker)
      for (const req of live) req.destroy()
    },
  }
}

/**
 * `count` uploads of `data` from `from`, one after the other with `gapMs` between them (each has `timeoutMs` to be
 * answered): the statuses they got, 0 for one that failed or was not answered in time.
 */
export async function uploads(url: string, options: {from: string; count: number; data: Buffer; gapMs: number; timeoutMs?: number}): Promise<number[]> {
  const statuses: number[] = []
  for (let i = 0; i < options.count; i++) {
    statuses.push(await upload(url, options.from, options.data, options.timeoutMs ?? 10_000))
    await new Promise((resolve) => setTimeout(resolve, options.gapMs))
  }
  return statuses
}

function upload(url: string, from: string, data: Buffer, timeoutMs: number): Promise<number> {
  return new Promise((resolve) => {
    const body = Buffer.concat([HEAD, data, TAIL])
    const req = request(url, {method: 'POST', agent: false, localAddress: from, headers: {'content-type': TYPE, 'content-length': body.length}}, (res) => {
      res.resume()
      res.on('end', () => {
        clearTimeout(timer)
        resolve(res.statusCode ?? 0)
      })
    })
    const timer = setTimeout(() => req.destroy(), timeoutMs)
    req.on('error', () => {
      clearTimeout(timer)
      resolve(0)
    })
    req.end(body)
  })
}

/** The share of `statuses` that are 200, as a fraction. */
export function servedShare(statuses: number[]): number {
  return statuses.length === 0 ? 0 : statuses.filter((s) => s === 200).length / statuses.length
}
