/** A value made on first use and shared by every caller; a failed attempt is forgotten so the next call retries. */
export interface Lazy<T> {
  get(): Promise<T>
  /** The value once made, without starting anything. */
  peek(): T | undefined
  /** The attempt under way or the value made, without starting anything. */
  current(): Promise<T> | undefined
  /** Forgets the value (or the attempt under way): the next `get` makes it again. */
  reset(): void
}

export function lazy<T>(make: () => Promise<T>): Lazy<T> {
  let pending: Promise<T> | undefined
  let value: {v: T} | undefined
  return {
    get() {
      if (pending) return pending
      const attempt = make().then(
        (v) => {
          if (pending === attempt) value = {v}
          return v
        },
        (e: unknown) => {
          if (pending === attempt) pending = undefined
          throw e
        },
      )
      pending = attempt
      return attempt
    },
    peek: () => value?.v,
    current: () => pending,
    reset() {
      pending = undefined
      value = undefined
    },
  }
}
