import {spawn} from 'node:child_process'
import {stat} from 'node:fs/promises'
import {basename, resolve} from 'node:path'
import type {Readable} from 'node:stream'

import {emptyFileError, ModError} from '../errors.js'
import type {RgbImage} from '../types.js'
import {ffmpegMissing} from './ffmpeg.js'
import {createPacketClock} from './framecrc.js'
import {createPpmParser} from './ppm.js'

export interface DecodeLimits {
  /**
   * Decoding stops with `video_too_long` once a frame at or past this time is decoded. A low fps samples few
   * frames of a long video, so the packets read count as well: a video whose packets cover more than this is
   * `video_too_long` too, and decoding is cut once they cover 10 s more.
   */
  maxSeconds: number
  /** Decoding stops with `video_too_long` past this many sampled frames. */
  maxFrames: number
  /** Frames are scaled down (never up, aspect kept) so that their longest side is at most this. */
  maxFrameSide: number
  /** The decoder refuses pictures of more pixels than this (before scaling): `payload_too_large`. */
  maxPixels: number
  /** ffmpeg is killed when it gives no output for this long while we wait for it: `unsupported_media`. */
  stallTimeoutMs: number
}

/**
 * Defaults for the limits that have no MOD_ variable. 6000 frames is 600 s at the highest fps (10);
 * 512 px a side is above every preset's model input and keeps a frame under 1 MiB; 30 s without any
 * progress means a damaged or hostile file, not a slow one.
 */
export const DEFAULT_DECODE_LIMITS = {maxFrames: 6000, maxFrameSide: 512, stallTimeoutMs: 30_000} as const

export interface DecodeOptions extends DecodeLimits {
  ffmpeg: string
  /** Sampling rate, frames per second of video. */
  fps: number
  signal?: AbortSignal
}

export interface DecodedFrame {
  index: number
  /** Seconds from the start: index / fps. */
  time: number
  image: RgbImage
}

export interface DecodeSummary {
  frames: number
  /** Seconds, from the packets actually read, kept within the span the sampled frames stand for. */
  duration: number
}

/** Seconds of packets past the limit at which decoding is cut even though no sampled frame has reached it yet. */
const PACKET_MARGIN_S = 10

/** Kept from ffmpeg's error output: the first lines say what went wrong; later ones repeat it. */
const LOG_HEAD_CHARS = 2048
const PIXEL_LIMIT = /exceeds specified max pixel count/

/** Demuxers accepted: MP4/MOV family, Matroska/WebM, AVI, animated GIF, MPEG-TS/PS, FLV, Ogg, ASF/WMV. */
export const VIDEO_DEMUXERS = 'mov,mp4,m4a,3gp,3g2,mj2,matroska,webm,avi,gif,mpegts,mpeg,flv,ogg,asf'

function ffmpegArgs(path: string, o: Omit<DecodeOptions, 'signal'>): string[] {
  const side = o.maxFrameSide
  return [
    '-nostdin', '-hide_banner', '-loglevel', 'error',
    // A playlist or concat file must not make ffmpeg open anything but local files.
    '-protocol_whitelist', 'file',
    // Only real video containers: ffmpeg would otherwise render a text file as video (its tty demuxer) and
    // open dozens of rarely used demuxers to anything uploaded.
    '-format_whitelist', VIDEO_DEMUXERS,
    '-max_pixels', String(o.maxPixels),
    '-i', resolve(path),
    // Output 1: sampled frames as PPM (each frame states its own size) on stdout.
    '-map', '0:v:0',
    '-vf', `fps=${o.fps},scale=w='min(iw,${side})':h='min(ih,${side})':force_original_aspect_ratio=decrease`,
    '-pix_fmt', 'rgb24', '-f', 'image2pipe', '-vcodec', 'ppm', 'pipe:1',
    // Output 2: the packets' timestamps (no decoding) on fd 3, for the real duration.
    '-map', '0:v:0', '-c', 'copy', '-f', 'framecrc', 'pipe:3',
  ]
}

function videoTooLong(maxSeconds: number): ModError {
  return new ModError('video_too_long', `the video is longer than the limit of ${maxSeconds} s`)
}

/** ffmpeg's first error line, without "[demuxer @ 0x…]" prefixes and without the server's path. */
function firstError(log: string, path: string): string {
  const line = log
    .split('\n')
    .map((l) => l.replace(/^(\[[^\]]* @ 0x[0-9a-f]+\] )+/, '').trim())
    .find((l) => l !== '')
  return (line ?? 'no details').split(resolve(path)).join(basename(path)).slice(0, 200)
}

const NOT_A_VIDEO = 'not a video in a supported format (MP4, MOV, WebM, MKV, AVI, GIF, MPEG-TS, MPEG, FLV, Ogg, ASF)'

/** ffmpeg's reasons in a person's words: its own lines name its internals (demuxer lists, atoms, stream maps). */
const FFMPEG_REASONS: [RegExp, string][] = [
  // Before the generic reading failure that ffmpeg reports after it.
  [/moov atom not found/, 'the video is incomplete: an MP4 or MOV file without its index (cut off while copying?)'],
  [/matches no streams/, 'the file has no video stream'],
  [/Format not on whitelist|Invalid data found when processing input/, NOT_A_VIDEO],
]

/** unsupported_media with ffmpeg's reason reworded; its first line stays in `details` for a log. */
function unreadableVideo(log: string, path: string): ModError {
  const reason = FFMPEG_REASONS.find(([pattern]) => pattern.test(log))?.[1] ?? 'the video could not be decoded; the file may be damaged'
  return new ModError('unsupported_media', reason, {ffmpeg: firstError(log, path)})
}

/**
 * Samples `fps` frames per second of the first video stream of the file at `path` through ffmpeg, as RGB
 * frames handed over a pipe (no files written). The stream is read only as fast as the caller consumes it,
 * and limits are enforced on what is decoded, never on the container's metadata. Leaving the loop early,
 * an error or `signal` aborting kills ffmpeg; the generator ends only once the process is gone.
 *
 * Errors: `unsupported_media` for an empty file (before ffmpeg starts); `ffmpeg_missing` (the binary cannot be run); `video_too_long` (a frame at or past `maxSeconds`,
 * packets covering more than `maxSeconds`, or more than `maxFrames` frames); `payload_too_large` (a picture over `maxPixels`); `unsupported_media`
 * (not a video ffmpeg can read, no video stream, no frame decoded, ffmpeg failing, or no progress for
 * `stallTimeoutMs`, whether or not frames were decoded before); the signal's reason when aborted.
 */
export async function* decodeFrames(path: string, o: DecodeOptions): AsyncGenerator<DecodedFrame, DecodeSummary> {
  o.signal?.throwIfAborted()
  if ((await stat(path)).size === 0) throw emptyFileError()
  const child = spawn(o.ffmpeg, ffmpegArgs(path, o), {stdio: ['ignore', 'pipe', 'pipe', 'pipe'], windowsHide: true})
  const stdout = child.stdout as Readable
  const stderr = child.stderr as Readable
  const side = child.stdio[3] as Readable
  let spawnFailed = false
  const exited = new Promise<number | null>((done) => {
    child.once('exit', (code) => done(code))
    child.once('error', () => {
      spawnFailed = true
      done(null)
    })
  })

  let log = ''
  let pixelLimit = false
  stderr.on('data', (chunk: Buffer) => {
    const text = chunk.toString('utf8')
    if (log.length < LOG_HEAD_CHARS) log += text.slice(0, LOG_HEAD_CHARS - log.length)
    if (PIXEL_LIMIT.test(text)) pixelLimit = true
  })

  const kill = (): void => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
    stdout.destroy()
  }

  // The watchdog runs only while we wait for ffmpeg, never while the caller is busy with a frame.
  let stalled = false
  let waiting = false
  let timer: NodeJS.Timeout | undefined
  const watch = (): void => {
    clearTimeout(timer)
    timer = setTimeout(() => {
      stalled = true
      kill()
    }, o.stallTimeoutMs)
  }
  const wait = async <T>(p: Promise<T>): Promise<T> => {
    waiting = true
    watch()
    try {
      return await p
    } finally {
      waiting = false
      clearTimeout(timer)
    }
  }

  const clock = createPacketClock()
  let tooLong = false
  // Packets are read ahead of the sampled frames: decoding is cut on the packet clock only well past the limit,
  // so that where the frame check stops a video stays the same; at a low fps it saves decoding up to 1/fps more.
  const cutAt = o.maxSeconds + PACKET_MARGIN_S
  side.on('data', (chunk: Buffer) => {
    clock.push(chunk)
    if ((clock.span() ?? 0) > cutAt) {
      tooLong = true
      kill()
    }
    if (waiting) watch()
  })
  const onAbort = (): void => kill()
  o.signal?.addEventListener('abort', onAbort, {once: true})

  const parser = createPpmParser(o.maxFrameSide)
  let index = 0
  try {
    const chunks = stdout[Symbol.asyncIterator]() as AsyncIterator<Buffer>
    for (;;) {
      let next: IteratorResult<Buffer>
      try {
        next = await wait(chunks.next())
      } catch (e) {
        // Killing ffmpeg (stall, abort, too long) destroys stdout, which ends the iteration with an error.
        if (!stalled && !tooLong && !o.signal?.aborted) throw e
        break
      }
      if (next.done) break
      for (const image of parser.push(next.value)) {
        const time = index / o.fps
        if (time >= o.maxSeconds) throw videoTooLong(o.maxSeconds)
        if (index >= o.maxFrames) {
          throw new ModError('video_too_long', `the video gives more than ${o.maxFrames} frames at ${o.fps} fps, the limit`)
        }
        o.signal?.throwIfAborted()
        yield {index, time, image}
        index++
      }
    }
    const code = await wait(exited)
    o.signal?.throwIfAborted()
    if (tooLong || (clock.span() ?? 0) > o.maxSeconds) throw videoTooLong(o.maxSeconds)
    if (spawnFailed) throw ffmpegMissing(`ffmpeg could not be run from ${JSON.stringify(o.ffmpeg)}`)
    if (stalled) {
      throw new ModError('unsupported_media', `the video decoder made no progress for ${o.stallTimeoutMs / 1000} s; the file may be damaged`)
    }
    if (pixelLimit) {
      throw new ModError('payload_too_large', `the video's pictures are larger than the limit of ${o.maxPixels} pixels`)
    }
    if (code !== 0) throw unreadableVideo(log, path)
    if (index === 0) throw new ModError('unsupported_media', 'no video frame could be decoded')
    const span = index / o.fps
    const end = clock.end()
    const duration = end === undefined ? span : Math.min(span, Math.max(end, (index - 1) / o.fps))
    return {frames: index, duration}
  } finally {
    clearTimeout(timer)
    o.signal?.removeEventListener('abort', onAbort)
    kill()
    stderr.destroy()
    side.destroy()
    await exited
  }
}
