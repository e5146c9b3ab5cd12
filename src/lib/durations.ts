/** Durations as messages and the documentation print them (sizes: sizes.ts). */

/** "10 s" for whole seconds, else "2500 ms". */
export function humanSeconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`
}
