import {open} from 'node:fs/promises'

/**
 * What the first bytes of a file say it is: a format the image decoder accepts, an image format it refuses that
 * cameras or browsers show (HEIF, BMP, ICO, SVG, JPEG XL, JPEG 2000), or neither.
 */
export type Sniffed = 'image' | 'refused' | 'other'

/**
 * Bytes to read: enough for every signature below, an ISO-BMFF ftyp box with a few compatible brands, and an SVG's
 * XML declaration, comment or doctype before its root element.
 */
export const SNIFF_BYTES = 512

/** The first SNIFF_BYTES of the file at `path` (fewer for a shorter file); rejects as the file system does. */
export async function readHead(path: string | Buffer): Promise<Buffer> {
  const handle = await open(path, 'r')
  try {
    const buffer = Buffer.alloc(SNIFF_BYTES)
    const {bytesRead} = await handle.read(buffer, 0, SNIFF_BYTES, 0)
    return buffer.subarray(0, bytesRead)
  } finally {
    await handle.close()
  }
}

function ascii(b: Buffer, start: number, end: number): string {
  return b.subarray(start, end).toString('latin1')
}

/** The major and compatible brands of an ISO-BMFF `ftyp` box at the start; none when there is none. */
function ftypBrands(b: Buffer): string[] {
  if (b.length < 12 || ascii(b, 4, 8) !== 'ftyp') return []
  const size = Math.min(b.readUInt32BE(0), b.length)
  const brands = [ascii(b, 8, 12)]
  for (let i = 16; i + 4 <= size; i += 4) brands.push(ascii(b, i, i + 4))
  return brands
}

/** An AVIF image sequence (brand avis): an animation, which ffmpeg plays and the image decoder does not read. */
export function isAvifSequence(head: Buffer): boolean {
  return ftypBrands(head).includes('avis')
}

/** An ISO-BMFF `ftyp` box: AVIF when its major or a compatible brand is avif/avis; other HEIF brands are HEIF, refused. */
function ftyp(b: Buffer): Sniffed | undefined {
  const brands = ftypBrands(b)
  if (brands.length === 0) return undefined
  if (brands.some((x) => x === 'avif' || x === 'avis')) return 'image'
  if (brands.some((x) => ['heic', 'heix', 'hevc', 'hevx', 'heim', 'heis', 'mif1', 'msf1'].includes(x))) return 'refused'
  return 'other'
}

/** The image format the first bytes announce (JPEG, PNG, GIF, WebP, TIFF, AVIF; HEIF, BMP, ICO, SVG, JPEG XL, JPEG 2000), if any. */
export function imageFormat(head: Buffer): string | undefined {
  const b = head
  if (b.length >= 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return 'JPEG'
  if (b.length >= 8 && b.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) return 'PNG'
  if (b.length >= 6 && (ascii(b, 0, 6) === 'GIF87a' || ascii(b, 0, 6) === 'GIF89a')) return 'GIF'
  if (b.length >= 12 && ascii(b, 0, 4) === 'RIFF' && ascii(b, 8, 12) === 'WEBP') return 'WebP'
  if (b.length >= 4 && (ascii(b, 0, 4) === 'II*\0' || ascii(b, 0, 4) === 'MM\0*')) return 'TIFF'
  const boxed = ftyp(b)
  if (boxed === 'image') return 'AVIF'
  if (boxed === 'refused') return 'HEIF'
  return refusedFormat(b)
}

/** The decoder's formats: the others imageFormat names are refused. */
const ACCEPTED = ['JPEG', 'PNG', 'GIF', 'WebP', 'TIFF', 'AVIF']

export function sniffImage(head: Buffer): Sniffed {
  const format = imageFormat(head)
  return format === undefined ? 'other' : ACCEPTED.includes(format) ? 'image' : 'refused'
}

/** Sizes of a BMP's info header (BITMAPCOREHEADER to BITMAPV5HEADER, and OS/2's): what follows its file header. */
const BMP_INFO_SIZES = [12, 16, 40, 52, 56, 64, 108, 124]

/**
 * Image formats browsers show that the decoder does not read: BMP (`BM`, reserved zeros, a known info header),
 * ICO and CUR (a directory whose first entry has its reserved byte zero and its data after the directory), JPEG XL
 * (its codestream or its ISO-BMFF container), JPEG 2000 (its JP2 signature box, or a bare codestream: its SOC then
 * SIZ markers; Safari showed JP2 images up to version 17, and cinema and medical tools write them), and SVG (a text
 * whose first element, after an XML declaration, comments or a doctype, is `svg`).
 */
function refusedFormat(b: Buffer): string | undefined {
  if (b.length >= 18 && ascii(b, 0, 2) === 'BM' && b.readUInt32LE(6) === 0 && BMP_INFO_SIZES.includes(b.readUInt32LE(14))) return 'BMP'
  if (b.length >= 22 && b.readUInt16LE(0) === 0 && [1, 2].includes(b.readUInt16LE(2))) {
    const count = b.readUInt16LE(4)
    if (count > 0 && b[9] === 0 && b.readUInt32LE(18) >= 6 + 16 * count) return 'ICO'
  }
  if (b.length >= 2 && b[0] === 0xff && b[1] === 0x0a) return 'JPEG XL'
  if (b.length >= 12 && b.subarray(0, 12).equals(Buffer.from('0000000c4a584c200d0a870a', 'hex'))) return 'JPEG XL'
  if (b.length >= 12 && b.subarray(0, 12).equals(Buffer.from('0000000c6a5020200d0a870a', 'hex'))) return 'JPEG 2000'
  if (b.length >= 4 && b.readUInt32BE(0) === 0xff4fff51) return 'JPEG 2000'
  return isSvg(b) ? 'SVG' : undefined
}

function isSvg(b: Buffer): boolean {
  let text = b.toString('utf8').replace(/^\uFEFF/, '')
  // Declarations, processing instructions and comments before the root element; a doctype names the root.
  for (;;) {
    text = text.trimStart()
    const skipped = /^(<\?[^>]*\?>|<!--[\s\S]*?-->)/.exec(text)
    if (!skipped) break
    text = text.slice(skipped[0].length)
  }
  return /^<(svg[\s>:/]|!DOCTYPE\s+svg[\s>])/i.test(text)
}

/**
 * The format of a still image, or undefined: not an image, or one that ffmpeg reads as a video (an animated GIF, an
 * AVIF image sequence).
 */
export function stillImageFormat(head: Buffer): string | undefined {
  const format = imageFormat(head)
  return format === 'GIF' || (format === 'AVIF' && isAvifSequence(head)) ? undefined : format
}

/** An image format with its article, as it is read aloud: "a PNG", "an AVIF". */
export function aFormat(format: string): string {
  return `${['AVIF', 'ICO', 'SVG'].includes(format) ? 'an' : 'a'} ${format}`
}

/**
 * Whether the file is a Git LFS pointer: a checkout without its LFS files (actions/checkout's default) holds these
 * small text files in the images' place. Their first line names the specification (git-lfs's docs/spec.md).
 */
export function isLfsPointer(head: Buffer): boolean {
  return head.toString('latin1', 0, 64).startsWith('version https://git-lfs.github.com/spec/v1\n')
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
