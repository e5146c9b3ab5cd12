/** Byte counts and durations as the documentation prints them. */

const MiB = 1024 * 1024

/** "25 MiB (26 214 400 bytes)": the unit the settings are usually written in, and the exact count. */
export function humanBytes(n: number): string {
  const exact = `${grouped(n)} bytes`
  if (n >= MiB) return `${trimmed(n / MiB)} MiB (${exact})`
  if (n >= 1024) return `${trimmed(n / 1024)} KiB (${exact})`
  return exact
}

function trimmed(x: number): string {
  return Number.isInteger(x) ? String(x) : x.toFixed(2).replace(/0+$/, '')
}

/** "4 000 000": thousands separated by spaces. */
export function grouped(n: number): string {
  return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ' ')
}

/** "10 s" for whole seconds, else "2500 ms". */
export function humanSeconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`
}
