import type {ServerResponse} from 'node:http'

import type {Limits} from '../lib/config/settings.js'
import {ModError} from '../lib/errors.js'
import {formatSize} from '../lib/sizes.js'

/** How fast a body must arrive. */
export interface Pace {
  /** MOD_BODY_TIMEOUT_MS: the longest silence, and the time a body has before its average rate counts. */
  idleMs: number
  /** MOD_BODY_MIN_RATE, in bytes per second. */
  minRate: number
}

export function paceOf(limits: Pick<Limits, 'bodyTimeoutMs' | 'bodyMinRate'>): Pace {
  return {idleMs: limits.bodyTimeoutMs, minRate: limits.bodyMinRate}
}

/** The two clocks of one body being read (body-stream.ts), told of each chunk. */
export interface PaceWatch {
  arrived(bytes: number): void
  stop(): void
}

/**
 * The longest a body's silence deadline may come after its rate's for the silence to be what it is told: a body
 * that stopped sending is answered "no part … arrived", not "arriving too slowly", though by then its average is too
 * low too. A client that keeps sending, however little, is never silent that long at its rate's deadline.
 */
function tieMs(idleMs: number): number {
  return Math.min(1000, idleMs / 2)
}

/**
 * Calls `fail` with `request_timeout` when nothing arrives for `idleMs`, or when, `idleMs` after it started, fewer
 * than `minRate` bytes per second have arrived on average. While `readerBehind()` (the server holds the body back)
 * neither counts: the silence is not the client's, and the rate is then measured anew.
 *
 * One timer checks both deadlines, in a fixed order, and a silence that reaches `idleMs` within tieMs of the rate's
 * deadline is what the body is failed for. Two timers due at about the same moment fired in either order: the same
 * stalled body was told one thing or the other, by a millisecond either way.
 */
export function watchPace({idleMs, minRate}: Pace, readerBehind: () => boolean, fail: (e: ModError) => void): PaceWatch {
  let timer: NodeJS.Timeout | undefined
  let since = Date.now()
  let last = since
  let arrived = 0
  /** When the bytes arrived since `since` become too few. */
  const paceDue = () => since + idleMs + (arrived / minRate) * 1000
  // The timer never keeps a process alive on its own: a serving process has its listening socket for that, and a
  // body refused by its reader (left unread) is only failed when it fires.
  const arm = (now: number, due: number) => {
    timer = setTimeout(check, Math.max(0, due - now)).unref()
  }
  function check(): void {
    const now = Date.now()
    if (readerBehind()) {
      since = last = now
      arrived = 0
      return arm(now, now + idleMs)
    }
    const idleDue = last + idleMs
    if (now >= idleDue) return fail(new ModError('request_timeout', `no part of the request body arrived for ${idleMs} ms (MOD_BODY_TIMEOUT_MS)`))
    const pace = paceDue()
    if (now < pace) return arm(now, Math.min(idleDue, pace))
    // Silent so long that the silence deadline is at hand: it decides, unless a byte comes first.
    if (idleDue - now <= tieMs(idleMs)) return arm(now, idleDue)
    const seconds = ((now - since) / 1000).toFixed(1)
    fail(
      new ModError(
        'request_timeout',
        `the request body is arriving too slowly: ${formatSize(arrived)} in ${seconds} s, less than ${formatSize(minRate)} per second (MOD_BODY_MIN_RATE)`,
      ),
    )
  }
  arm(since, since + idleMs)
  return {
    // A chunk only moves the deadlines later: the timer, when it fires, finds them moved and waits on.
    arrived(bytes) {
      last = Date.now()
      arrived += bytes
    },
    stop() {
      clearTimeout(timer)
    },
  }
}

/**
 * Holds the rest of a body that no route read to its end (a request answered without reading it, or whose route
 * stopped early) to the same pace: Node reads and drops that rest after the answer so that the connection can carry
 * the next request, and a client that keeps trickling it would keep the connection for good, Node's own clock for a
 * whole request being off (app.ts). Falling behind cuts the connection: its answer is sent already. An answer that
 * closes its connection is left alone: it is closed in stages, with bounds of its own (linger.ts).
 */
export function paceUnreadRest(res: ServerResponse, pace: Pace): void {
  res.once('finish', () => {
    const {req} = res
    const {socket} = req
    if (req.complete || socket.destroyed || /\bclose\b/i.test(String(res.getHeader('connection') ?? ''))) return
    // Node drops that rest without a 'data' event: its bytes show only in the socket's count, looked at often
    // enough that a body keeping pace never looks silent.
    let counted = socket.bytesRead
    const watch = watchPace(pace, () => false, () => socket.destroy())
    const look = setInterval(() => {
      if (socket.bytesRead > counted) watch.arrived(socket.bytesRead - counted)
      counted = socket.bytesRead
      if (req.complete) stop()
    }, Math.min(1000, pace.idleMs / 4)).unref()
    const stop = () => {
      clearInterval(look)
      watch.stop()
      socket.off('close', stop)
    }
    socket.once('close', stop)
  })
}
