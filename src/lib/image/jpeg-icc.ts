/**
 * Whether a JPEG's ICC profile, split over APP2 segments ("ICC_PROFILE", a sequence number, a count), is one readers
 * agree on. When the segments disagree (counts that differ, a number of 0 or past the count, one number twice, one
 * missing), IJG's reader of such profiles (read_icc_profile) takes none at all, and Chromium showed the stored values
 * of a file whose first segment is sRGB and second turns every colour white, while libvips applied the last: a photo
 * to a browser and a blank page to libvips. Such a file is read as its stored values.
 */

import {jpegSegments} from './jpeg-segments.js'

const ICC_TAG = Buffer.from('ICC_PROFILE\0', 'latin1')
const APP2 = 0xe2

/** The sequence number and count of each ICC segment before the image data, in file order. */
function iccSegments(jpeg: Buffer): {seq: number; count: number}[] {
  return jpegSegments(jpeg).flatMap(({marker, payload}) =>
    marker === APP2 && payload.length >= ICC_TAG.length + 2 && payload.subarray(0, ICC_TAG.length).equals(ICC_TAG)
      ? [{seq: payload[ICC_TAG.length], count: payload[ICC_TAG.length + 1]}]
      : [],
  )
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
