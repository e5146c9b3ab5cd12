import type {Readable} from 'node:stream'

import {inputArgs} from './ffmpeg-input.js'
import {startFfmpeg} from './ffmpeg-process.js'
import type {VideoStream} from './streams.js'

/** What a decoder process needs to know. */
export interface DecoderOptions {
  ffmpeg: string
  fps: number
  frameShortSide: number
  maxFrameSide: number
  maxPixels: number
}

/**
 * Scales each frame to its displayed shape (width times the sample aspect ratio, as players show non-square
 * pixels; ffmpeg has already applied the rotation), then down (never up) so that its shorter side is at most
 * `short` and its longer side at most `long`.
 */
function displayScale(short: number, long: number): string {
  const fit = `min(1,min(${short}/min(iw*sar,ih),${long}/max(iw*sar,ih)))`
  return `scale=w='max(1,round(iw*sar*${fit}))':h='max(1,round(ih*${fit}))'`
}

/**
 * A frame with alpha as a light page shows it and as a dark one does, each scaled, stacked one above the other in
 * one picture (splitStacked parts them): onto white, white minus (white minus colour) times alpha, which is colour
 * times alpha plus white times (1 - alpha); onto black, colour times alpha. A picture drawn in white pixels whose
 * alpha carries it is blank on white and shows on a dark page, as images with transparency are scored. Only for
 * streams that may be transparent: it costs two conversions and scalings per sampled frame.
 */
function overPages(scale: string): string {
  return `format=gbrap,split=2[light][dark];[light]negate,premultiply=inplace=1,negate,${scale}[onwhite];[dark]premultiply=inplace=1,${scale}[onblack];[onwhite][onblack]vstack`
}

/** libvpx's decoders, which read the alpha channel of VP8 and VP9 that ffmpeg's own decoders leave out. */
const ALPHA_DECODERS: Record<string, string> = {vp8: 'libvpx', vp9: 'libvpx-vp9'}

function ffmpegArgs(path: string, o: DecoderOptions, stream: VideoStream | undefined): string[] {
  const map = stream === undefined ? '0:v:0' : `0:${stream.index}`
  const decoder = stream?.alpha ? ALPHA_DECODERS[stream.codec] : undefined
  const sampling = `fps=${o.fps}:start_time=0:round=up:eof_action=pass,`
  const scale = displayScale(o.frameShortSide, o.maxFrameSide)
  return [
    ...inputArgs(path, o.maxPixels, decoder === undefined ? [] : [`-c:${stream?.index}`, decoder]),
    // Output 1: sampled frames as PPM (each frame states its own size) on stdout. The fps filter fills instant k
    // with the last frame whose timestamp, rounded to its grid, is at most k: its default rounding (to the nearest)
    // gave instant k the frame shown at (k + 1/2) / fps, so a first frame shown for less than half an interval was
    // never seen; `round=up` makes it the frame on screen at k / fps. `start_time=0` starts the grid at the
    // video's start, a stream that begins later (after the audio) giving its first frame to the instants before
    // it; `eof_action=pass` keeps a frame for every instant before the end (a video shorter than an interval gives
    // its first frame).
    // A cover is one picture, without a timeline to sample.
    '-map', map, ...(stream?.cover ? ['-frames:v', '1'] : []),
    '-vf', `${stream?.cover ? '' : sampling}${stream?.alpha ? overPages(scale) : scale}`,
    '-pix_fmt', 'rgb24', '-f', 'image2pipe', '-vcodec', 'ppm', 'pipe:1',
    // Output 2: the packets' listing (no decoding) on fd 3, read only as a sign of progress while ffmpeg decodes
    // between two sampled frames (many seconds of video at a low fps).
    '-map', map, '-c', 'copy', '-f', 'framecrc', 'pipe:3',
  ]
}

/** The running ffmpeg process: its pipes, how it ended, and what its log said. */
export interface Decoder {
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

/**
 * Starts ffmpeg on one video stream of the file (`stream`; undefined: the first, `0:v:0`): its sampled frames as
 * PPM on stdout, the packets' listing on fd 3. An attached picture (cover art) gives its one picture.
 */
export function startDecoder(path: string, o: DecoderOptions, stream: VideoStream | undefined): Decoder {
  const ffmpeg = startFfmpeg(o.ffmpeg, ffmpegArgs(path, o, stream), ['ignore', 'pipe', 'pipe', 'pipe'], 'exit')
  const {child} = ffmpeg
  const stdout = child.stdout as Readable
  const stderr = child.stderr as Readable
  const progress = child.stdio[3] as Readable
  // Node resumes, and so drops the output of, a child's pipe that nothing listens to when the child exits: the
  // frames of a stream read later than its ffmpeg ended (a short second stream, a cover) would be lost.
  stdout.on('readable', () => {})
  const exited = ffmpeg.ended
  const kill = (): void => {
    ffmpeg.kill()
    stdout.destroy()
  }
  return {
    stdout,
    progress,
    exited,
    spawnFailed: ffmpeg.spawnFailed,
    log: ffmpeg.log,
    pixelLimit: ffmpeg.pixelLimit,
    kill,
    close: async () => {
      kill()
      stderr.destroy()
      progress.destroy()
      await exited
    },
  }
}

