import {spawn} from 'node:child_process'
import {stat} from 'node:fs/promises'
import type {Readable} from 'node:stream'

import {emptyFileError, ModError} from '../errors.js'
import type {RgbImage} from '../image/rgb.js'
import {ffmpegMissing} from './ffmpeg.js'
import {decoderStalled, inputArgs, LOG_HEAD_CHARS, overPixelLimit, picturesTooLarge, unreadableVideo, videoTooLong} from './ffmpeg-input.js'
import {scanPackets} from './packets.js'
import {createPpmParser} from './ppm.js'
import {probeVideoStreams, type VideoStream} from './streams.js'

export interface DecodeLimits {
  /**
   * A video whose packets cover more than this is `video_too_long`, found by listing them before any decoding
   * (so at a low fps too, where few frames are sampled); decoding also stops once a frame at or past this time
   * is sampled.
   */
  maxSeconds: number
  /** Decoding stops with `video_too_long` past this many sampled frames. */
  maxFrames: number
  /**
   * Frames the decoder may be given per second of `maxSeconds`: a video of more packets than `maxSeconds` times
   * this (tiny frames at a huge frame rate) is `video_too_long` before decoding.
   */
  maxSourceFps: number
  /**
   * Seconds that ffmpeg may take, counted only while we wait for it (listing and decoding), per second of
   * `maxSeconds`; past that, `video_too_long`. A video within the other limits decodes much faster.
   */
  decodeTimePerSecond: number
  /**
   * Frames are scaled to their displayed shape (non-square pixels made square), then down (never up, aspect
   * kept) so that their longest side is at most this.
   */
  maxFrameSide: number
  /** The decoder refuses pictures of more pixels than this (before scaling): `payload_too_large`. */
  maxPixels: number
  /** ffmpeg is killed when it gives no output for this long while we wait for it: `unsupported_media`. */
  stallTimeoutMs: number
}

/**
 * Defaults for the limits that have no MOD_ variable. 6000 frames is 600 s at the highest fps (10);
 * 240 frames a second is the fastest common camera (slow motion); decoding as slowly as the video plays
 * is far slower than any video within the limits decodes; 512 px a side is above every preset's model
 * input and keeps a frame under 1 MiB; 30 s without any progress means a damaged or hostile file, not a
 * slow one.
 */
export const DEFAULT_DECODE_LIMITS = {
  maxFrames: 6000,
  maxSourceFps: 240,
  decodeTimePerSecond: 1,
  maxFrameSide: 512,
  stallTimeoutMs: 30_000,
} as const

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

/**
 * Scales each frame to its displayed shape (width times the sample aspect ratio, as players show non-square
 * pixels; ffmpeg has already applied the rotation), then down (never up) so that no side is over `side`.
 */
function displayScale(side: number): string {
  const fit = `min(1,${side}/max(iw*sar,ih))`
  return `scale=w='max(1,round(iw*sar*${fit}))':h='max(1,round(ih*${fit}))'`
}

/**
 * Composites a frame with alpha onto white, as images are flattened: white minus (white minus colour) times alpha
 * is colour times alpha plus white times (1 - alpha). Only for streams that may be transparent: it costs a
 * conversion per sampled frame.
 */
const ONTO_WHITE = 'format=gbrap,negate,premultiply=inplace=1,negate,'

/** libvpx's decoders, which read the alpha channel of VP8 and VP9 that ffmpeg's own decoders leave out. */
const ALPHA_DECODERS: Record<string, string> = {vp8: 'libvpx', vp9: 'libvpx-vp9'}

function ffmpegArgs(path: string, o: Omit<DecodeOptions, 'signal'>, stream: VideoStream | undefined): string[] {
  const map = stream === undefined ? '0:v:0' : `0:${stream.index}`
  const decoder = stream?.alpha ? ALPHA_DECODERS[stream.codec] : undefined
  return [
    ...inputArgs(path, o.maxPixels, decoder === undefined ? [] : [`-c:${stream?.index}`, decoder]),
    // Output 1: sampled frames as PPM (each frame states its own size) on stdout. The fps filter fills instant k
    // with the last frame whose timestamp, rounded to its grid, is at most k: its default rounding (to the nearest)
    // gave instant k the frame shown at (k + 1/2) / fps, so a first frame shown for less than half an interval was
    // never seen; `round=up` makes it the frame on screen at k / fps. `start_time=0` starts the grid at the
    // video's start, a stream that begins later (after the audio) giving its first frame to the instants before
    // it; `eof_action=pass` keeps a frame for every instant before the end (a video shorter than an interval gives
    // its first frame).
    '-map', map,
    '-vf', `fps=${o.fps}:start_time=0:round=up:eof_action=pass,${stream?.alpha ? ONTO_WHITE : ''}${displayScale(o.maxFrameSide)}`,
    '-pix_fmt', 'rgb24', '-f', 'image2pipe', '-vcodec', 'ppm', 'pipe:1',
    // Output 2: the packets' listing (no decoding) on fd 3, read only as a sign of progress while ffmpeg decodes
    // between two sampled frames (many seconds of video at a low fps).
    '-map', map, '-c', 'copy', '-f', 'framecrc', 'pipe:3',
  ]
}

/** The running ffmpeg process: its pipes, how it ended, and what its log said. */
interface Decoder {
  stdout: Readable
  /** The packets' listing, read only as a sign of progress. */
  progress: Readable
  exited: Promise<number | null>
  spawnFailed(): boolean
  log(): string
  pixelLimit(): boolean
  kill(): void
  /** Kills ffmpeg and closes every pipe; resolves once the process is gone. */
  close(): Promise<void>
}

function startDecoder(path: string, o: DecodeOptions, stream: VideoStream | undefined): Decoder {
  const child = spawn(o.ffmpeg, ffmpegArgs(path, o, stream), {stdio: ['ignore', 'pipe', 'pipe', 'pipe'], windowsHide: true})
  const stdout = child.stdout as Readable
  const stderr = child.stderr as Readable
  const progress = child.stdio[3] as Readable
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
    if (overPixelLimit(text)) pixelLimit = true
  })
  const kill = (): void => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
    stdout.destroy()
  }
  return {
    stdout,
    progress,
    exited,
    spawnFailed: () => spawnFailed,
    log: () => log,
    pixelLimit: () => pixelLimit,
    kill,
    close: async () => {
      kill()
      stderr.destroy()
      progress.destroy()
      await exited
    },
  }
}

/**
 * The clock of the time ffmpeg may take and its stall watchdog. Both run only while we wait for ffmpeg, never
 * while the caller is busy with a frame. When either runs out, `onExpire` is called (it kills ffmpeg).
 */
interface WaitClock {
  wait<T>(p: Promise<T>): Promise<T>
  /** ffmpeg showed progress: the stall watchdog starts again. */
  progressed(): void
  stalled(): boolean
  overTime(): boolean
  stop(): void
}

function createWaitClock(budgetMs: number, spentBefore: number, stallTimeoutMs: number, onExpire: () => void): WaitClock {
  let spent = spentBefore
  let stalled = false
  let overTime = false
  let waiting = false
  let waitStarted = 0
  let timer: NodeJS.Timeout | undefined
  const watch = (): void => {
    clearTimeout(timer)
    const left = budgetMs - spent - (performance.now() - waitStarted)
    timer = setTimeout(
      () => {
        if (left <= stallTimeoutMs) overTime = true
        else stalled = true
        onExpire()
      },
      Math.max(0, Math.min(stallTimeoutMs, left)),
    )
  }
  return {
    async wait(p) {
      waiting = true
      waitStarted = performance.now()
      watch()
      try {
        return await p
      } finally {
        waiting = false
        spent += performance.now() - waitStarted
        clearTimeout(timer)
      }
    },
    progressed: () => {
      if (waiting) watch()
    },
    stalled: () => stalled,
    overTime: () => overTime,
    stop: () => clearTimeout(timer),
  }
}

/** Throws the error that explains how ffmpeg ended, if it did not end well. */
function checkEnding(code: number | null, frames: number, decoder: Decoder, clock: WaitClock, path: string, o: DecodeOptions, budgetMs: number): void {
  if (clock.overTime()) {
    throw new ModError('video_too_long', `decoding the video took longer than ${budgetMs / 1000} s, the limit for videos of up to ${o.maxSeconds} s`)
  }
  if (decoder.spawnFailed()) throw ffmpegMissing(`ffmpeg could not be run from ${JSON.stringify(o.ffmpeg)}`)
  if (clock.stalled()) {
    throw decoderStalled(o.stallTimeoutMs)
  }
  if (decoder.pixelLimit()) throw picturesTooLarge(o.maxPixels)
  if (code !== 0) throw unreadableVideo(decoder.log(), path)
  if (frames === 0) throw new ModError('unsupported_media', 'no video frame could be decoded')
}

function checkFrameLimits(index: number, o: DecodeOptions): void {
  const time = index / o.fps
  // The packets' span leaves out packets without a timestamp; the frames sampled from them still count.
  if (time >= o.maxSeconds) throw videoTooLong(o.maxSeconds)
  if (index >= o.maxFrames) {
    throw new ModError('video_too_long', `the video gives more than ${o.maxFrames} frames at ${o.fps} fps, the limit`)
  }
}

/**
 * Samples `fps` frames per second of the first video stream of the file at `path` through ffmpeg, as RGB
 * frames handed over a pipe (no files written): a frame for every sampling instant inside the video (a video
 * shorter than 1 / `fps` seconds gives one). The stream is read only as fast as the caller consumes it,
 * and limits are enforced on what is decoded, never on the container's metadata. Leaving the loop early,
 * an error or `signal` aborting kills ffmpeg; the generator ends only once the process is gone.
 *
 * Before decoding, the packets are listed (scanPackets): what decoding will cost is bounded by the limits
 * before it starts, and the time ffmpeg takes altogether by `decodeTimePerSecond`.
 *
 * Errors: `unsupported_media` for an empty file (before ffmpeg starts); `ffmpeg_missing` (the binary cannot be run); `video_too_long` (packets
 * covering more than `maxSeconds` or more than `maxSeconds` × `maxSourceFps` of them, a frame at or past `maxSeconds`, more than `maxFrames`
 * frames, or ffmpeg outlasting its time); `payload_too_large` (a picture over `maxPixels`); `unsupported_media`
 * (not a video ffmpeg can read, no video stream, no frame decoded, ffmpeg failing, or no progress for
 * `stallTimeoutMs`, whether or not frames were decoded before); the signal's reason when aborted.
 */
export async function* decodeFrames(path: string, o: DecodeOptions): AsyncGenerator<DecodedFrame, DecodeSummary> {
  o.signal?.throwIfAborted()
  if ((await stat(path)).size === 0) throw emptyFileError()
  const budgetMs = o.maxSeconds * o.decodeTimePerSecond * 1000
  const scanStarted = performance.now()
  // The stream `0:v:0` names: the first video stream listed.
  const probeOptions = {ffmpeg: o.ffmpeg, maxPixels: o.maxPixels, stallTimeoutMs: o.stallTimeoutMs, timeoutMs: budgetMs, maxSeconds: o.maxSeconds, signal: o.signal}
  const [stream] = await probeVideoStreams(path, probeOptions)
  const scan = await scanPackets(path, {
    ffmpeg: o.ffmpeg,
    maxSeconds: o.maxSeconds,
    maxPackets: o.maxSeconds * o.maxSourceFps,
    maxPixels: o.maxPixels,
    stallTimeoutMs: o.stallTimeoutMs,
    timeoutMs: budgetMs,
    signal: o.signal,
  })
  const decoder = startDecoder(path, o, stream)
  const clock = createWaitClock(budgetMs, performance.now() - scanStarted, o.stallTimeoutMs, decoder.kill)
  decoder.progress.on('data', clock.progressed)
  const onAbort = (): void => decoder.kill()
  o.signal?.addEventListener('abort', onAbort, {once: true})

  const parser = createPpmParser(o.maxFrameSide)
  let index = 0
  try {
    const chunks = decoder.stdout[Symbol.asyncIterator]() as AsyncIterator<Buffer>
    for (;;) {
      let next: IteratorResult<Buffer>
      try {
        next = await clock.wait(chunks.next())
      } catch (e) {
        // Killing ffmpeg (stall, abort, too long) destroys stdout, which ends the iteration with an error.
        if (!clock.stalled() && !clock.overTime() && !o.signal?.aborted) throw e
        break
      }
      if (next.done) break
      for (const image of parser.push(next.value)) {
        checkFrameLimits(index, o)
        o.signal?.throwIfAborted()
        yield {index, time: index / o.fps, image}
        index++
      }
    }
    const code = await clock.wait(decoder.exited)
    o.signal?.throwIfAborted()
    checkEnding(code, index, decoder, clock, path, o, budgetMs)
    const span = index / o.fps
    const end = scan.end
    const duration = end === undefined ? span : Math.min(span, Math.max(end, (index - 1) / o.fps))
    return {frames: index, duration}
  } finally {
    clock.stop()
    o.signal?.removeEventListener('abort', onAbort)
    await decoder.close()
  }
}
