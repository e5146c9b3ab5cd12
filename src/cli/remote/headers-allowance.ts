/**
 * How long the answer to an upload may take to start. The server scores the batches it holds side by side, so a
 * batch's answer comes after work in proportion to every image the run has in flight there, not to its own: on a
 * healthy server scoring about an image a second, the four batches of 16 of `--concurrency 4` took 50 to 60 s
 * each, and a fixed 60 s limit gave up on healthy batches, which the server then dropped and the retry queued
 * again behind the others (a run of 100 images sent 11 batches for 7; at 1.4 s an image every try failed).
 *
 * The limit is the base one plus twice the server's time per image, learned from this run (the slowest seen: an
 * answer's wait, or a wait given up, over the images in flight), times the images in flight (the most the run
 * has had, since the server sees them all once a run is under way). The first uploads of a run have the base limit
 * alone. At most four times the base limit, so that a server that hangs is still found.
 */
export interface HeadersAllowance {
  /** A request of `images` files is sent now: its headers limit, and `done` once its headers came or it failed. */
  start(images: number): {limitMs: number; done(outcome: 'answered' | 'timed out' | 'failed'): void}
}

export function headersAllowance(baseMs: number, now: () => number = Date.now): HeadersAllowance {
  let inFlight = 0
  let peak = 0
  let msPerImage = 0
  return {
    start(images) {
      inFlight += images
      peak = Math.max(peak, inFlight)
      const limitMs = Math.min(4 * baseMs, baseMs + Math.ceil(2 * msPerImage * peak))
      const sent = now()
      let ended = false
      return {
        limitMs,
        done(outcome) {
          if (ended) return
          ended = true
          inFlight -= images
          if (outcome !== 'failed') msPerImage = Math.max(msPerImage, (now() - sent) / peak)
        },
      }
    },
  }
}
