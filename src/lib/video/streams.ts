import {ModError} from '../errors.js'

/** A video stream of a file, as ffmpeg's description of the file lists it. */
export interface VideoStream {
  /** The stream's index among all the file's streams (ffmpeg's `0:N`). */
  index: number
  codec: string
  /** An attached picture (cover art): one picture, not a timeline. */
  cover: boolean
  /**
   * Its frames may be transparent: a pixel format with alpha, a codec whose frames each choose their own format
   * (PNG, TIFF), or VP8/VP9 with an alpha channel (which only libvpx's decoders read).
   */
  alpha: boolean
  /** Frames per second, as the description gives them (its fps, else its tbr); absent when it gives neither. */
  fps?: number
  /**
   * The picture size the description gives, turned as displayed (a rotation of a quarter turn swaps the sides, as
   * ffmpeg turns the frames it decodes): its first pictures' (a stream may change it later); absent when none.
   */
  width?: number
  height?: number
  /**
   * Its sample aspect ratio (a pixel's width over its height) as displayed, when the description gives one other
   * than 1:1: inverted for a quarter turn, as ffmpeg's turn (transpose) inverts it, with the sides above.
   */
  sar?: number
  /**
   * Its pictures are interlaced: each frame weaves two fields, its even and its odd rows, which a player shows one
   * after the other (the stream line's field order: "top first", "bottom first", or either "coded first (swapped)").
   */
  interlaced?: true
  /** It is shown a quarter turn round (its width and height above are already swapped). */
  turned?: true
  /**
   * Its pictures are HDR: their transfer is PQ (SMPTE ST 2084, HDR10) or HLG (ARIB STD-B67, what phones record), as the
   * stream line's colour details give it, with the matrix, primaries and range given beside it (ffmpeg's names).
   */
  hdr?: HdrColour
}

/** An HDR stream's colour, as ffmpeg's description names it: what decoder.ts converts from. */
export interface HdrColour {
  transfer: 'smpte2084' | 'arib-std-b67'
  /** The YCbCr matrix and the primaries, as named (`unknown` included: decoder.ts converts from the ones it knows). */
  matrix: string
  primaries: string
  /** Full range ("pc") rather than limited ("tv", what video has unless it says otherwise). */
  fullRange: boolean
}

/** Pixel formats with an alpha component (ffmpeg's names), and palettes, whose entries may be transparent. */
const ALPHA_PIXEL_FORMAT = /^(argb|rgba|abgr|bgra|yuva|ya\d|gbrap|ayuv|vuya|pal8)/
/** Codecs whose frames may each have their own pixel format, with or without alpha. */
const PER_FRAME_FORMAT_CODECS = new Set(['png', 'tiff'])
const STREAM_LINE = /^\s*Stream #0:(\d+)\S*: Video: (.*)$/
/**
 * Subtitle codecs whose cues are pictures (Blu-ray PGS, DVB, DVD VobSub, DivX XSUB) that players draw over the video,
 * a default or forced track without being asked: pictures that sampling the video streams never sees.
 */
const BITMAP_SUBTITLES = new Set(['hdmv_pgs_subtitle', 'dvb_subtitle', 'dvd_subtitle', 'xsub'])
const SUBTITLE_LINE = /^\s*Stream #0:\d+\S*: Subtitle: ([\w-]+)/
const AUDIO_LINE = /^\s*Stream #0:\d+\S*: Audio: /m
/** Any stream's own line, whatever its kind: it ends what a video stream's metadata lines describe. */
const ANY_STREAM_LINE = /^\s*Stream #/
const ALPHA_MODE_LINE = /^\s+alpha_mode\s*: 1\s*$/
const DISPLAY_MATRIX_LINE = /^\s+displaymatrix: rotation of (-?\d+(?:\.\d+)?) degrees/
const ROTATE_TAG_LINE = /^\s+rotate\s*: (-?\d+)\s*$/
const DURATION = /Duration: (\d+):(\d{2}):(\d{2}(?:\.\d+)?)/
/**
 * ffmpeg's line of the file's duration and start, exactly as it writes it under "Input #0" (two spaces in; the start
 * in seconds with six decimals, capped here at ten digits before them). A metadata key or value with a line break
 * in it is joined to its line (createLeveledLog), but one that goes on with text written as ffmpeg tags its lines
 * ("[info] ") can still put such a line into the description: a start is read only from a description that holds one
 * line of this form (fileStart).
 */
const START_LINE = /^ {2}Duration: (?:N\/A|\d+:\d{2}:\d{2}\.\d{2}), start: (-?\d{1,10}\.\d{6}), bitrate: (?:N\/A|\d+ kb\/s)$/
/** The field order ffmpeg writes among a pixel format's details when the frames are interlaced. */
const FIELD_ORDER = /\((?:[^()]*, )?(?:top|bottom) (?:coded )?first\b/
/**
 * A pixel format's colour details: its range, then either one name for matrix, primaries and transfer alike or the
 * three as "matrix/primaries/transfer" (yuv420p10le(tv, bt2020nc/bt2020/smpte2084, progressive)).
 */
const COLOUR_DETAILS = /\((?:(tv|pc), )?([\w-]+)(?:\/([\w-]+)\/([\w-]+))?(?:[,)])/
/** The HDR transfers (ffmpeg's names): PQ and HLG. */
const HDR_TRANSFERS = new Set(['smpte2084', 'arib-std-b67'])

/** The HDR colour of a stream line's pixel format field (`yuv420p10le(tv, bt2020nc/bt2020/smpte2084)`), if HDR. */
function hdrColour(pixelField: string): HdrColour | undefined {
  const m = COLOUR_DETAILS.exec(pixelField)
  const transfer = m?.[4]
  if (m === null || transfer === undefined || !HDR_TRANSFERS.has(transfer)) return undefined
  return {transfer: transfer as HdrColour['transfer'], matrix: m[2], primaries: m[3], fullRange: m[1] === 'pc'}
}

/** Splits "a (x, y), b, c" at the commas outside parentheses. */
function topLevelFields(text: string): string[] {
  const fields: string[] = []
  let depth = 0
  let start = 0
  for (let i = 0; i < text.length; i++) {
    if (text[i] === '(') depth++
    else if (text[i] === ')') depth = Math.max(0, depth - 1)
    else if (text[i] === ',' && depth === 0) {
      fields.push(text.slice(start, i).trim())
      start = i + 1
    }
  }
  fields.push(text.slice(start).trim())
  return fields
}

/** A stream line's frame rate: "29.97 fps", "1k fps", else its "25 tbr". */
function frameRate(fields: string): number | undefined {
  const m = /(?:^|, )(\d+(?:\.\d+)?)(k?) fps\b/.exec(fields) ?? /(?:^|, )(\d+(?:\.\d+)?)(k?) tbr\b/.exec(fields)
  const rate = m ? Number(m[1]) * (m[2] === 'k' ? 1000 : 1) : NaN
  return rate > 0 ? rate : undefined
}

/**
 * The video streams in ffmpeg's description of a file (`ffmpeg -i`): per stream line, its codec, pixel format and
 * dispositions, and from the metadata lines below it Matroska's `alpha_mode`. A metadata key or value's line breaks
 * are joined to its line (createLeveledLog): no line of the file's starts with "Stream #".
 */
export function parseVideoStreams(header: string): VideoStream[] {
  const streams: VideoStream[] = []
  let current: VideoStream | undefined
  for (const line of header.split('\n')) {
    const m = STREAM_LINE.exec(line)
    if (m) {
      const [codecField, pixelField = ''] = topLevelFields(m[2])
      const codec = codecField.split(/[\s(]/)[0]
      const pixelFormat = pixelField.split(/[\s(]/)[0]
      const fps = frameRate(m[2])
      const size = topLevelFields(m[2]).map((field) => /^(\d+)x(\d+)(?:\s|$)/.exec(field)).find((found) => found !== null)
      const aspect = /\bSAR (\d+):(\d+)\b/.exec(m[2])
      const sar = aspect && Number(aspect[1]) > 0 && Number(aspect[2]) > 0 ? Number(aspect[1]) / Number(aspect[2]) : 1
      const hdr = hdrColour(pixelField)
      current = {
        index: Number(m[1]),
        codec,
        cover: /\(attached pic\)/.test(m[2]),
        alpha: ALPHA_PIXEL_FORMAT.test(pixelFormat) || PER_FRAME_FORMAT_CODECS.has(codec),
        ...(fps === undefined ? {} : {fps}),
        ...(size && Number(size[1]) > 0 && Number(size[2]) > 0 ? {width: Number(size[1]), height: Number(size[2])} : {}),
        ...(sar === 1 ? {} : {sar}),
        ...(FIELD_ORDER.test(pixelField) ? {interlaced: true as const} : {}),
        ...(hdr === undefined ? {} : {hdr}),
      }
      streams.push(current)
    } else if (ANY_STREAM_LINE.test(line)) {
      current = undefined
    } else if (current && ALPHA_MODE_LINE.test(line) && (current.codec === 'vp8' || current.codec === 'vp9')) {
      current.alpha = true
    } else if (current?.width !== undefined && current.height !== undefined && !current.turned && quarterTurn(line)) {
      ;[current.width, current.height] = [current.height, current.width]
      if (current.sar !== undefined) current.sar = 1 / current.sar
      current.turned = true
    }
  }
  return streams
}

/**
 * Whether a line under a stream says it is shown a quarter turn round: its display matrix's rotation (ffmpeg 5 and
 * later, "displaymatrix: rotation of -90.00 degrees") or the `rotate` tag of earlier releases.
 */
function quarterTurn(line: string): boolean {
  const degrees = DISPLAY_MATRIX_LINE.exec(line)?.[1] ?? ROTATE_TAG_LINE.exec(line)?.[1]
  return degrees !== undefined && Math.abs(Math.round(Number(degrees)) % 180) === 90
}

/** The demuxer ffmpeg chose for the file, from its description ("Input #0, mpegts, from '…'"); the first of its names. */
export function inputFormat(header: string): string | undefined {
  return /^Input #0, ([\w-]+)/m.exec(header)?.[1]
}

/** The codecs of the subtitle streams of pictures (BITMAP_SUBTITLES) in ffmpeg's description of a file. */
export function bitmapSubtitles(header: string): string[] {
  return header.split('\n').flatMap((line) => {
    const codec = SUBTITLE_LINE.exec(line)?.[1]
    return codec !== undefined && BITMAP_SUBTITLES.has(codec) ? [codec] : []
  })
}

/** What ffmpeg's description of a file says: its video streams, and the demuxer that read it (absent when none could). */
export interface VideoProbe {
  streams: VideoStream[]
  format?: string
  /** It has an audio stream (beside its video streams, or alone: a song, whose only picture may be its cover). */
  audio: boolean
  /**
   * Where the file's timeline starts, in seconds: the earliest start of its streams (5 for a file whose streams all
   * start at 5 s), from which ffmpeg counts the timestamps it gives; absent when the description gives none, or gives
   * it more than once (fileStart).
   */
  start?: number
}

/** The file's start (VideoProbe's `start`) from its description: only from the one line of ffmpeg's form that gives it. */
function fileStart(header: string): number | undefined {
  const found = header.split('\n').flatMap((line) => {
    const m = START_LINE.exec(line)
    return m ? [Number(m[1])] : []
  })
  return found.length === 1 ? found[0] : undefined
}

/** The duration a description states ("Duration: 00:01:02.50"), in seconds. */
function statedSeconds(header: string): number | undefined {
  const m = DURATION.exec(header)
  return m ? Number(m[1]) * 3600 + Number(m[2]) * 60 + Number(m[3]) : undefined
}

/**
 * What ffmpeg's description of a file says: its video streams and its demuxer (none of either when ffmpeg could not
 * open the file: the listing's error says why). `onDuration` is called with the duration the container states, if it
 * states one (a progress estimate only: it may lie). Errors: `unsupported_media` for a file with a subtitle stream of
 * pictures (bitmapSubtitles).
 */
export function readDescription(description: string, onDuration?: (seconds: number) => void): VideoProbe {
  const pictures = bitmapSubtitles(description)
  if (pictures.length > 0) {
    throw new ModError(
      'unsupported_media',
      `the file has a subtitle stream of pictures (${pictures.join(', ')}), which players draw over the video and which is not scored: remove it (ffmpeg -sn) or burn it into the video`,
    )
  }
  const stated = statedSeconds(description)
  if (stated !== undefined) onDuration?.(stated)
  const start = fileStart(description)
  return {streams: parseVideoStreams(description), format: inputFormat(description), audio: AUDIO_LINE.test(description), ...(start === undefined ? {} : {start})}
}

/**
 * Whether readDescription reads `line` of a description: a stream's own line, a video stream's rotation or alpha
 * tag, the duration. A description too long to keep whole keeps these (video/ffmpeg-log.ts).
 */
export function readsLine(line: string): boolean {
  return [ANY_STREAM_LINE, ALPHA_MODE_LINE, DISPLAY_MATRIX_LINE, ROTATE_TAG_LINE, DURATION].some((pattern) => pattern.test(line))
}
