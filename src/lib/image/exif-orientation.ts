/**
 * The EXIF orientation of a JPEG, PNG or WebP as viewers read it. A well-formed tag (in IFD0, type SHORT, count
 * 1, a value 1-8) reads the same everywhere; a malformed one does not, and each reading shows another picture,
 * which an uploader can choose: a nude tagged "upside down" as a LONG is shown upright by browsers and was scored
 * upside down (and safe) by the orientation libvips reads. The readings, from their sources:
 * - Firefox (image/decoders/EXIF.cpp, nsJPEGDecoder::ReadOrientationFromEXIF): a JPEG's first APP1 segment, which
 *   must open with "Exif\0\0"; IFD0's first orientation entry, SHORT with count 1 and 1-8, or none at all.
 * - Chromium (Skia's SkExif::Parse): the first APP1 segment opening with "Exif\0"; the first entry, in entry order,
 *   that is SHORT with count 1 and 1-8, in IFD0 or in the Exif sub-IFD an IFD0 entry (0x8769, LONG, count 1)
 *   points to, whose entries are read where that pointer stands.
 * - libvips (libexif): any integer type and count in IFD0; what sharp reports as the orientation.
 * The picture is scored in each reading (decode.ts): the one Chromium shows first, as the image's own, the others as
 * further views of it.
 */

import {jpegSegments} from './jpeg-segments.js'

const APP1 = 0xe1
const ORIENTATION = 0x112
const EXIF_IFD = 0x8769
const SHORT = 3
const LONG = 4
/** Firefox reads no IFD0 that starts past the 64 KiB an APP1 segment can hold. */
const FIREFOX_IFD0_LIMIT = 64 * 1024

/** The orientation (1-8) an image is shown and scored in, and the other readings of its tag, each scored too. */
export interface OrientationReadings {
  shown: number
  others: number[]
}

/**
 * The readings of the orientation of an image in `format` (sharp's name; other formats than JPEG, PNG and WebP keep
 * libvips' reading alone). `libvips`: the orientation libvips read (1 for none or out of range);
 * `exif`: the Exif block libvips found (a PNG's eXIf, a WebP's EXIF chunk), with or without its "Exif\0\0" header;
 * a JPEG's is read from its segments, as browsers find it.
 */
export function orientationReadings(format: string, input: Buffer, libvips: number, exif: Buffer | undefined): OrientationReadings {
  let firefox: number
  let chromium: number
  if (format === 'jpeg') {
    const app1 = jpegSegments(input).filter((s) => s.marker === APP1)
    const first = app1[0]?.payload
    firefox = first && opens(first, 'Exif\0\0') ? strictReading(first.subarray(6)) : 1
    const exifSegment = app1.find((s) => s.payload.length >= 6 && opens(s.payload, 'Exif\0'))
    chromium = exifSegment ? chromiumReading(exifSegment.payload.subarray(6)) : 1
  } else if (format === 'png' || format === 'webp') {
    const tiff = exif && opens(exif, 'Exif\0\0') ? exif.subarray(6) : exif
    firefox = tiff ? strictReading(tiff) : 1
    chromium = tiff ? chromiumReading(tiff) : 1
  } else {
    return {shown: libvips, others: []}
  }
  const others = [...new Set([firefox, libvips])].filter((o) => o !== chromium)
  return {shown: chromium, others}
}

function opens(data: Buffer, text: string): boolean {
  return data.length >= text.length && data.subarray(0, text.length).equals(Buffer.from(text, 'latin1'))
}

/** A TIFF structure's byte order and reads within its bounds (undefined past its end). */
interface Tiff {
  u16(at: number): number | undefined
  u32(at: number): number | undefined
}

function tiffOf(data: Buffer): {tiff: Tiff; ifd0: number} | undefined {
  if (data.length < 8) return undefined
  const little = data[0] === 0x49 && data[1] === 0x49 && data[2] === 0x2a && data[3] === 0
  const big = data[0] === 0x4d && data[1] === 0x4d && data[2] === 0 && data[3] === 0x2a
  if (!little && !big) return undefined
  const tiff: Tiff = {
    u16: (at) => (at >= 0 && at + 2 <= data.length ? (little ? data.readUInt16LE(at) : data.readUInt16BE(at)) : undefined),
    u32: (at) => (at >= 0 && at + 4 <= data.length ? (little ? data.readUInt32LE(at) : data.readUInt32BE(at)) : undefined),
  }
  return {tiff, ifd0: tiff.u32(4) as number}
}

/** An IFD entry's tag, type, count and the offset of its inline value. */
function entry(tiff: Tiff, ifd: number, i: number): {tag: number; type: number; count: number; value: number} | undefined {
  const at = ifd + 2 + 12 * i
  const [tag, type, count] = [tiff.u16(at), tiff.u16(at + 2), tiff.u32(at + 4)]
  if (tag === undefined || type === undefined || count === undefined || tiff.u32(at + 8) === undefined) return undefined
  return {tag, type, count, value: at + 8}
}

/** An orientation entry's value when it is SHORT, count 1 and 1-8. */
function wellFormed(tiff: Tiff, e: {type: number; count: number; value: number}): number | undefined {
  if (e.type !== SHORT || e.count !== 1) return undefined
  const v = tiff.u16(e.value) as number
  return v >= 1 && v <= 8 ? v : undefined
}

/** Firefox's reading: IFD0's first orientation entry decides; anything unread or malformed reads as none (1). */
function strictReading(data: Buffer): number {
  const t = tiffOf(data)
  if (!t || t.ifd0 > FIREFOX_IFD0_LIMIT) return 1
  const count = t.tiff.u16(t.ifd0)
  if (count === undefined) return 1
  for (let i = 0; i < count; i++) {
    const e = entry(t.tiff, t.ifd0, i)
    if (!e) return 1
    if (e.tag === ORIENTATION) return wellFormed(t.tiff, e) ?? 1
  }
  return 1
}

/** Chromium's reading: the first well-formed orientation entry in IFD0 and the Exif sub-IFD, in entry order. */
function chromiumReading(data: Buffer): number {
  const t = tiffOf(data)
  if (!t) return 1
  return firstWellFormed(t.tiff, t.ifd0, true) ?? 1
}

function firstWellFormed(tiff: Tiff, ifd: number, root: boolean): number | undefined {
  const count = tiff.u16(ifd)
  // Skia reads an IFD only when all its entries and the next IFD's offset are within the block.
  if (count === undefined || tiff.u32(ifd + 2 + 12 * count) === undefined) return undefined
  for (let i = 0; i < count; i++) {
    const e = entry(tiff, ifd, i) as NonNullable<ReturnType<typeof entry>>
    if (e.tag === ORIENTATION) {
      const v = wellFormed(tiff, e)
      if (v !== undefined) return v
    } else if (e.tag === EXIF_IFD && root && e.type === LONG && e.count === 1) {
      const v = firstWellFormed(tiff, tiff.u32(e.value) as number, false)
      if (v !== undefined) return v
    }
  }
  return undefined
}
