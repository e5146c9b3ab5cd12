/** Equal-sized inputs laid end to end in one tensor, as a batched model run takes them. */
export function stackTensors(items: readonly Float32Array[]): Float32Array {
  const size = items[0]?.length ?? 0
  const batch = new Float32Array(size * items.length)
  items.forEach((t, i) => batch.set(t, i * size))
  return batch
}
