/**
 * The safe items that `mod scan --report-sample N` puts into the report for review: a bottom-N sample. Each safe
 * item gets a rank, the sha256 of `report-sample:` and the sha256 of its bytes, and the N of lowest rank are
 * kept. So the choice depends on the images alone, not on their names or the order they are scanned in: the same
 * folder gives the same sample on every run, a larger N keeps every item of a smaller one, and an image added to
 * the folder enters the sample only in place of one that ranks above it. The rank's prefix keeps it independent
 * of `mod calibrate`'s held-out split (which hashes `<seed>:` and the same sha256), so the sampled items are not
 * all held out, nor all fitted on.
 */
import {createHash} from 'node:crypto'

export interface ReviewSample<T> {
  /** Considers one safe item, by the sha256 of its bytes. */
  offer(sha256: string, item: T): void
  /** The items kept, lowest rank first. */
  chosen(): T[]
}

export function reviewSample<T>(size: number): ReviewSample<T> {
  // Sorted by rank, at most `size` long: a new item is compared with the highest rank kept, then inserted.
  const kept: {rank: string; item: T}[] = []
  return {
    offer(sha256, item) {
      if (size <= 0) return
      const rank = createHash('sha256').update(`report-sample:${sha256}`).digest('hex')
      if (kept.length === size && rank >= kept[kept.length - 1].rank) return
      let lo = 0
      let hi = kept.length
      while (lo < hi) {
        const mid = (lo + hi) >> 1
        if (kept[mid].rank <= rank) lo = mid + 1
        else hi = mid
      }
      kept.splice(lo, 0, {rank, item})
      if (kept.length > size) kept.pop()
    },
    chosen: () => kept.map((k) => k.item),
  }
}
