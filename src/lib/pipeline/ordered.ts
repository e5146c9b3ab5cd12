/**
 * Maps an input stream through an async function with at most `depth` calls in flight, yielding results in
 * input order: later inputs are already being worked on while an earlier one finishes, and nothing past the
 * window is read, so a stream of any length is processed in bounded memory.
 */
export async function* orderedMap<I, O>(
  inputs: Iterable<I> | AsyncIterable<I>,
  depth: number,
  work: (input: I) => Promise<O>,
): AsyncGenerator<O> {
  const iterator = (Symbol.asyncIterator in inputs ? inputs[Symbol.asyncIterator]() : inputs[Symbol.iterator]()) as
    | AsyncIterator<I>
    | Iterator<I>
  const window: Promise<{ok: O} | {err: unknown}>[] = []
  let exhausted = false
  const fill = async (): Promise<void> => {
    while (!exhausted && window.length < depth) {
      const next = await iterator.next()
      if (next.done) exhausted = true
      else window.push(work(next.value).then((ok) => ({ok}), (err: unknown) => ({err})))
    }
  }
  try {
    for (;;) {
      await fill()
      const head = window.shift()
      if (head === undefined) return
      const settled = await head
      if ('err' in settled) throw settled.err
      yield settled.ok
    }
  } finally {
    // Leaving early (an error, a consumer that stops) closes the input and lets the calls in flight settle quietly.
    await Promise.allSettled(window)
    if (!exhausted) await iterator.return?.()
  }
}
