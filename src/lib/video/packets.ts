import type {Readable} from 'node:stream'

import {ModError} from '../errors.js'
import {ffmpegMissing} from './ffmpeg.js'
import {decoderStalled, inputArgs, picturesTooLarge, readingTooSlow, unreadableVideo, videoTooLong} from './ffmpeg-input.js'
import {startFfmpeg} from './ffmpeg-process.js'
import {createPacketClock} from './framecrc.js'

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
  /** The demuxer ffmpeg chose for the file (probeVideoStreams), whose options every run gives. */
  format?: string
  signal?: AbortSignal
}

export interface PacketScan {
  /** End time in seconds of the latest packet (pts + duration), or undefined when none had a timestamp. */
  end: number | undefined
  packets: number
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
  o.signal?.throwIfAborted()
  // Every video stream but attached pictures (`V`): each is decoded, and a cover is one picture.
  const args = [...inputArgs(path, o.maxPixels, o.format), '-map', '0:V', '-c', 'copy', '-f', 'framecrc', 'pipe:1']
  const ffmpeg = startFfmpeg(o.ffmpeg, args, ['ignore', 'pipe', 'pipe'], 'close')
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
    if (refusal) throw refusal
    if (ffmpeg.spawnFailed()) throw ffmpegMissing(`ffmpeg could not be run from ${JSON.stringify(o.ffmpeg)}`)
    if (ffmpeg.pixelLimit()) throw picturesTooLarge(o.maxPixels)
    if (code !== 0) throw await unreadableVideo(ffmpeg.log(), path)
    return {end: clock.end(), packets: clock.packets()}
  } finally {
    clearTimeout(stall)
    clearTimeout(deadline)
    o.signal?.removeEventListener('abort', onAbort)
    kill()
    await closed
  }
}
