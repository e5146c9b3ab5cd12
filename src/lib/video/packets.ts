import type {Readable} from 'node:stream'

import {ModError} from '../errors.js'
import {ffmpegMissing, ffmpegNotRun} from './ffmpeg.js'
import {decoderStalled, hasDemuxerOptions, inputArgs, picturesTooLarge, readingTooSlow, unreadableVideo, videoTooLong} from './ffmpeg-input.js'
import {DESCRIBING_LOGLEVEL} from './ffmpeg-log.js'
import {startFfmpeg} from './ffmpeg-process.js'
import {createPacketClock} from './framecrc.js'
import {inputFormat} from './streams.js'

export interface PacketScanOptions {
  ffmpeg: string
  /** The scan stops with `video_too_long` once the packets read cover more than this. */
  maxSeconds: number
  /** The scan stops with `video_too_long` past this many packets (frames to decode). */
  maxPackets: number
  maxPixels: number
  /** ffmpeg is killed when it lists no packet for this long: `unsupported_media`. */
  stallTimeoutMs: number
  /** ffmpeg is killed when the scan takes longer than this: `video_too_long`. */
  timeoutMs: number
  /** The demuxer ffmpeg chose for the file (from its description), whose options every run gives. */
  format?: string
  signal?: AbortSignal
}

export interface PacketScan {
  /** End time in seconds of the latest packet (pts + duration), or undefined when none had a timestamp. */
  end: number | undefined
  packets: number
  /** Per video stream listed (attached pictures left out), in the file's order: its packets. */
  streams?: number[]
}

/** A listing's outcome: the packets, or why it failed; and ffmpeg's description of the file when it was asked for. */
export interface PacketSurvey {
  /** ffmpeg's description of the file (empty when it could not open it, or was not asked to describe it). */
  description: string
  /** Whether the description left out lines that say what the streams are (too long to keep whole). */
  descriptionCut: boolean
  /** The file's streams whose packets the run listed (its stream mapping), when it listed them; else none. */
  listed: number[]
  /** Undefined when the listing stopped at the description: the file's demuxer has options of its own, which it needs. */
  scan: PacketScan | ModError | undefined
}

/**
 * Lists the packets of the video streams of the file at `path` (attached pictures left out) without decoding them (ffmpeg's stream
 * copy into its `framecrc` listing), so that what decoding would cost is known before it starts: a video
 * whose packets cover more than `maxSeconds`, or that holds more than `maxPackets` of them (tiny frames at a
 * huge frame rate), is refused as soon as the listing shows it, in the time it takes to read the file.
 *
 * Errors: `video_too_long` (too long, too many packets, or the scan outlasting `timeoutMs`); `ffmpeg_missing`;
 * `payload_too_large` (a picture over `maxPixels`); `unsupported_media` (not a video ffmpeg can read, no video
 * stream, no progress for `stallTimeoutMs`); the
 * signal's reason when aborted. ffmpeg never outlives the call.
 */
export async function scanPackets(path: string, o: PacketScanOptions): Promise<PacketScan> {
  const {scan} = await listPackets(path, o, false)
  if (scan instanceof ModError) throw scan
  return scan as PacketScan
}

/**
 * scanPackets in the same run that describes the file (one ffmpeg instead of two: most of a short video's time is
 * ffmpeg starting), its errors given back rather than thrown: a file without a video stream to list (only covers)
 * still has its description. The demuxer is not known before: when the description names one with options of its
 * own (hasDemuxerOptions), the run stops there, and the packets are to be listed with them (`scan` undefined).
 * Throws only the signal's reason when aborted.
 */
export async function surveyPackets(path: string, o: Omit<PacketScanOptions, 'format'>): Promise<PacketSurvey> {
  return listPackets(path, o, true)
}

/** What an ffmpeg without DESCRIBING_LOGLEVEL's tags answers. */
const TOO_OLD = /Invalid loglevel/

async function listPackets(path: string, o: PacketScanOptions, describing: boolean): Promise<PacketSurvey> {
  o.signal?.throwIfAborted()
  // Every video stream but attached pictures (`V`): each is decoded, and a cover is one picture.
  const input = inputArgs(path, o.maxPixels, describing ? undefined : o.format, [], describing ? DESCRIBING_LOGLEVEL : undefined)
  const args = [...input, '-map', '0:V', '-c', 'copy', '-f', 'framecrc', 'pipe:1']
  let relist = false
  const onDescribed = (description: string): void => {
    if (!hasDemuxerOptions(inputFormat(description))) return
    relist = true
    ffmpeg.kill()
  }
  const ffmpeg = startFfmpeg(o.ffmpeg, args, ['ignore', 'pipe', 'pipe'], 'close', describing ? {onDescribed} : undefined)
  const {child, kill, ended: closed} = ffmpeg

  let refusal: ModError | undefined
  const refuse = (error: ModError): void => {
    refusal ??= error
    kill()
  }
  let stall: NodeJS.Timeout | undefined
  const watch = (): void => {
    clearTimeout(stall)
    stall = setTimeout(
      () => refuse(decoderStalled(o.stallTimeoutMs)),
      o.stallTimeoutMs,
    )
  }
  const deadline = setTimeout(
    () => refuse(readingTooSlow(o.timeoutMs, o.maxSeconds)),
    o.timeoutMs,
  )

  const clock = createPacketClock()
  ;(child.stdout as Readable).on('data', (chunk: Buffer) => {
    clock.push(chunk)
    watch()
    if ((clock.span() ?? 0) > o.maxSeconds) refuse(videoTooLong(o.maxSeconds))
    else if (clock.packets() > o.maxPackets) {
      refuse(new ModError('video_too_long', `the video has more than ${o.maxPackets} frames, the limit for ${o.maxSeconds} s of video`))
    }
  })
  const onAbort = (): void => kill()
  o.signal?.addEventListener('abort', onAbort, {once: true})
  watch()

  try {
    const code = await closed
    o.signal?.throwIfAborted()
    const described = {description: ffmpeg.description(), descriptionCut: ffmpeg.descriptionCut(), listed: ffmpeg.mapped()}
    if (relist) return {...described, scan: undefined}
    if (refusal) return {...described, scan: refusal}
    if (ffmpeg.spawnFailed()) return {...described, scan: ffmpegNotRun(o.ffmpeg)}
    if (ffmpeg.pixelLimit()) return {...described, scan: picturesTooLarge(o.maxPixels)}
    if (code !== 0 && TOO_OLD.test(ffmpeg.log())) return {...described, scan: ffmpegMissing('the ffmpeg in use is too old to tag its log lines (mod needs ffmpeg 4.0 or later)')}
    if (code !== 0) return {...described, scan: await unreadableVideo(ffmpeg.log(), path)}
    return {...described, scan: {end: clock.end(), packets: clock.packets(), streams: clock.streamPackets()}}
  } finally {
    clearTimeout(stall)
    clearTimeout(deadline)
    o.signal?.removeEventListener('abort', onAbort)
    kill()
    await closed
  }
}
