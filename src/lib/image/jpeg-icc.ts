/**
 * Whether a JPEG's ICC profile, split over APP2 segments ("ICC_PROFILE", a sequence number, a count), is one readers
 * agree on. When the segments disagree (counts that differ, a number of 0 or past the count, one number twice, one
 * missing), IJG's reader of such profiles (read_icc_profile) takes none at all, and Chromium showed the stored values
 * of a file whose first segment is sRGB and second turns every colour white, while libvips applied the last: a photo
 * to a browser and a blank page to libvips. Such a file is read as its stored values.
 */

const ICC_TAG = Buffer.from('ICC_PROFILE\0', 'latin1')
const SOS = 0xda
/** Markers without a length: SOI, EOI, TEM and the restart markers. */
const STANDALONE = new Set([0xd8, 0xd9, 0x01, 0xd0, 0xd1, 0xd2, 0xd3, 0xd4, 0xd5, 0xd6, 0xd7])

/** The sequence number and count of each ICC segment before the image data, in file order. */
function iccSegments(jpeg: Buffer): {seq: number; count: number}[] {
  const found: {seq: number; count: number}[] = []
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
    const payload = jpeg.subarray(at + 4, Math.min(jpeg.length, at + 2 + length))
    if (marker === 0xe2 && payload.length >= ICC_TAG.length + 2 && payload.subarray(0, ICC_TAG.length).equals(ICC_TAG)) {
      found.push({seq: payload[ICC_TAG.length], count: payload[ICC_TAG.length + 1]})
    }
    at += 2 + length
  }
  return found
}

/** True when the JPEG has ICC segments that disagree, whose file is read as its stored values (the module's comment). */
export function jpegIccDiscarded(jpeg: Buffer): boolean {
  const segments = iccSegments(jpeg)
  if (segments.length === 0) return false
  const count = segments[0].count
  const seen = new Set<number>()
  for (const {seq, count: c} of segments) {
    if (c !== count || seq < 1 || seq > count || seen.has(seq)) return true
    seen.add(seq)
  }
  return seen.size !== count
}
