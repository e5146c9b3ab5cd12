/**
 * Inputs laid end to end in one tensor, as a batched model run takes them (and one frame's probabilities, view
 * after view). One input is the tensor itself, not a copy: a single image's run reads its preprocessed pixels
 * where preprocessing wrote them (model runs only read their inputs).
 */
export function stackTensors(items: readonly Float32Array[]): Float32Array {
  if (items.length === 1) return items[0]
  const batch = new Float32Array(items.reduce((n, t) => n + t.length, 0))
  let at = 0
  for (const t of items) {
    batch.set(t, at)
    at += t.length
  }
  return batch
}
