import sharp, {type Metadata, type Sharp, type SharpOptions} from 'sharp'

import {emptyFileError, ModError} from '../errors.js'
import {imageFormat, isAvifSequence, isVideoHead, sniffImage} from '../input/sniff.js'
import {formatSize} from '../sizes.js'
import {displayDurations, MAX_ANIMATION_FRAMES, MAX_FRAMES, MAX_OTHER_FRAMES, MAX_PAGES, scoredFrames} from './animation-frames.js'
import {coarseStream, otherPictures, type CoarseStream} from './coarse.js'
import {isAnimatedPng} from './apng.js'
import {avifColour} from './avif-colour.js'
import {applyTable, gammaTable, pngColour, type PngColour} from './png-colour.js'
import {applyShaper, type Shaper} from './shaper.js'
import {browserReads, browserRefuses, isSrgbProfile, libvipsIgnores, matrixShaper} from './icc.js'
import {orientationReadings, type OrientationReadings} from './exif-orientation.js'
import {jpegIccDiscarded} from './jpeg-icc.js'
import {reoriented} from './orientation.js'
import {libvipsOf, type RgbImage} from './rgb.js'

/** Formats we accept (docs/cli.md, Accepted images); AVIF is sharp's `heif` with AV1 compression. */
export type ImageFormat = 'jpeg' | 'png' | 'webp' | 'gif' | 'avif' | 'tiff'

export interface ImageLimits {
  /** Largest encoded size, in bytes. */
  maxBytes: number
  /** Largest number of pixels the decoder may produce (all frames it has to decode, for an animation). */
  maxPixels: number
}

/** What the header says, read without decoding pixels. */
export interface ImageProbe {
  format: ImageFormat
  /** Size of one frame, before EXIF orientation. */
  width: number
  height: number
  frames: number
  /**
   * EXIF orientation, 1-8 (1 when absent or out of range): how the stored image is turned or mirrored for display,
   * as Chromium reads the tag (exif-orientation.ts).
   */
  orientation: number
  /**
   * Of a still whose malformed tag viewers read differently (exif-orientation.ts): the other orientations it may be
   * shown in, each scored as a further view of it (decodeStill).
   */
  otherOrientations?: number[]
  /**
   * An animated GIF or WebP (more than one frame). A multi-page TIFF is not animated: its pages are decoded each on
   * its own (decodePages); this probe is its first page's. Other multi-page files (AVIF) give their first image.
   */
  animated: boolean
  /** An animation's delay of each frame in milliseconds, as the file gives it (libvips' `delay`); scoredFrames reads it. */
  delays?: number[]
  /** What decoding one of its pixels costs, in baseline pixels (see decodeCost); it may have maxPixels ÷ cost pixels. */
  cost: number
  /** What makes it cost more, for the message ("a progressive JPEG"); absent at cost 1. */
  costly?: string
  /**
   * The embedded ICC profile: 'srgb' for an 8-bit RGB or grey image whose profile is sRGB in all but name
   * (isSrgbProfile), decoded to its stored values, as is one whose colour `colour` converts, or a PNG whose cICP chunk
   * says sRGB; 'other' for any other, converted to sRGB by libvips. Absent without one.
   */
  profile?: 'srgb' | 'other'
  /**
   * A colour transform applied to the decoded samples here, where a browser applies colour that libvips would not:
   * a profile libvips ignores (libvipsIgnores), a PNG's cHRM with gAMA or its cICP chunk (pngColour), an AVIF's nclx
   * colour box (avifColour).
   */
  colour?: Shaper
  /** Float samples (a TIFF): whether grey or RGB, and with alpha (see fromFloat). Absent for integer samples. */
  float?: {grey: boolean; alpha: boolean}
  /** It has an alpha channel: a still is then decoded over a light and a dark page both (overPages). */
  alpha?: true
  /** A PNG's gamma from its gAMA chunk, applied to its samples as browsers do (pngColour); absent: none to apply. */
  gamma?: number
}

/**
 * Longest side accepted, in pixels: the largest JPEG and GIF can have. Decoding costs per row and per column
 * as well as per pixel, so a sliver within MOD_MAX_PIXELS (a 1 x 100 000 000 PNG is 200 KB) would still take
 * seconds; no photo, scan or screenshot is longer.
 */
export const MAX_SIDE = 65_535

/**
 * Pixels a frame of an animation counts at least: each frame has a fixed decoding cost (about 5 µs for a 1x1
 * GIF frame of 23 bytes), so a file of a million tiny frames would take seconds while its pixels are few.
 */
export const MIN_FRAME_PIXELS = 64 * 64

/** What a decoded pixel takes: 8-bit RGB, whatever the file's depth and bands. */
export const DECODED_BYTES_PER_PIXEL = 3

const WHITE = {r: 255, g: 255, b: 255}

/**
 * 'error' refuses truncated and corrupt pixel data but, unlike sharp's default 'warning', still decodes
 * files with benign decoder warnings (extraneous bytes, odd SOS parameters) that every viewer displays.
 */
const FAIL_ON = 'error'

/**
 * Turns libvips' operation cache off for this process. A process that decodes each file once (`mod hash`) never
 * hits it, and keeping it up costs about 5-8% of the CPU of decoding a small JPEG and holds up to 50 MB of pixels.
 */
export function disableDecodeCache(): void {
  sharp.cache(false)
}

/** Reads the header only; throws `unsupported_media` for anything that is not an image in an accepted format. */
export async function probeImage(input: Buffer): Promise<ImageProbe> {
  let meta: Metadata
  try {
    // Without sharp's own pixel cap, so that a huge header is reported against our limit as payload_too_large.
    meta = await sharp(input, {limitInputPixels: false}).metadata()
  } catch {
    if (isAvifSequence(input)) {
      throw new ModError('unsupported_media', 'an animated AVIF (image sequence) is not read as an image: score it as a video (mod scan-video, POST /v1/moderate/video), or send it as an animated GIF or WebP')
    }
    if (isVideoHead(input)) throw new ModError('unsupported_media', 'the file is a video, not an image: score it as a video (mod scan-video, POST /v1/moderate/video)')
    // A format browsers show but the decoder does not know (BMP, ICO, JPEG XL, JPEG 2000) is named.
    const named = sniffImage(input) === 'refused' ? imageFormat(input) : undefined
    throw new ModError('unsupported_media', named ? `${named} images are not supported; send JPEG, PNG, WebP, GIF, AVIF or TIFF` : 'not an image in a supported format (JPEG, PNG, WebP, GIF, AVIF, TIFF)')
  }
  const format = acceptedFormat(meta, input)
  if (!format) throw refusedFormat(meta)
  if (format === 'png' && isAnimatedPng(input)) {
    throw new ModError('unsupported_media', 'animated PNG (APNG) is not supported: only its default image could be scored, not the frames it shows; send the animation as GIF or WebP')
  }
  // A JPEG whose ICC segments disagree is read as its stored values (jpeg-icc.ts): as a PNG whose cICP says sRGB.
  const colour =
    format === 'png' ? pngColour(input, meta.icc === undefined) : format === 'avif' ? avifColour(input) : format === 'jpeg' && jpegIccDiscarded(input) ? ({keep: true} as const) : undefined
  return probeOf(format, meta, colour, orientationReadings(format, input, libvipsOrientation(meta), meta.exif))
}

/** The orientation an image is shown in (ImageProbe.orientation), from its bytes and their header as sharp reads it. */
export function shownOrientation(input: Buffer, meta: Metadata): number {
  const format = acceptedFormat(meta, input)
  return format ? orientationReadings(format, input, libvipsOrientation(meta), meta.exif).shown : libvipsOrientation(meta)
}

/** The EXIF orientation libvips read, 1 when absent or out of range. */
function libvipsOrientation(meta: Metadata): number {
  return Number.isInteger(meta.orientation) && (meta.orientation as number) >= 1 && (meta.orientation as number) <= 8 ? (meta.orientation as number) : 1
}

function probeOf(format: ImageFormat, meta: Metadata, png: PngColour, readings?: OrientationReadings): ImageProbe {
  const frames = Math.max(1, meta.pages ?? 1)
  const animated = frames > 1 && (format === 'gif' || format === 'webp')
  const orientation = readings?.shown ?? libvipsOrientation(meta)
  // An animation is not turned (decodeFrames), so the other readings of a still's tag alone are scored.
  const others = readings && readings.others.length > 0 && !animated ? {otherOrientations: readings.others} : {}
  const float = meta.depth === 'float' ? {float: {grey: meta.channels <= 2, alpha: meta.hasAlpha}} : {}
  // Without a delay for each frame, every frame counts as shown equally long (scoredFrames then spaces them by index).
  const delays = animated && meta.delay?.length === frames ? {delays: meta.delay} : {}
  const alpha = meta.hasAlpha ? {alpha: true as const} : {}
  return {format, width: meta.width, height: meta.pageHeight ?? meta.height, frames, orientation, ...others, animated, ...delays, ...decodeCost(format, meta), ...colourOf(meta, png), ...float, ...alpha}
}

/** A TIFF of more than one page: every page counts (decodePages). */
function multiPage(probe: ImageProbe): boolean {
  return probe.format === 'tiff' && probe.frames > 1
}

/**
 * Why the file at `path` is refused as an image when the decoder recognises its format but we do not accept it
 * (SVG): undefined when the decoder does not recognise it, or accepts it. For a file that failed as a video,
 * whose message would otherwise name video formats only; libvips reads only what it needs to tell the format.
 */
export async function refusedImageFormat(path: string): Promise<ModError | undefined> {
  const meta = await sharp(path, {limitInputPixels: false})
    .metadata()
    .catch(() => undefined)
  return meta && !acceptedFormat(meta) ? refusedFormat(meta) : undefined
}

function refusedFormat(meta: Metadata): ModError {
  return new ModError('unsupported_media', `${describe(meta)} images are not supported; send JPEG, PNG, WebP, GIF, AVIF or TIFF`)
}

/**
 * Converting from a profile that is sRGB already changes no value by more than the colour engine's rounding, yet
 * costs more than decoding a small JPEG (about 5 ms of CPU against 3-4 for a 500x375 photo: the colour transform
 * is built for each image), so such images keep their stored values. 16-bit images are left to the conversion,
 * which sharp runs differently for them.
 */
function profile(meta: Metadata, icc: Buffer | undefined): Pick<ImageProbe, 'profile' | 'colour'> {
  if (!icc) return {}
  const rgbOrGrey = ['srgb', 'b-w', 'rgb16', 'grey16'].includes(meta.space ?? '')
  // Shown by browsers as if it had no profile: its stored values.
  if (rgbOrGrey && meta.depth !== 'float' && (!browserReads(icc) || browserRefuses(icc))) return {profile: 'srgb'}
  if (rgbOrGrey && meta.depth === 'uchar' && isSrgbProfile(icc)) return {profile: 'srgb'}
  if (!rgbOrGrey || meta.depth === 'float' || !libvipsIgnores(icc, meta.channels <= 2)) return {profile: 'other'}
  const colour = matrixShaper(icc)
  if (!colour) {
    throw new ModError('unsupported_media', 'the image has an ICC colour profile that browsers apply and that cannot be applied here (a malformed or device-link profile with lookup tables); send it without the profile or converted to sRGB')
  }
  return {profile: 'srgb', colour}
}

/** How the image's colour is read (ImageProbe's profile, colour and gamma), from its profile, a PNG's chunks or an AVIF's nclx box. */
function colourOf(meta: Metadata, png: PngColour): Pick<ImageProbe, 'profile' | 'colour' | 'gamma'> {
  if (png && 'keep' in png) return {profile: 'srgb'}
  if (png && 'shaper' in png) return {profile: 'srgb', colour: png.shaper}
  if (png && 'gamma' in png) return {...profile(meta, meta.icc), gamma: png.gamma}
  return profile(meta, png && 'profile' in png ? png.profile : meta.icc)
}

/**
 * What decoding a pixel costs against a baseline JPEG, PNG or TIFF, whose peak memory is about 3.3 bytes a
 * pixel (measured on 64-megapixel files; mostly the RGB output). Other decoders also hold the whole image in
 * their own form: a progressive JPEG keeps every coefficient until its last scan and an interlaced PNG its
 * whole raster (up to 11 bytes a pixel), GIF and WebP an RGBA canvas and more (7 and 10), AVIF its planes and
 * an RGBA copy (17); a CMYK JPEG spends about 8 times the CPU of a baseline pixel on colour conversion. Dividing the
 * pixel limit by the cost keeps each of them within what the largest baseline image takes (bench/hostile-memory.ts).
 */
function decodeCost(format: ImageFormat, meta: Metadata): {cost: number; costly?: string} {
  if (format === 'jpeg' && meta.space === 'cmyk') return {cost: 8, costly: 'a CMYK JPEG'}
  if (format === 'jpeg' && meta.isProgressive) return {cost: 4, costly: 'a progressive JPEG'}
  if (format === 'png' && meta.isProgressive) return {cost: 4, costly: 'an interlaced PNG'}
  if (format === 'gif') return {cost: 3, costly: 'a GIF'}
  if (format === 'webp') return {cost: 4, costly: 'a WebP'}
  if (format === 'avif') return {cost: 6, costly: 'an AVIF'}
  return {cost: 1}
}

/**
 * The one decoding entry of every image path: refuses an empty input, then decodes to 8-bit sRGB (an embedded
 * ICC profile converted, unless it is sRGB already: ImageProbe.profile) with alpha flattened onto white: one
 * image for a still (EXIF orientation applied, and named in its `orientation`; planDecode gives its size), up
 * to MAX_FRAMES frames of an animated GIF/WebP chosen by display time (scoredFrames) and up to MAX_OTHER_FRAMES more
 * (otherFrames), or every page of a TIFF (each as a still: decodePages).
 * Limits (bytes, pixels, MAX_SIDE) are checked
 * before any pixel is decoded. `probed`: the input's probeImage, when the caller has read it already. `frameSide`:
 * the largest side the signals resample a frame to (absent: they read every pixel), which lets planDecode decode a
 * large JPEG or WebP at a reduced scale.
 */
export async function decodeImage(input: Buffer, limits: ImageLimits, probed?: ImageProbe, frameSide?: number): Promise<RgbImage[]> {
  if (input.length === 0) throw emptyFileError()
  if (input.length > limits.maxBytes) {
    throw new ModError('payload_too_large', `the image is larger than ${formatSize(limits.maxBytes)}`)
  }
  const probe = probed ?? (await probeImage(input))
  if (multiPage(probe)) return decodePages(input, probe, limits, frameSide)
  const pixels = probe.width * probe.height
  const decoded = probe.animated ? probe.frames * Math.max(pixels, MIN_FRAME_PIXELS) : pixels
  const allowed = Math.floor(limits.maxPixels / probe.cost)
  if (decoded > allowed) {
    const frames = pixels < MIN_FRAME_PIXELS ? ` frames (each counted as ${MIN_FRAME_PIXELS} pixels)` : ' frames'
    const size = `${probe.width}x${probe.height}${probe.animated ? ` x ${probe.frames}${frames}` : ''}`
    const why = probe.costly ? ` for ${probe.costly} (1/${probe.cost} of ${limits.maxPixels}: it takes ${probe.cost} times the memory or time to decode)` : ''
    // The video path samples an animation's frames instead of decoding every one: a long GIF passes there.
    const instead = probe.animated ? '; an animation this long can be scored as a video (mod scan-video, POST /v1/moderate/video)' : ''
    throw new ModError('payload_too_large', `image is ${size} = ${decoded} pixels; the limit is ${allowed} pixels${why}${instead}`)
  }
  if (Math.max(probe.width, probe.height) > MAX_SIDE) {
    throw new ModError('payload_too_large', `image is ${probe.width}x${probe.height}; a side may be at most ${MAX_SIDE} pixels`)
  }
  try {
    return probe.animated ? await decodeFrames(input, probe, limits) : await decodeStill(input, probe, limits, frameSide)
  } catch (e) {
    throw decodeError(e, limits)
  }
}

/** The pixels decodeImage will hold for an input so probed: its frames scored, or the still at its planned size. */
export function decodedPixels(probe: ImageProbe, limits: Pick<ImageLimits, 'maxPixels'>): number {
  if (probe.animated) return Math.min(probe.frames, MAX_ANIMATION_FRAMES) * probe.width * probe.height * (probe.alpha ? 2 : 1)
  // Its first page standing for each page kept, all within one still's share (decodePages).
  if (multiPage(probe)) return Math.min(probe.frames * probe.width * probe.height, Math.floor(limits.maxPixels / DECODED_SHARE))
  const {width, height} = planDecode(probe, limits)
  return width * height * stillViews(probe)
}

/**
 * The accepted format of an image so described; `head`: its first bytes, when at hand. libvips calls a HEIF file by its
 * major brand: an AVIF whose major brand is mif1 (its compatible brands saying avif) is reported as HEVC, and decodes.
 */
function acceptedFormat(meta: Metadata, head?: Buffer): ImageFormat | undefined {
  switch (meta.format) {
    case 'jpeg':
    case 'png':
    case 'webp':
    case 'gif':
    case 'tiff':
      return meta.format
    case 'heif':
      return meta.compression === 'av1' || (head !== undefined && imageFormat(head) === 'AVIF') ? 'avif' : undefined
    default:
      return undefined
  }
}

function describe(meta: Metadata): string {
  if (meta.format === 'heif') return meta.compression === 'hevc' ? 'HEIC' : 'HEIF'
  return String(meta.format).toUpperCase()
}

function toRgb(image: Sharp): Sharp {
  return image.flatten({background: WHITE}).toColourspace('srgb').raw({depth: 'uchar'})
}

function options(limits: ImageLimits, probe: ImageProbe, extra: SharpOptions): SharpOptions {
  return {failOn: FAIL_ON, limitInputPixels: limits.maxPixels, ...(probe.profile === 'srgb' ? {ignoreIcc: true} : {}), ...extra}
}

/**
 * A still, at the size planDecode gives, read strip by strip, flattened, converted, cast (and scaled) as it
 * streams, whatever its depth and bands, then turned as its EXIF orientation says. libvips holds a whole image to
 * turn it: for a JPEG or WebP, 8-bit already (and a float image with alpha, which fromFloat makes 8-bit first),
 * it turns the scaled image in the same pipeline (one pass over the pixels, the common case of a phone photo); any other format is turned in a second step, on the 8-bit pixels
 * (a float RGBA TIFF is 16 bytes a pixel). Both give the same pixels: turns and mirrors commute with the
 * conversions, which work pixel by pixel. An image with alpha is read as 8-bit RGBA instead, turned, and flattened
 * twice (overPages); the colour a browser applies and libvips does not (browserColour) is applied to the 8-bit colour
 * samples before any flattening.
 */
async function decodeStill(input: Buffer, probe: ImageProbe, limits: ImageLimits, frameSide?: number, page?: {index: number; maxPixels: number}): Promise<RgbImage[]> {
  const {orientation} = probe
  const plan = planDecode(probe, page ?? limits, frameSide)
  const opts = options(limits, probe, {autoOrient: false, ...(page ? {page: page.index} : {})})
  let image = sharp(input, opts)
  if (plan.width !== probe.width || plan.height !== probe.height) image = image.resize(plan.width, plan.height, {fit: 'fill', kernel: plan.reduced ? 'cubic' : 'lanczos3'})
  if (probe.float) image = await fromFloat(image, input, probe.float, opts)
  // A float image with alpha is 8-bit here already (fromFloat).
  const eightBit = probe.format === 'jpeg' || probe.format === 'webp' || probe.float?.alpha === true
  if (orientation !== 1 && eightBit) image = reorient(image, orientation)
  const turnAfter = eightBit ? 1 : orientation
  const scale = probe.width / plan.width
  const named = {...(scale === 1 ? {} : {scale}), ...(orientation === 1 ? {} : {orientation})}
  if (probe.alpha) {
    const rgba = await turned(image.toColourspace('srgb').ensureAlpha().raw({depth: 'uchar'}), turnAfter)
    browserColour(rgba.data, 4, probe)
    return withOtherReadings(await Promise.all(overPages(rgba).map(async (view) => (view.onBlack ? darkView(view, scale, named) : {...view, ...named}))), probe)
  }
  const {data, width, height} = await turned(toRgb(image), turnAfter)
  browserColour(data, 3, probe)
  return withOtherReadings([{data, width, height, ...named}], probe)
}

/** A still's views, then each as the other readings of its orientation tag show it (exif-orientation.ts). */
function withOtherReadings(views: RgbImage[], probe: ImageProbe): RgbImage[] {
  const others = probe.otherOrientations ?? []
  return [...views, ...others.flatMap((o) => views.map((view) => ({...reoriented(view, o), primaryOrientation: probe.orientation})))]
}

/** The colour a browser applies and libvips did not (ImageProbe's gamma and colour), applied to decoded samples. */
function browserColour(data: Buffer, channels: number, probe: ImageProbe): void {
  if (probe.gamma !== undefined) applyTable(data, channels, gammaTable(probe.gamma))
  if (probe.colour) applyShaper(data, channels, probe.colour)
}

/**
 * Longest side of the dark view of a still: the signals read far fewer pixels (736 at most, the text detector), and a
 * view of the largest size doubled a worker's memory for a large image with transparency (bench/decode-memory.ts).
 */
const DARK_SIDE = 2048

/** The dark view at most DARK_SIDE pixels on its longer side, its scale to the file's pixels kept. */
async function darkView(view: RgbImage, scale: number, named: {orientation?: number; scale?: number}): Promise<RgbImage> {
  const longer = Math.max(view.width, view.height)
  if (longer <= DARK_SIDE) return {...view, ...named}
  const factor = DARK_SIDE / longer
  const size = {width: Math.max(1, Math.round(view.width * factor)), height: Math.max(1, Math.round(view.height * factor))}
  const {data, info} = await libvipsOf(view).resize(size.width, size.height, {fit: 'fill', kernel: 'lanczos3'}).raw().toBuffer({resolveWithObject: true})
  return {data, width: info.width, height: info.height, onBlack: true, ...named, scale: (scale * view.width) / info.width}
}

/** The pixels of a raw 8-bit pipeline, turned afterwards as `orientation` says (1: as they are). */
async function turned(pipeline: Sharp, orientation: number): Promise<{data: Buffer; width: number; height: number}> {
  const {data, info} = await pipeline.toBuffer({resolveWithObject: true})
  if (orientation === 1) return {data, width: info.width, height: info.height}
  const raw = {width: info.width, height: info.height, channels: info.channels as 3 | 4}
  const out = await reorient(sharp(data, {raw}), orientation).raw().toBuffer({resolveWithObject: true})
  return {data: out.data, width: out.info.width, height: out.info.height}
}

/**
 * An image with transparency as a light page shows it and as a dark one does: flattened onto white, and onto
 * black. A picture drawn in white pixels whose alpha carries it (or two pictures, one for each kind of page) is
 * blank, or another picture, on white, and shows on the dark pages of many apps; the image is scored as both, each
 * label keeping its higher score. An image whose every pixel is opaque gives one view, as it looks on any page.
 * Flattened here from 8-bit RGBA in one pass making both (alpha-weighted sums, truncated: libvips' values exactly).
 */
function overPages(rgba: {data: Buffer; width: number; height: number}): RgbImage[] {
  const {data, width, height} = rgba
  const light = Buffer.allocUnsafe(width * height * 3)
  let opaque = true
  for (let i = 3; i < data.length && opaque; i += 4) opaque = data[i] === 255
  // Only an image that has transparency holds a second view.
  const dark = opaque ? undefined : Buffer.allocUnsafe(width * height * 3)
  for (let i = 0, o = 0; o < light.length; i += 4, o += 3) {
    const a = data[i + 3]
    for (let c = 0; c < 3; c++) {
      const v = data[i + c] * a
      light[o + c] = Math.floor((v + 255 * (255 - a)) / 255)
      if (dark) dark[o + c] = Math.floor(v / 255)
    }
  }
  return dark ? [{data: light, width, height}, {data: dark, width, height, onBlack: true}] : [{data: light, width, height}]
}

/**
 * A float image as the tool that wrote it meant it. libvips reads float RGB as scRGB (linear light, 0 black and 1
 * white, converted to sRGB) but float grey as 0..255, while image tools write float grey in 0..1 too: a grey image
 * whose every value (alpha included) lies within 0..1 is scaled by 255 (plus a half: the cast to 8 bits truncates),
 * one with any value above 1 is read as 0..255 (finding which takes a pass over the pixels: libvips' stats). sharp flattens alpha before it scales and
 * flattens onto 255 whatever the range (a float RGBA image would come out white where it is not opaque), so an image
 * with alpha is first converted, scaled, to 8-bit sRGB with alpha, and flattened from there.
 */
async function fromFloat(image: Sharp, input: Buffer, float: {grey: boolean; alpha: boolean}, opts: SharpOptions): Promise<Sharp> {
  const bands = (float.grey ? 1 : 3) + (float.alpha ? 1 : 0)
  const unit = float.grey && (await sharp(input, opts).stats()).channels.every((c) => c.max <= 1)
  const scaled = unit ? image.linear(Array<number>(bands).fill(255), Array<number>(bands).fill(0.5)) : image
  if (!float.alpha) return scaled
  const {data, info} = await scaled.toColourspace('srgb').raw({depth: 'uchar'}).toBuffer({resolveWithObject: true})
  return sharp(data, {raw: {width: info.width, height: info.height, channels: info.channels}})
}

/**
 * A multi-page TIFF: every page, each label keeping its maximum; a file of more than MAX_PAGES pages is refused.
 * Pages may differ in size, bands, depth and orientation, so each is read from its own header and decoded as a still of
 * its own (libvips reads only the page asked for), turned as its orientation says. The pages count against the pixel
 * limit together, from their headers, and are decoded within one still's share of it (DECODED_SHARE), each page at
 * its part of that share.
 */
async function decodePages(input: Buffer, probe: ImageProbe, limits: ImageLimits, frameSide?: number): Promise<RgbImage[]> {
  if (probe.frames > MAX_PAGES) {
    throw new ModError('payload_too_large', `image has ${probe.frames} pages; at most ${MAX_PAGES} can be scored, and a page left out would pass unseen`)
  }
  let pages: (ImageProbe & {index: number})[]
  try {
    pages = await Promise.all(
      Array.from({length: probe.frames}, async (_, index) => ({index, ...probeOf(probe.format, await sharp(input, {page: index, limitInputPixels: false}).metadata(), undefined)})),
    )
  } catch (e) {
    throw decodeError(e, limits)
  }
  const decoded = pages.reduce((sum, p) => sum + p.width * p.height, 0)
  const cost = Math.max(...pages.map((p) => p.cost))
  const allowed = Math.floor(limits.maxPixels / cost)
  const sizes = pages.map((p) => `${p.width}x${p.height}`).join(' + ')
  if (decoded > allowed) {
    throw new ModError('payload_too_large', `image has ${probe.frames} pages, ${sizes} = ${decoded} pixels; the limit is ${allowed} pixels`)
  }
  const long = pages.find((p) => Math.max(p.width, p.height) > MAX_SIDE)
  if (long) throw new ModError('payload_too_large', `page ${long.index + 1} is ${long.width}x${long.height}; a side may be at most ${MAX_SIDE} pixels`)
  const share = {maxPixels: limits.maxPixels / pages.length}
  const images: RgbImage[] = []
  try {
    // One page after another: one page's decoding memory at a time.
    for (const page of pages) images.push(...(await decodeStill(input, page, limits, frameSide, {index: page.index, ...share})))
  } catch (e) {
    throw decodeError(e, limits)
  }
  return images
}

/** EXIF orientation 2-8 as sharp's turn (clockwise) and mirror: the pixels libvips' own auto-orientation gives (1: none). */
const REORIENT: Record<number, {turn: 0 | 90 | 180 | 270; mirror: boolean}> = {
  2: {turn: 0, mirror: true},
  3: {turn: 180, mirror: false},
  4: {turn: 180, mirror: true},
  5: {turn: 270, mirror: true},
  6: {turn: 90, mirror: false},
  7: {turn: 90, mirror: true},
  8: {turn: 270, mirror: false},
}

export function reorient(image: Sharp, orientation: number): Sharp {
  if (orientation === 1) return image
  const {turn, mirror} = REORIENT[orientation]
  const turned = turn === 0 ? image : image.rotate(turn)
  return mirror ? turned.flop() : turned
}

/**
 * A still is decoded at no more than this share of the pixel limit, because one copy of it is held with it:
 * the turned copy for an EXIF orientation, then the part that is scored, which border trimming copies when it
 * cuts a side. The signals read far fewer pixels (CLIP and the specialist 224 a side, NudeNet 320, the text
 * detector 736).
 */
export const DECODED_SHARE = 2

/**
 * How much larger than the side a signal resamples to (`frameSide`) a reduced decode keeps the shorter side: each
 * signal's own resize (CLIP's antialiased bicubic, as Pillow's) still halves it or more, so it still filters the
 * detail the reduced decode kept; how far that moves embeddings and scores is measured by bench/shrink.ts. CLIP's
 * resize filters a whole decode as well: the reduced decode saves time.
 */
export const REDUCED_MARGIN = 2

/**
 * A JPEG or WebP is decoded reduced only from this many times the reduced size: from 3 times, libvips decodes a
 * JPEG at 1/2, 1/4 or 1/8 of its size (in the DCT domain, or libwebp's scaled decoding) and resizes the rest of the
 * way, which costs a fraction of decoding every pixel; below it, it would decode every pixel and resize on top.
 */
export const REDUCE_FROM = 3

type StillViews = Pick<ImageProbe, 'alpha' | 'otherOrientations'>

/** The views a still is scored in: over a light and a dark page with alpha (overPages), in each reading of its orientation. */
function stillViews(probe: StillViews): number {
  return (probe.alpha ? 2 : 1) * (1 + (probe.otherOrientations?.length ?? 0))
}

/** The size a still is decoded at; `reduced`: smaller than the file's because the signals need fewer pixels. */
export interface DecodePlan {
  width: number
  height: number
  reduced?: boolean
}

/**
 * The size a still is decoded at, before its orientation is applied: the file's; for an image of more than
 * `maxPixels` / DECODED_SHARE pixels (shared by its views: two with alpha, overPages, and one more for each other
 * reading of a malformed orientation tag, withOtherReadings), that many at its
 * aspect ratio; for a JPEG or WebP whose shorter side is at
 * least REDUCE_FROM x REDUCED_MARGIN x `frameSide` (1 344 pixels for CLIP's 224), its shorter side at
 * REDUCED_MARGIN x `frameSide`, read at a reduced scale (libvips' shrink-on-load) and resized with a
 * Catmull-Rom (bicubic) filter.
 */
export function planDecode(size: {width: number; height: number; format?: ImageFormat} & StillViews, limits: Pick<ImageLimits, 'maxPixels'>, frameSide?: number): DecodePlan {
  const {width, height} = size
  const shorter = Math.min(width, height)
  const target = frameSide === undefined ? 0 : REDUCED_MARGIN * frameSide
  const allowed = Math.floor(limits.maxPixels / DECODED_SHARE / stillViews(size))
  if ((size.format === 'jpeg' || size.format === 'webp') && target > 0 && shorter >= REDUCE_FROM * target) {
    const scale = target / shorter
    const reduced = width <= height ? {width: target, height: Math.round(height * scale)} : {width: Math.round(width * scale), height: target}
    // Within the pixel limit's share too (a sliver of a panorama).
    if (reduced.width * reduced.height <= allowed) return {...reduced, reduced: true}
  }
  if (width * height <= allowed) return {width, height}
  const scale = Math.sqrt(allowed / (width * height))
  return {width: Math.max(1, Math.floor(width * scale)), height: Math.max(1, Math.floor(height * scale))}
}

/**
 * Images of a still's size, up to `maxPixels` / DECODED_SHARE pixels, held at once at worst: as decoded, turned,
 * and the part scored. The one as decoded is dropped once turned, but its memory is given back only when the
 * garbage collector next runs, which may be after the scored part is copied.
 */
const STILL_COPIES = 3

/**
 * The most memory decoding and preparing one image takes with these limits, besides the encoded bytes, all of
 * it 8-bit RGB: STILL_COPIES images of a still's size; an animation takes less (its frames, at up to a third of
 * `maxPixels` in all, GIF's share, then the frames kept and their scored parts). Documented in docs/operations.md.
 */
export function decodeBound(limits: Pick<ImageLimits, 'maxPixels'>): {bytes: number; formula: string} {
  const perPixel = (STILL_COPIES * DECODED_BYTES_PER_PIXEL) / DECODED_SHARE
  return {
    bytes: perPixel * limits.maxPixels,
    formula: `${STILL_COPIES} x ${DECODED_BYTES_PER_PIXEL} bytes x ${limits.maxPixels} / ${DECODED_SHARE} pixels (a still decoded, turned, and the part scored, 8-bit RGB)`,
  }
}

/**
 * Decodes the animation as a stream of stacked frames, keeping only the selected ones: one pass over the file
 * (seeking to a frame re-decodes everything before it) and memory for the frames kept, not all. EXIF orientation is
 * not applied here: sharp orients the whole stack, not each frame. With alpha (a GIF's transparent colour, a WebP's
 * alpha), the frames are read as RGBA and each kept one gives its views on a light and a dark page (overPages), as a
 * still does. Beside the frames chosen by display time (scoredFrames), an animation of more frames adds those that
 * are other pictures than every one chosen (otherFrames), read in a second pass: the rule that chooses is public, and
 * flagged frames on the places it skips, on screen 44% of the time, scored safe.
 */
async function decodeFrames(input: Buffer, probe: ImageProbe, limits: ImageLimits): Promise<RgbImage[]> {
  const {width, height} = probe
  const channels = probe.alpha ? 4 : 3
  const delays = probe.delays ?? Array<number>(probe.frames).fill(0)
  const durations = displayDurations(delays)
  const wanted = scoredFrames(delays)
  const coarse = probe.frames > MAX_FRAMES ? coarseStream(width, height, channels, probe.frames) : undefined
  const kept = await readFrames(input, probe, limits, wanted, coarse)
  const {others, leftOut} = coarse ? otherFrames(coarse.pictures(), wanted, durations) : {others: [], leftOut: false}
  const more = others.length > 0 ? await readFrames(input, probe, limits, others) : []
  const frames = [...wanted.map((index, k) => ({index, data: kept[k]})), ...others.map((index, k) => ({index, data: more[k]}))].sort((a, b) => a.index - b.index)
  for (const {data} of frames) browserColour(data, channels, probe)
  const noted = leftOut ? {picturesLeftOut: true as const} : {}
  return frames.flatMap(({index, data}) => {
    const shown = durations[index]
    return probe.alpha ? overPages({data, width, height}).map((view) => ({...view, shown, ...noted})) : [{data, width, height, shown, ...noted}]
  })
}

/**
 * The frames not `chosen` whose coarse pictures are other pictures than every frame scored (coarse.ts): the longest
 * shown first, each added counting as scored, at most MAX_OTHER_FRAMES; in display order. `leftOut`: one more was
 * another picture still, and is not scored.
 */
function otherFrames(pictures: Float64Array[], chosen: readonly number[], durations: readonly number[]): {others: number[]; leftOut: boolean} {
  const scored = chosen.map((i) => pictures[i])
  const candidates = pictures.map((_, i) => i).filter((i) => !chosen.includes(i))
  candidates.sort((a, b) => durations[b] - durations[a] || a - b)
  const added: number[] = []
  for (const i of candidates) {
    if (scored.every((p) => otherPictures(p, pictures[i]))) {
      if (added.length === MAX_OTHER_FRAMES) return {others: added.sort((a, b) => a - b), leftOut: true}
      added.push(i)
      scored.push(pictures[i])
    }
  }
  return {others: added.sort((a, b) => a - b), leftOut: false}
}

/** One pass over the animation's stacked frames: the `wanted` ones' pixels (RGB, or RGBA with alpha), each frame fed to `coarse`. */
async function readFrames(input: Buffer, probe: ImageProbe, limits: ImageLimits, wanted: readonly number[], coarse?: CoarseStream): Promise<Buffer[]> {
  const frameBytes = probe.width * probe.height * (probe.alpha ? 4 : 3)
  const frames = wanted.map(() => Buffer.allocUnsafe(frameBytes))
  const stack = sharp(input, options(limits, probe, {pages: -1}))
  const stream = probe.alpha ? stack.toColourspace('srgb').ensureAlpha().raw({depth: 'uchar'}) : toRgb(stack)
  let position = 0
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    const end = position + chunk.length
    coarse?.push(chunk, position)
    wanted.forEach((index, k) => {
      const start = Math.max(position, index * frameBytes)
      const stop = Math.min(end, (index + 1) * frameBytes)
      if (start < stop) chunk.copy(frames[k], start - index * frameBytes, start - position, stop - position)
    })
    position = end
  }
  if (position !== frameBytes * probe.frames) {
    throw new ModError('unreadable_image', 'the animation ended before its last frame was decoded')
  }
  return frames
}

function decodeError(e: unknown, limits: ImageLimits): ModError {
  if (e instanceof ModError) return e
  const message = e instanceof Error ? e.message : String(e)
  if (/pixel limit/i.test(message)) {
    return new ModError('payload_too_large', `image exceeds the limit of ${limits.maxPixels} pixels`)
  }
  // The decoder's own line names its internals (libvips, libjpeg states): it stays in the error's context.
  return new ModError('unreadable_image', 'the image data is corrupt or truncated', {decoder: message.split('\n')[0]})
}
