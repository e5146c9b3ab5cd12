import {stat} from 'node:fs/promises'

import {emptyFileError, ModError} from '../errors.js'
import type {RgbImage} from '../image/rgb.js'
import {type Decoder, partCount, type StackLayout, stackedParts, startDecoder} from './decoder.js'
import {type FrameView, frameViews} from './frame-views.js'
import {ffmpegNotRun} from './ffmpeg.js'
import {decoderStalled, picturesTooLarge, unreadableVideo, videoTooLong} from './ffmpeg-input.js'
import {type PacketScan, scanPackets, surveyPackets} from './packets.js'
import {createPpmParser, type PpmParser} from './ppm.js'
import {readDescription, type VideoStream} from './streams.js'

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
   * kept) so that their shorter side is at most `frameShortSide` and their longer side at most `maxFrameSide`.
   */
  frameShortSide: number
  maxFrameSide: number
  /** The decoder refuses pictures of more pixels than this (before scaling): `payload_too_large`. */
  maxPixels: number
  /** ffmpeg is killed when it gives no output for this long while we wait for it: `unsupported_media`. */
  stallTimeoutMs: number
}

/**
 * Defaults for the limits that have no MOD_ variable. 6000 frames is 600 s at the highest fps (10);
 * 240 frames a second is the fastest common camera (slow motion); decoding as slowly as the video plays
 * is far slower than any video within the limits decodes; a shorter side of 448 px is the NSFW specialist's
 * square (an image is scored from at least that), and above every preset's model input: with the longest side
 * at 512 instead, the portrait photo of a 16:9 frame was scored from 288 pixels and far less often flagged (78.6%
 * of swimwear photos shown so, against 89.3%), and 1024 px keeps a frame under 1.3 MiB; 30 s without any
 * progress means a damaged or hostile file, not a slow one.
 */
export const DEFAULT_DECODE_LIMITS = {
  maxFrames: 6000,
  maxSourceFps: 240,
  decodeTimePerSecond: 1,
  frameShortSide: 448,
  maxFrameSide: 1024,
  stallTimeoutMs: 30_000,
} as const

export interface DecodeOptions extends DecodeLimits {
  ffmpeg: string
  /** Sampling rate, frames per second of video. */
  fps: number
  /** Called once with the duration the container states, if it states one (a progress estimate). */
  onDuration?: (seconds: number) => void
  signal?: AbortSignal
}

export interface DecodedFrame {
  /** The sampling instant, numbered on the file's timeline (samplingGrid): the first is 5 in a file that starts at 5 s, at 1 fps. */
  index: number
  /** Its time on the file's timeline, in seconds: index / fps. */
  time: number
  /** The frame; for a frame with transparency, one of its two views (onto white, then onto black: `onBlack`). */
  image: RgbImage
  /** Which of the file's decoded video streams the frame is from (0: the first; covers come after the others). */
  stream: number
  /** The frame most like the interval after the instant, given beside the instant's when another picture (frame-views.ts). */
  interval?: true
  /** One field of the instant's interlaced frame, given beside the frame when another picture (frame-views.ts). */
  field?: true
  /** No other frame of this instant follows (each stream gives its frames, in stream order). */
  last: boolean
}

export interface DecodeSummary {
  /** Sampling instants. */
  frames: number
  /**
   * Where the video ends on the file's timeline, in seconds, from the packets actually read, kept within the span the
   * sampled frames stand for: its length, for a file that starts at 0.
   */
  duration: number
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

/**
 * Throws the error that explains how ffmpeg ended, if it did not end well. `named`: how a message names the stream
 * ("the video", or one stream of several).
 */
async function checkEnding(code: number | null, frames: number, decoder: Decoder, clock: WaitClock, path: string, o: DecodeOptions, budgetMs: number, named: string): Promise<void> {
  if (clock.overTime()) {
    throw new ModError('video_too_long', `decoding the video took longer than ${budgetMs / 1000} s, the limit for videos of up to ${o.maxSeconds} s`)
  }
  if (decoder.spawnFailed()) throw ffmpegNotRun(o.ffmpeg)
  if (clock.stalled()) {
    throw decoderStalled(o.stallTimeoutMs)
  }
  if (decoder.pixelLimit()) throw picturesTooLarge(o.maxPixels)
  // Packets that ffmpeg read but could not decode into one picture (their data damaged).
  const noFrame = `no frame of ${named} could be decoded: its pictures are damaged or unreadable`
  if (code !== 0) throw await unreadableVideo(decoder.log(), path, frames === 0 ? noFrame : undefined)
  if (frames === 0) throw new ModError('unsupported_media', noFrame)
}

/**
 * unsupported_media for a file with a video stream (not a cover) of no packet at all: declared, but empty, so that
 * nothing of it is shown; `named` as checkEnding's. Decoding it failed only once the other streams had been scored,
 * as "the video could not be decoded; the file may be damaged".
 */
function emptyStream(stream: VideoStream, timelines: number, others: boolean): ModError {
  const remove = others ? `: remove it (ffmpeg -i in -map 0 -map -0:${stream.index} -c copy out) to have the others scored` : ''
  return new ModError('unsupported_media', `${streamName(stream, timelines, 'stream')} is declared but empty, with no frame to score${remove}`)
}

/**
 * How messages name `stream` of the file's `timelines` streams with a timeline: by its number among several (or as a
 * cover), else "the video" (`alone`: "the file's video stream").
 */
const streamName = (stream: VideoStream | undefined, timelines: number, alone: 'video' | 'stream' = 'video'): string =>
  stream !== undefined && (timelines > 1 || stream.cover) ? `the file's video stream 0:${stream.index}` : alone === 'video' ? 'the video' : "the file's video stream"

/** `index`: the instant's number from the grid's first (not its number on the timeline); `offset`: samplingGrid's. */
function checkFrameLimits(index: number, offset: number, o: DecodeOptions): void {
  const time = index / o.fps - offset
  // The packets' span leaves out packets without a timestamp; the frames sampled from them still count.
  if (time >= o.maxSeconds) throw videoTooLong(o.maxSeconds)
  if (index >= o.maxFrames) throw tooManyFrames(o)
}

function tooManyFrames(o: DecodeOptions): ModError {
  return new ModError('video_too_long', `the video gives more than ${o.maxFrames} frames at ${o.fps} fps, the most one video is scored on: sample fewer (a lower fps)`)
}

/** The sampling instants k / fps before `end` seconds (a hair of float error left out). */
function instantsBefore(end: number, fps: number): number {
  return Math.ceil(end * fps - 1e-6)
}

/**
 * Demuxers whose timestamps are a clock rather than the file's timeline: an MPEG-TS or MPEG-PS file starts wherever
 * its muxer's clock stood (1.4 s in the files ffmpeg writes, anywhere in a recording of a broadcast), and players show
 * it from 0.
 */
const CLOCK_DEMUXERS = new Set(['mpegts', 'mpeg'])

/**
 * The sampling grid on the file's timeline, the one players show and seek on: instants at whole multiples of 1 / fps
 * of it, `first` (a number of intervals) being the last at or before the file's start, and `offset` seconds
 * (under one interval) before that start. ffmpeg counts the timestamps it gives from the file's start: without this a
 * file whose streams all start at 5 s (its first frame shown at 5 s by a browser) had its frames reported at 0, 1,
 * 2 s, and one whose first frame is at 0.2 s (B-frames in a fragmented MP4 without an edit list) each 0.2 s early.
 * From 0 for a file that starts before 0 (audio's priming samples: players show it from 0), for an MPEG-TS or PS
 * (CLOCK_DEMUXERS), and for covers alone (one picture each, no timeline).
 */
function samplingGrid(start: number | undefined, format: string | undefined, fps: number): {first: number; offset: number} {
  const from = format !== undefined && CLOCK_DEMUXERS.has(format) ? 0 : Math.max(0, start ?? 0)
  // A hair of float error: a start of 5.000000 at 10 fps is instant 50, not 49.
  const first = Math.floor(from * fps + 1e-6)
  return {first, offset: Math.max(0, from - first / fps)}
}

const SOUND_ONLY = 'the file is sound only: it has no picture to score (no video stream, no cover art)'

/** At most this many video streams are decoded side by side (an ffmpeg each); a file of more is refused. */
export const MAX_VIDEO_STREAMS = 4

/**
 * The streams to decode: every video stream, those with a timeline first, then the covers. None listed (ffmpeg
 * could not describe the file): the first video stream, whose listing then says what is wrong.
 */
function streamsToDecode(streams: VideoStream[]): (VideoStream | undefined)[] {
  if (streams.length === 0) return [undefined]
  if (streams.length > MAX_VIDEO_STREAMS) {
    throw new ModError('unsupported_media', `the file has ${streams.length} video streams; at most ${MAX_VIDEO_STREAMS} are analysed`)
  }
  return [...streams.filter((s) => !s.cover), ...streams.filter((s) => s.cover)]
}

/** A stream being decoded: its ffmpeg, and the frames read from it not yet handed over. */
interface StreamDecoding {
  decoder: Decoder
  /** How the decoder stacks each sampled picture (stackedParts). */
  layout: StackLayout
  chunks: AsyncIterator<Buffer>
  parser: PpmParser
  queue: RgbImage[]
  frames: number
  ended: boolean
  /** How messages name the stream (streamName). */
  named: string
}

/**
 * The views to score of the stream's next sampled picture (frameViews), or none once it has no more (or ffmpeg was
 * killed by the clock or an abort).
 */
async function nextViews(d: StreamDecoding, clock: WaitClock, signal: AbortSignal | undefined): Promise<FrameView[]> {
  const parts = partCount(d.layout)
  while (d.queue.length < parts && !d.ended) {
    let next: IteratorResult<Buffer>
    try {
      next = await clock.wait(d.chunks.next())
    } catch (e) {
      // Killing ffmpeg (stall, abort, too long) destroys stdout, which ends the iteration with an error.
      if (!clock.stalled() && !clock.overTime() && !signal?.aborted) throw e
      d.ended = true
      break
    }
    if (next.done) d.ended = true
    else d.queue.push(...d.parser.push(next.value))
  }
  // A picture's parts come in the one push that completes it.
  if (d.queue.length < parts) return []
  d.frames++
  return frameViews(d.queue.splice(0, parts), d.layout)
}

/**
 * Samples `fps` frames per second of every video stream of the file at `path` through ffmpeg (one process a
 * stream, read side by side), as RGB frames handed over a pipe (no files written): for every sampling instant
 * inside the video (on the file's own timeline: samplingGrid), the frame each stream shows then (a video shorter
 * than 1 / `fps` seconds gives one instant),
 * and each attached picture (cover art) once, at the first instant. A frame with transparency is given as a light
 * page shows it and as a dark one does (two frames, the second `onBlack`), as images are scored; an interlaced
 * frame's fields follow it when they are other pictures (`field`); after an instant's frame comes the frame most
 * like its interval when that is another picture (`interval`: frame-views.ts). The
 * streams are read only as fast as the caller consumes them, and limits are enforced on what is decoded, never on the container's metadata. Leaving
 * the loop early, an error or `signal` aborting kills ffmpeg; the generator ends only once the processes are gone.
 *
 * Before decoding, the packets are listed (scanPackets): what decoding will cost is bounded by the limits
 * before it starts, and the time ffmpeg takes altogether by `decodeTimePerSecond`.
 *
 * Errors: `unsupported_media` for an empty file (before ffmpeg starts); `ffmpeg_missing` (the binary cannot be run); `video_too_long` (packets
 * covering more than `maxSeconds`, more than `maxSeconds` × `maxSourceFps` of them, or more than `maxFrames` instants, a frame at or past
 * `maxSeconds`, more than `maxFrames` instants decoded, or ffmpeg outlasting its time); `payload_too_large` (a picture over `maxPixels`); `unsupported_media`
 * (not a video ffmpeg can read, sound only, no video stream, more than MAX_VIDEO_STREAMS of them, a stream without
 * a packet listed or a frame decoded, each before any frame is given, ffmpeg failing, or no progress for `stallTimeoutMs`, whether or not frames were decoded before); the
 * signal's reason when aborted.
 */
export async function* decodeFrames(path: string, o: DecodeOptions): AsyncGenerator<DecodedFrame, DecodeSummary> {
  o.signal?.throwIfAborted()
  if ((await stat(path)).size === 0) throw emptyFileError()
  const budgetMs = o.maxSeconds * o.decodeTimePerSecond * 1000
  const scanStarted = performance.now()
  const listing = {ffmpeg: o.ffmpeg, maxSeconds: o.maxSeconds, maxPackets: o.maxSeconds * o.maxSourceFps, maxPixels: o.maxPixels, stallTimeoutMs: o.stallTimeoutMs, timeoutMs: budgetMs, signal: o.signal}
  // One run describes the file and lists its packets; what the description says is checked before the listing's errors.
  const survey = await surveyPackets(path, listing)
  // A stream left out of the description would go unscored.
  if (survey.descriptionCut) throw new ModError('unsupported_media', 'the file describes its streams at a length mod does not read (over 1 MiB of stream lines): remove its metadata (ffmpeg -map_metadata -1) and try again')
  const probe = readDescription(survey.description, o.onDuration)
  // What a player shows of a song is its cover: without one there is nothing to score (ffmpeg's own word was "matches
  // no streams", or for an MP3 or FLAC file "not a video").
  if (probe.streams.length === 0 && probe.audio) throw new ModError('unsupported_media', SOUND_ONLY)
  const streams = streamsToDecode(probe.streams)
  // A file whose only pictures are covers (an audio file with its artwork) has no timeline to bound: each cover is
  // decoded as one picture. The listing, which leaves covers out, found no video stream in it.
  const coversOnly = streams.every((stream) => stream?.cover === true)
  let scan: PacketScan = {end: undefined, packets: 0}
  if (!coversOnly) {
    if (survey.scan instanceof ModError) throw survey.scan
    // A demuxer with options of its own (MPEG-TS: a program whose video changes PID) lists the packets with them.
    scan = survey.scan ?? (await scanPackets(path, {...listing, format: probe.format}))
  }
  const {first, offset} = coversOnly ? {first: 0, offset: 0} : samplingGrid(probe.start, probe.format, o.fps)
  // The instants are laid from the file's start, a video stream that starts late (after its audio) giving its first
  // frame to those before it: the video lasts until its packets' end (counted from the file's start), whatever their
  // span. A 2 s stream behind 700 s of audio was scored on 600 instants before being refused.
  if (scan.end !== undefined && scan.end > o.maxSeconds) throw videoTooLong(o.maxSeconds)
  // The packets tell how many instants the video has: more than maxFrames is refused before decoding any (the check
  // on each instant decoded stays, for packets without timestamps).
  if (scan.end !== undefined && instantsBefore(scan.end + offset, o.fps) > o.maxFrames) throw tooManyFrames(o)
  // The frames a second the packets show, per stream (a cover's one packet aside): what the file really has.
  const withTimeline = streams.filter((stream): stream is VideoStream => stream !== undefined && !stream.cover)
  const timelines = Math.max(1, withTimeline.length)
  // A stream the listing found that the description left out would go unscored: a metadata key can go on with text
  // tagged as ffmpeg tags its lines (an MP4's own keys, `-movflags use_metadata_tags`), which ends the description
  // or adds stream lines to it. Each stream the listing read must be one described (by number, where the run that
  // described the file listed its packets too), and there must be no more of them. (Without a description at all, as
  // from an ffmpeg that gives none, the first video stream is decoded as before.)
  const described = new Set(withTimeline.map((stream) => stream.index))
  const unnamed = survey.listed.filter((index) => !described.has(index))
  if (probe.format !== undefined && ((scan.streams?.length ?? 0) > withTimeline.length || unnamed.length > 0)) {
    throw new ModError('unsupported_media', `the file has video streams that ffmpeg's description of it does not name (its metadata reads as lines of ffmpeg's own): remove its metadata (ffmpeg -map_metadata -1) and try again`)
  }
  // The listing gives the streams with a timeline in the file's order, as the description does.
  if (scan.streams !== undefined && scan.streams.length === withTimeline.length) {
    const empty = withTimeline.findIndex((_, i) => scan.streams?.[i] === 0)
    if (empty >= 0) throw emptyStream(withTimeline[empty], timelines, streams.length > 1)
  }
  const packetRate = scan.end !== undefined && scan.end > 0 ? scan.packets / timelines / scan.end : undefined
  const decodings: StreamDecoding[] = streams.map((stream) => {
    const decoder = startDecoder(path, o, stream, {format: probe.format, packetRate, offset})
    const layout = stackedParts(stream)
    const parser = createPpmParser(o.maxFrameSide, partCount(layout))
    return {decoder, layout, chunks: decoder.stdout[Symbol.asyncIterator]() as AsyncIterator<Buffer>, parser, queue: [], frames: 0, ended: false, named: streamName(stream, timelines)}
  })
  const killAll = (): void => decodings.forEach((d) => d.decoder.kill())
  const clock = createWaitClock(budgetMs, performance.now() - scanStarted, o.stallTimeoutMs, killAll)
  for (const d of decodings) d.decoder.progress.on('data', clock.progressed)
  o.signal?.addEventListener('abort', killAll, {once: true})

  let index = 0
  try {
    for (;;) {
      const images: (FrameView & {stream: number})[] = []
      for (const [stream, d] of decodings.entries()) {
        const views = await nextViews(d, clock, o.signal)
        // A stream whose ffmpeg ended without a frame is refused at once, before the others are scored.
        if (views.length === 0 && d.frames === 0) {
          const code = await clock.wait(d.decoder.exited)
          o.signal?.throwIfAborted()
          await checkEnding(code, 0, d.decoder, clock, path, o, budgetMs, d.named)
        }
        for (const view of views) images.push({...view, stream})
      }
      if (images.length === 0) break
      checkFrameLimits(index, offset, o)
      for (const [i, {image, stream, interval, field}] of images.entries()) {
        o.signal?.throwIfAborted()
        yield {index: first + index, time: (first + index) / o.fps, image, stream, last: i === images.length - 1, ...(interval ? {interval} : {}), ...(field ? {field} : {})}
      }
      index++
    }
    for (const d of decodings) {
      const code = await clock.wait(d.decoder.exited)
      o.signal?.throwIfAborted()
      await checkEnding(code, d.frames, d.decoder, clock, path, o, budgetMs, d.named)
    }
    // From the grid's first instant: the frames sampled, and the packets' end.
    const span = index / o.fps
    const end = scan.end === undefined ? undefined : scan.end + offset
    const length = end === undefined ? span : Math.min(span, Math.max(end, (index - 1) / o.fps))
    return {frames: index, duration: first / o.fps + length}
  } finally {
    clock.stop()
    o.signal?.removeEventListener('abort', killAll)
    await Promise.all(decodings.map((d) => d.decoder.close()))
  }
}
