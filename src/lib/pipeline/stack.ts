/** Inputs laid end to end in one tensor, as a batched model run takes them (and one frame's probabilities, view after view). */
export function stackTensors(items: readonly Float32Array[]): Float32Array {
  const batch = new Float32Array(items.reduce((n, t) => n + t.length, 0))
  let at = 0
  for (const t of items) {
    batch.set(t, at)
    at += t.length
  }
  return batch
}
