/**
 * Where the two stages of moderating an image run. `prepare` is the CPU work before inference (reading,
 * decoding, trimming, preprocessing); `infer` waits for the model. The engine runs every item through both;
 * the server supplies a scheduler that bounds how many requests prepare at once and drops a request whose
 * client went away, and a command uses the direct one.
 */
export interface Scheduler {
  prepare<T>(work: () => Promise<T>): Promise<T>
  infer<T>(work: () => Promise<T>): Promise<T>
}

export const DIRECT: Scheduler = {
  prepare: (work) => work(),
  infer: (work) => work(),
}
