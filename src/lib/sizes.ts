/**
 * Sizes for people, in the binary units the size limits use (25 MB in a setting means 25 MiB): every message,
 * table and document that shows a byte count writes it with these.
 */

const KiB = 1024
const MiB = 1024 * KiB

/** "25 MiB", "25.13 MiB", "64 KiB", "512 bytes": at most two decimals. */
export function formatSize(bytes: number): string {
  if (bytes >= MiB) return `${decimals(bytes / MiB)} MiB`
  if (bytes >= KiB) return `${decimals(bytes / KiB)} KiB`
  return bytes === 1 ? '1 byte' : `${bytes} bytes`
}

/** "25 MiB (26 214 400 bytes)": the size with its exact count, where a reader may need to write it in a setting. */
export function formatSizeExact(bytes: number): string {
  return bytes >= KiB ? `${formatSize(bytes)} (${grouped(bytes)} bytes)` : formatSize(bytes)
}

/** "4 000 000": thousands separated by spaces. */
export function grouped(n: number): string {
  return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ' ')
}

function decimals(x: number): string {
  return Number.isInteger(x) ? String(x) : x.toFixed(2).replace(/\.?0+$/, '')
}
