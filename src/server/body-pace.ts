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
 * Calls `fail` with `request_timeout` when nothing arrives for `idleMs`, or when, `idleMs` after it started, fewer
 * than `minRate` bytes per second have arrived on average. While `readerBehind()` (the server holds the body back)
 * neither counts: the silence is not the client's, and the rate is then measured anew.
 */
export function watchPace({idleMs, minRate}: Pace, readerBehind: () => boolean, fail: (e: ModError) => void): PaceWatch {
  let timer: NodeJS.Timeout | undefined
  let paceTimer: NodeJS.Timeout | undefined
  let since = Date.now()
  let arrived = 0
  // The timers never keep a process alive on their own: a serving process has its listening socket for that, and
  // a body refused by its reader (left unread) is only failed when they fire.
  const arm = () => {
    clearTimeout(timer)
    timer = setTimeout(onIdle, idleMs).unref()
  }
  /** When the bytes arrived since `since` become too few: checked then, not on every chunk. */
  const paceDue = () => since + idleMs + (arrived / minRate) * 1000
  const armPace = () => {
    paceTimer = setTimeout(onPace, Math.max(0, paceDue() - Date.now())).unref()
  }
  function onIdle(): void {
    if (readerBehind()) arm()
    else fail(new ModError('request_timeout', `no part of the request body arrived for ${idleMs} ms (MOD_BODY_TIMEOUT_MS)`))
  }
  function onPace(): void {
    const now = Date.now()
    if (readerBehind()) {
      since = now
      arrived = 0
    } else if (now >= paceDue()) {
      const seconds = ((now - since) / 1000).toFixed(1)
      fail(
        new ModError(
          'request_timeout',
          `the request body is arriving too slowly: ${formatSize(arrived)} in ${seconds} s, less than ` +
            `${formatSize(minRate)} per second (MOD_BODY_MIN_RATE)`,
        ),
      )
      return
    }
    armPace()
  }
  arm()
  armPace()
  return {
    arrived(bytes) {
      arm()
      arrived += bytes
    },
    stop() {
      clearTimeout(timer)
      clearTimeout(paceTimer)
    },
  }
}
