/** What the first bytes of a file say it is: the formats the image decoder accepts, HEIF (not accepted), or neither. */
export type Sniffed = 'image' | 'heif' | 'other'

/** Bytes to read: enough for every signature below and an ISO-BMFF ftyp box with a few compatible brands. */
export const SNIFF_BYTES = 64

function ascii(b: Buffer, start: number, end: number): string {
  return b.subarray(start, end).toString('latin1')
}

/** An ISO-BMFF `ftyp` box: AVIF when its major or a compatible brand is avif/avis; other HEIF brands are HEIF. */
function ftyp(b: Buffer): Sniffed | undefined {
  if (b.length < 12 || ascii(b, 4, 8) !== 'ftyp') return undefined
  const size = Math.min(b.readUInt32BE(0), b.length)
  const brands = [ascii(b, 8, 12)]
  for (let i = 16; i + 4 <= size; i += 4) brands.push(ascii(b, i, i + 4))
  if (brands.some((x) => x === 'avif' || x === 'avis')) return 'image'
  if (brands.some((x) => ['heic', 'heix', 'hevc', 'hevx', 'heim', 'heis', 'mif1', 'msf1'].includes(x))) return 'heif'
  return 'other'
}

/** The image format the first bytes announce (JPEG, PNG, GIF, WebP, TIFF, AVIF, HEIF), if any. */
export function imageFormat(head: Buffer): string | undefined {
  const b = head
  if (b.length >= 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return 'JPEG'
  if (b.length >= 8 && b.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) return 'PNG'
  if (b.length >= 6 && (ascii(b, 0, 6) === 'GIF87a' || ascii(b, 0, 6) === 'GIF89a')) return 'GIF'
  if (b.length >= 12 && ascii(b, 0, 4) === 'RIFF' && ascii(b, 8, 12) === 'WEBP') return 'WebP'
  if (b.length >= 4 && (ascii(b, 0, 4) === 'II*\0' || ascii(b, 0, 4) === 'MM\0*')) return 'TIFF'
  const boxed = ftyp(b)
  return boxed === 'image' ? 'AVIF' : boxed === 'heif' ? 'HEIF' : undefined
}

export function sniffImage(head: Buffer): Sniffed {
  const format = imageFormat(head)
  return format === undefined ? 'other' : format === 'HEIF' ? 'heif' : 'image'
}

/**
 * Whether the first bytes announce a video container ffmpeg reads: MP4/MOV/3GP (an ISO-BMFF box that is not an
 * image), Matroska/WebM, AVI, Ogg, FLV, ASF/WMV, MPEG program stream. For pointing a person at the video command.
 */
export function isVideoHead(b: Buffer): boolean {
  if (ftyp(b) === 'other') return true
  if (b.length >= 4 && b.readUInt32BE(0) === 0x1a45dfa3) return true
  if (b.length >= 12 && ascii(b, 0, 4) === 'RIFF' && ascii(b, 8, 12) === 'AVI ') return true
  if (b.length >= 4 && (ascii(b, 0, 4) === 'OggS' || ascii(b, 0, 3) === 'FLV')) return true
  if (b.length >= 4 && b.readUInt32BE(0) === 0x000001ba) return true
  return b.length >= 16 && b.subarray(0, 16).equals(Buffer.from('3026b2758e66cf11a6d900aa0062ce6c', 'hex'))
}
