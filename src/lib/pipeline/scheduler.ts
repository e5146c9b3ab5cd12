/**
 * Where the two stages of moderating an image run. `prepare` is the CPU work before inference (reading,
 * decoding, trimming, preprocessing); `infer` waits for the model. The engine runs every item through both;
 * the server supplies a scheduler that bounds how many requests prepare at once, and how many prepared inputs
 * wait for the model, and drops a request whose client went away; a command uses the direct one. Every `prepare`
 * that succeeds is followed by one `infer` (of what it prepared): the server's scheduler holds a place for the
 * item from one to the end of the other.
 */
export interface Scheduler {
  /**
   * Runs `work` in the preparing stage. `placed` is told once the item holds its place there: when nothing but
   * other items' preparing stands between it and its own, so that the batcher may wait for it.
   */
  prepare<T>(work: () => Promise<T>, placed?: () => void): Promise<T>
  infer<T>(work: () => Promise<T>): Promise<T>
}

export const DIRECT: Scheduler = {
  prepare: (work, placed) => {
    placed?.()
    return work()
  },
  infer: (work) => work(),
}
