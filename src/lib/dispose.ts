/**
 * How every owner of models and sessions lets them go: `dispose()` (or `await using`) releases once; a second
 * call waits for the same release, and `disposed` lets the owner refuse work after it.
 */
export interface Disposer {
  readonly disposed: boolean
  dispose(): Promise<void>
  [Symbol.asyncDispose](): Promise<void>
}

export function disposer(release: () => Promise<void>): Disposer {
  let released: Promise<void> | undefined
  const dispose = (): Promise<void> => (released ??= release())
  return {
    get disposed() {
      return released !== undefined
    },
    dispose,
    [Symbol.asyncDispose]: dispose,
  }
}
