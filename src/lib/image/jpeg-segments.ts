const SOS = 0xda
/** Markers without a length: SOI, EOI, TEM and the restart markers. */
const STANDALONE = new Set([0xd8, 0xd9, 0x01, 0xd0, 0xd1, 0xd2, 0xd3, 0xd4, 0xd5, 0xd6, 0xd7])

/** A JPEG marker segment: its marker (the byte after 0xFF) and its payload, the length field left out. */
export interface JpegSegment {
  marker: number
  payload: Buffer
}

/** The marker segments of a JPEG before its image data (the first SOS), in file order; a cut last one as far as it goes. */
export function jpegSegments(jpeg: Buffer): JpegSegment[] {
  const found: JpegSegment[] = []
  let at = 2
  while (at + 4 <= jpeg.length) {
    if (jpeg[at] !== 0xff) break
    const marker = jpeg[at + 1]
    if (marker === 0xff) {
      at++
      continue
    }
    if (STANDALONE.has(marker)) {
      at += 2
      continue
    }
    if (marker === SOS) break
    const length = jpeg.readUInt16BE(at + 2)
    found.push({marker, payload: jpeg.subarray(at + 4, Math.min(jpeg.length, at + 2 + length))})
    at += 2 + length
  }
  return found
}
