import {spawn} from 'node:child_process'
import type {Readable} from 'node:stream'

import {ModError} from '../errors.js'
import {ffmpegMissing} from './ffmpeg.js'
import {decoderStalled, inputArgs, LOG_HEAD_CHARS, overPixelLimit, picturesTooLarge, readingTooSlow, unreadableVideo, videoTooLong} from './ffmpeg-input.js'
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
  const args = [...inputArgs(path, o.maxPixels), '-map', '0:V', '-c', 'copy', '-f', 'framecrc', 'pipe:1']
  const child = spawn(o.ffmpeg, args, {stdio: ['ignore', 'pipe', 'pipe'], windowsHide: true})
  let spawnFailed = false
  const closed = new Promise<number | null>((done) => {
    child.once('close', (code) => done(code))
    child.once('error', () => {
      spawnFailed = true
      done(null)
    })
  })
  const kill = (): void => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  }

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

  let log = ''
  let pixelLimit = false
  ;(child.stderr as Readable).on('data', (chunk: Buffer) => {
    const text = chunk.toString('utf8')
    if (log.length < LOG_HEAD_CHARS) log += text.slice(0, LOG_HEAD_CHARS - log.length)
    // ffmpeg decodes a first picture to learn the stream's size, even when it copies the packets.
    if (overPixelLimit(text)) pixelLimit = true
  })
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
    if (spawnFailed) throw ffmpegMissing(`ffmpeg could not be run from ${JSON.stringify(o.ffmpeg)}`)
    if (pixelLimit) throw picturesTooLarge(o.maxPixels)
    if (code !== 0) throw unreadableVideo(log, path)
    return {end: clock.end(), packets: clock.packets()}
  } finally {
    clearTimeout(stall)
    clearTimeout(deadline)
    o.signal?.removeEventListener('abort', onAbort)
    kill()
    await closed
  }
}
