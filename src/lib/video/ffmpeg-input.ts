import {basename, resolve} from 'node:path'

import {ModError} from '../errors.js'
import {isAnimatedPng} from '../image/apng.js'
import {aFormat, readHead, sniffImage, stillImageFormat} from '../input/sniff.js'

/**
 * Demuxers accepted: MP4/MOV family, Matroska/WebM, AVI, animated GIF, MPEG-TS/PS, FLV, Ogg, ASF/WMV; and MP3 and FLAC,
 * for the picture they may hold (cover art, which players and file managers show: scored as one picture).
 */
export const VIDEO_DEMUXERS = 'mov,mp4,m4a,3gp,3g2,mj2,matroska,webm,avi,gif,mpegts,mpeg,flv,ogg,asf,mp3,flac'

/**
 * Input options per demuxer, given once the file's demuxer is known (from ffmpeg's description of it, streams.ts). MPEG-TS: a
 * program whose video moves to another PID (its PMT changed) keeps it as the same stream. Otherwise ffmpeg finds the
 * new PID only after its probe (about 5 s in), as a stream the runs do not map: a flagged part sent there was neither
 * decoded nor counted against the length limit, and the video scored safe. A player that follows the PMT shows it.
 */
const DEMUXER_OPTIONS: Readonly<Record<string, readonly string[]>> = {mpegts: ['-merge_pmt_versions', '1']}

/** Whether the demuxer ffmpeg chose for a file has options of its own: runs that name it differ from those that do not. */
export const hasDemuxerOptions = (format: string | undefined): boolean => format !== undefined && DEMUXER_OPTIONS[format] !== undefined

/**
 * How every ffmpeg run of ours opens an uploaded file: quiet (`loglevel`: errors only, unless the run also describes
 * the file), local files only, video containers only; `format`: the demuxer ffmpeg chose for it (its options added,
 * and that demuxer kept); `options` are input options (a stream's decoder).
 */
export function inputArgs(path: string, maxPixels: number, format?: string, options: string[] = [], loglevel = 'error'): string[] {
  const demuxer = format === undefined ? undefined : DEMUXER_OPTIONS[format]
  return [
    '-nostdin', '-hide_banner', '-nostats', '-loglevel', loglevel,
    // A playlist or concat file must not make ffmpeg open anything but local files.
    '-protocol_whitelist', 'file',
    // Only real video containers: ffmpeg would otherwise render a text file as video (its tty demuxer) and
    // open dozens of rarely used demuxers to anything uploaded.
    '-format_whitelist', VIDEO_DEMUXERS,
    '-max_pixels', String(maxPixels),
    // A demuxer's own options are refused by every other one: the demuxer is named with them.
    ...(demuxer === undefined ? [] : ['-f', format as string, ...demuxer]),
    ...options,
    '-i', resolve(path),
  ]
}

export function decoderStalled(stallTimeoutMs: number): ModError {
  return new ModError('unsupported_media', `the video decoder made no progress for ${stallTimeoutMs / 1000} s; the file may be damaged`)
}

export function readingTooSlow(timeoutMs: number, maxSeconds: number): ModError {
  return new ModError('video_too_long', `reading the video took longer than ${timeoutMs / 1000} s, the limit for videos of up to ${maxSeconds} s`)
}

export function videoTooLong(maxSeconds: number): ModError {
  return new ModError('video_too_long', `the video is longer than the limit of ${maxSeconds} s (MOD_MAX_VIDEO_SECONDS)`)
}

/** The "[demuxer @ 0x…] " that ffmpeg puts before a component's log line, as a pattern's source. */
export const COMPONENT_PREFIX = String.raw`\[[^\]\n]* @ 0x[0-9a-f]+\] `
const COMPONENT_PREFIXES = new RegExp(`^(${COMPONENT_PREFIX})+`)

/** ffmpeg's first error line, without "[demuxer @ 0x…]" prefixes and without the server's path. */
function firstError(log: string, path: string): string {
  const line = log
    .split('\n')
    .map((l) => l.replace(COMPONENT_PREFIXES, '').trim())
    .find((l) => l !== '')
  return (line ?? 'no details').split(resolve(path)).join(basename(path)).slice(0, 200)
}

/** The containers a video is read from, as messages name them. */
export const VIDEO_FORMATS = 'MP4, MOV, WebM, MKV, AVI, GIF, MPEG-TS, MPEG, FLV, Ogg, ASF'
const NOT_A_VIDEO = `not a video in a supported format (${VIDEO_FORMATS})`

const NO_INDEX: [RegExp, string] = [/moov atom not found/, 'the video is incomplete: an MP4 or MOV file without its index (cut off while copying?)']

/** ffmpeg's reasons in a person's words: its own lines name its internals (demuxer lists, atoms, stream maps). */
const FFMPEG_REASONS: [RegExp, string][] = [
  // Before the generic reading failure that ffmpeg reports after it.
  NO_INDEX,
  [/matches no streams/, 'the file has no video stream'],
  [/Unknown decoder 'libvpx/, 'the video is transparent (VP8 or VP9 with alpha), which needs an ffmpeg built with libvpx to decode'],
  [/No such filter: '(?:zscale|tonemap)'/, "the video is HDR (PQ or HLG), whose colours need an ffmpeg built with zimg (its zscale filter) to be shown as players show them"],
  // Not where a packet of a stream opened fails to decode ("Error while decoding stream #0:0: Invalid data …").
  [/Format not on whitelist|^(?!Error while decoding ).*Invalid data found when processing input/m, NOT_A_VIDEO],
]

/** Box types an MP4 or MOV file starts with: ffmpeg opens any file named .mp4 or .mov as one and finds no index. */
const FIRST_BOXES = new Set(['ftyp', 'styp', 'moov', 'moof', 'mdat', 'free', 'skip', 'wide', 'pnot', 'uuid', 'sidx'])

/** What ffmpeg's failure means for a file it could not open as a video, from the file's own first bytes. */
async function notOpened(reason: string, path: string): Promise<string> {
  // A file that cannot be read keeps ffmpeg's reason.
  const head = await readHead(path).catch(() => undefined)
  if (head === undefined) return reason
  // An animated GIF or AVIF sequence that fails here is a damaged video.
  const image = stillImageFormat(head)
  if (image === 'PNG' && isAnimatedPng(head)) return 'the file is an animated PNG (APNG), which is read neither as a video nor as an image: convert it to a video, or to an animated GIF or WebP'
  if (image !== undefined) {
    const named = `the file is ${aFormat(image)} image, not a video`
    return sniffImage(head) === 'refused'
      ? `${named}, and ${image} images are not supported either: send JPEG, PNG, WebP, GIF, AVIF or TIFF as images (mod scan, POST /v1/moderate)`
      : `${named}: score images as images (mod scan, POST /v1/moderate)`
  }
  // Other bytes named .mp4 are not a video at all, rather than one cut off.
  if (reason === NO_INDEX[1] && head.length >= 8 && !FIRST_BOXES.has(head.toString('latin1', 4, 8))) return NOT_A_VIDEO
  return reason
}

/**
 * unsupported_media with ffmpeg's reason reworded (`otherwise` when it gives none known); its first line stays in the
 * error's `context`.
 */
export async function unreadableVideo(log: string, path: string, otherwise = 'the video could not be decoded; the file may be damaged'): Promise<ModError> {
  const found = FFMPEG_REASONS.find(([pattern]) => pattern.test(log))?.[1]
  const reason = found === NO_INDEX[1] || found === NOT_A_VIDEO ? await notOpened(found, path) : (found ?? otherwise)
  return new ModError('unsupported_media', reason, {ffmpeg: firstError(log, path)})
}

const PIXEL_LIMIT = /exceeds specified max pixel count/

/** Whether ffmpeg's error output says that a picture is over `-max_pixels`. */
export const overPixelLimit = (log: string): boolean => PIXEL_LIMIT.test(log)

export function picturesTooLarge(maxPixels: number): ModError {
  return new ModError('payload_too_large', `the video's pictures are larger than the limit of ${maxPixels} pixels (MOD_MAX_PIXELS)`)
}

/** Kept from ffmpeg's error output: the first lines say what went wrong; later ones repeat it. */
export const LOG_HEAD_CHARS = 2048
