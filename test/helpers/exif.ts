// Exif blocks built by hand, well-formed or not, and JPEGs carrying them: for the readings of an orientation tag.

/** An IFD entry: tag, type (3 SHORT, 4 LONG, ...), count, and its inline value (at most 4 bytes). */
export type ExifEntry = [tag: number, type: number, count: number, value: Buffer]

export const ORIENTATION = 0x112
export const SHORT = 3
export const LONG = 4

export const short = (v: number): Buffer => Buffer.from([v & 255, v >> 8])
export const long = (v: number): Buffer => {
  const b = Buffer.alloc(4)
  b.writeUInt32LE(v)
  return b
}

/** An orientation entry, SHORT with count 1 unless told otherwise. */
export const orientationEntry = (value: number, type = SHORT, count = 1): ExifEntry => [ORIENTATION, type, count, type === LONG ? long(value) : short(value)]

function ifd(entries: ExifEntry[]): Buffer {
  const rows = entries.map(([tag, type, count, value]) => Buffer.concat([short(tag), short(type), long(count), value, Buffer.alloc(4 - value.length)]))
  return Buffer.concat([short(entries.length), ...rows, long(0)])
}

/**
 * A little-endian TIFF structure (what follows "Exif\0\0"): IFD0 with `ifd0`'s entries and, given `sub`, an Exif
 * sub-IFD with its entries, pointed to by an entry placed first in IFD0 when `pointerFirst`, else last.
 */
export function exifTiff(ifd0: ExifEntry[], sub?: ExifEntry[], pointerFirst = false): Buffer {
  const header = Buffer.concat([Buffer.from('II*\0', 'latin1'), long(8)])
  if (!sub) return Buffer.concat([header, ifd(ifd0)])
  const subAt = 8 + 2 + 12 * (ifd0.length + 1) + 4
  const pointer: ExifEntry = [0x8769, LONG, 1, long(subAt)]
  return Buffer.concat([header, ifd(pointerFirst ? [pointer, ...ifd0] : [...ifd0, pointer]), ifd(sub)])
}

/** An APP1 segment holding `payload`. */
export function app1(payload: Buffer): Buffer {
  return Buffer.concat([Buffer.from([0xff, 0xe1, (payload.length + 2) >> 8, (payload.length + 2) & 255]), payload])
}

/** `jpeg` with APP1 segments put right after its SOI, in the order given: each an Exif block ("Exif\0\0" + TIFF) or raw. */
export function withApp1(jpeg: Buffer, ...segments: ({tiff: Buffer} | {raw: Buffer})[]): Buffer {
  const made = segments.map((s) => app1('tiff' in s ? Buffer.concat([Buffer.from('Exif\0\0', 'latin1'), s.tiff]) : s.raw))
  return Buffer.concat([jpeg.subarray(0, 2), ...made, jpeg.subarray(2)])
}
