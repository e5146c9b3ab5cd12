/**
 * Reading response bodies so that undici never stops reading a connection. undici 7 aborts the whole process (an
 * assertion, `assert(!this.paused)`, in its parser's finish) when a server that closes its connection after the body
 * does so while reading is stopped, which happens whenever the body's consumer is slower than the network: a download
 * written to disk, a client consuming an answer slowly. Its fix is in undici 8, which needs Node 22.19 and does not
 * load on Node 20.
 */
import type {Readable} from 'node:stream'

/**
 * How many bytes of a body may wait unread: undici's `highWaterMark` for bodies read whole (the images and answers
 * mod fetches are far smaller), and the queue of copyEagerly. Memory is used only while the consumer lags.
 */
export const BODY_BUFFER_BYTES = 64 * 1024 * 1024

/**
 * Hands each chunk of `body` to `write` in order, reading the body as fast as it arrives (up to `room` bytes waiting;
 * past that, reading stops until half of them are written). `write` may throw (a size limit) or fail (a full disk):
 * the body is then destroyed and that error thrown. When the body fails (the connection dropped), every chunk it
 * delivered is still written before its error is thrown: a download's part keeps all it received, for a resume. An
 * abort of `signal` stops at once with its reason.
 */
export async function copyEagerly(body: Readable, write: (chunk: Buffer) => void | Promise<void>, room = BODY_BUFFER_BYTES, signal?: AbortSignal): Promise<void> {
  const queue: Buffer[] = []
  let queued = 0
  let ended = false
  let failure: {error: unknown} | undefined
  let wake: (() => void) | undefined
  const notify = (): void => {
    wake?.()
    wake = undefined
  }
  const onData = (chunk: Buffer): void => {
    queue.push(chunk)
    queued += chunk.length
    if (queued >= room) body.pause()
    notify()
  }
  const onEnd = (): void => {
    ended = true
    notify()
  }
  const onError = (error: unknown): void => {
    failure ??= {error}
    onEnd()
  }
  body.on('data', onData).once('end', onEnd).once('error', onError)
  signal?.addEventListener('abort', notify, {once: true})
  try {
    for (;;) {
      signal?.throwIfAborted()
      const chunk = queue.shift()
      if (chunk !== undefined) {
        queued -= chunk.length
        if (body.isPaused() && queued < room / 2) body.resume()
        await write(chunk)
      } else if (ended) break
      else await new Promise<void>((resolve) => (wake = resolve))
    }
    if (failure) throw failure.error
  } finally {
    body.off('data', onData).off('end', onEnd).off('error', onError)
    signal?.removeEventListener('abort', notify)
    if (!ended) {
      // A body destroyed unread may still report its connection's end: nothing is listening for it any more.
      body.on('error', () => {})
      body.destroy()
    }
  }
}
