/** Bytes before a PNG's first chunk: its signature. */
export const SIGNATURE_BYTES = 8

/**
 * Whether a PNG is animated (APNG): an `acTL` chunk before its first `IDAT`, where the APNG specification puts
 * it. Only the chunk headers (length and type) are read, never the data. libvips decodes just the default image
 * (IDAT), which need not be one of the frames a browser shows, so such a file cannot be scored as displayed.
 */
export function isAnimatedPng(png: Buffer): boolean {
  let at = SIGNATURE_BYTES
  while (at + 8 <= png.length) {
    const type = png.toString('latin1', at + 4, at + 8)
    if (type === 'acTL') return true
    if (type === 'IDAT') return false
    // Length, type, data, CRC.
    at += 12 + png.readUInt32BE(at)
  }
  return false
}
