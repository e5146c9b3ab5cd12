import type {Readable} from 'node:stream'

import {HDR_PEAK, KNEE, REFERENCE_WHITE} from '../image/cicp.js'
import {inputArgs} from './ffmpeg-input.js'
import {startFfmpeg} from './ffmpeg-process.js'
import type {HdrColour, VideoStream} from './streams.js'

/** What a decoder process needs to know. */
export interface DecoderOptions {
  ffmpeg: string
  fps: number
  frameShortSide: number
  maxFrameSide: number
  maxPixels: number
}

/**
 * The sides of a picture of `width` x `height` pixels of the sample aspect ratio `sar` (a pixel's width over its
 * height) as displayed, every stored pixel kept: the side its pixels are long along is stretched, never the other
 * shrunk. Pixels a third as wide as high (960x240) show as 960x720, not 320x240, which drops two columns in three
 * that a player on a large enough screen shows (a nude stored 336x250 with pixels half as wide, shown 336x500, scored
 * 0.52 from 168 of its columns and 0.97 from all of them).
 */
function shownSides(width: number, height: number, sar: number): [number, number] {
  return [width * Math.max(sar, 1), height * Math.max(1 / sar, 1)]
}

/**
 * Scales each frame to its displayed shape (shownSides, as players show non-square pixels; ffmpeg has already
 * applied the rotation), then down (never up) so that its shorter side is at most `short` and its longer side at
 * most `long`; `flags`: libswscale's, for a cheaper scaling. `rows`: the frame's displayed height, `2*ih` for a
 * field (half the frame's rows), which then gets the frame's own size.
 */
function displayScale(short: number, long: number, flags = '', rows = 'ih'): string {
  // ffmpeg's scale gives `sar` 1 when the frame has none.
  const [wide, tall] = ['iw*max(sar,1)', `${rows}*max(1/sar,1)`]
  const fit = `min(1,min(${short}/min(${wide},${tall}),${long}/max(${wide},${tall})))`
  return `scale=w='max(1,round(${wide}*${fit}))':h='max(1,round(${tall}*${fit}))'${flags === '' ? '' : `:flags=${flags}`}`
}

/**
 * A frame with alpha as a light page shows it and as a dark one does, each scaled, stacked one above the other in
 * one picture (the PPM reader parts them): onto white, white minus (white minus colour) times alpha, which is colour
 * times alpha plus white times (1 - alpha); onto black, colour times alpha. A picture drawn in white pixels whose
 * alpha carries it is blank on white and shows on a dark page, as images with transparency are scored. Only for
 * streams that may be transparent: it costs two conversions and scalings per sampled frame. `tag` keeps its pads'
 * names apart from another copy's in the same graph.
 */
function overPages(scale: string, tag: string): string {
  const [light, dark, white, black] = ['light', 'dark', 'onwhite', 'onblack'].map((name) => `[${tag}${name}]`)
  return `format=gbrap,split=2${light}${dark};${light}negate,premultiply=inplace=1,negate,${scale}${white};${dark}premultiply=inplace=1,${scale}${black};${white}${black}vstack`
}

/**
 * The rate, in frames a second, at which the stream is resampled for ffmpeg's `thumbnail` filter (intervalFrames):
 * every frame of a stream of up to 60 frames a second counts, whatever rate the file declares (a declared rate can be
 * patched low while the frames keep theirs).
 */
const CHOOSING_RATE = 60

/** The most frames of each sampling interval that `thumbnail` compares (intervalFrames). */
const MAX_INTERVAL_FRAMES = 60

/**
 * How many frames of each interval of 1 / `fps` seconds ffmpeg's `thumbnail` filter looks at to find the one most
 * like the interval as a whole (its colours nearest the interval's average): the stream resampled to a constant rate
 * of CHOOSING_RATE, or twice its declared rate when that is higher (so that the groups keep to the sampling grid, and
 * each frame counts about as long as it is on screen), at least 2 and at most MAX_INTERVAL_FRAMES an interval. The
 * frame at each instant alone can be chosen by an uploader who knows the grid: an ordinary frame put on every whole
 * second hid a clip of flagged pictures.
 */
function intervalFrames(streamFps: number | undefined, fps: number): number {
  const rate = Math.max(CHOOSING_RATE, 2 * (streamFps ?? 0))
  return Math.max(2, Math.min(MAX_INTERVAL_FRAMES, Math.ceil(rate / fps - 1e-9)))
}

/** The most source frames one frame looked at blends (blendedFrames): tmix adds them all up for every frame. */
const MAX_BLENDED = 16

/**
 * How many consecutive source frames each of the `n` frames of an interval that `thumbnail` looks at stands for: 1,
 * or, where the source has more frames an interval than that (above 60 a second at fps 1, or below fps 1), their mean
 * (ffmpeg's tmix), at most MAX_BLENDED, so that the frames between are seen blended rather than dropped by the
 * resampling. A 240 fps clip with an ordinary frame every 4th and flagged ones between scored safe: the resampling to
 * 60 kept the ordinary ones. `sourceFps`: the higher of the declared rate and the one the packets show (a declared
 * rate can be patched low).
 */
function blendedFrames(sourceFps: number | undefined, fps: number, n: number): number {
  return sourceFps === undefined ? 1 : Math.max(1, Math.min(MAX_BLENDED, Math.ceil(sourceFps / (fps * n) - 1e-9)))
}

/**
 * What the runs before decoding learnt of the file: the demuxer ffmpeg chose, the frame rate its packets show, and
 * `offset`, the seconds (under one interval) by which the sampling grid's first instant lies before the file's start
 * on the file's timeline (frames.ts, samplingGrid): the frames are shifted by it, so that the grid falls on whole
 * multiples of 1 / fps of that timeline.
 */
export interface FileFacts {
  format?: string
  packetRate?: number
  offset?: number
}

/**
 * What each PPM frame of the decoder stacks: the instant's views (1, or 2 with transparency), its two fields when
 * `fields`, then the interval's views alike.
 */
export interface StackLayout {
  views: 1 | 2
  interval: boolean
  fields: boolean
}

/**
 * How the decoder stacks each PPM frame of `stream`: [instant (light, dark?), fields (top, bottom)?] then [interval
 * (light, dark?)]. A stream the description did not list (undefined: ffmpeg could not describe the file) is sampled
 * at its instants only.
 */
export function stackedParts(stream: VideoStream | undefined): StackLayout {
  return {views: stream?.alpha ? 2 : 1, interval: stream !== undefined && !stream.cover, fields: separatesFields(stream)}
}

/** How many pictures of one size a stacked frame so laid out holds (stackedParts). */
export function partCount(layout: StackLayout): number {
  return layout.views + (layout.fields ? 2 : 0) + (layout.interval ? layout.views : 0)
}

/**
 * Whether the instant's frame of `stream` is also given as its two fields: an interlaced stream weaves two pictures
 * into each frame, rows about, and a player shows them one after the other, so that a picture in one field and
 * another in the other are each seen, while the woven frame scaled down is a blend of both (a flagged picture
 * woven with an ordinary one scored safe). Only where the rows reach the filters as the file has them: an opaque
 * stream (transparency has two views of its own), not turned (ffmpeg turns frames before the filters, and the
 * fields would then be columns), of the size described, with a number of rows the two fields share evenly in 4:2:0,
 * and not enlarged to its canvas (canvasOf: enlarging would blend the rows).
 */
function separatesFields(stream: VideoStream | undefined): boolean {
  if (!stream?.interlaced || stream.alpha || stream.cover || stream.turned) return false
  const {width, height, sar = 1} = stream
  return width !== undefined && height !== undefined && height % 4 === 0 && Math.min(...shownSides(width, height, sar)) >= CANVAS_SHORT
}

/**
 * An instant's frame and its two fields (separatesFields), stacked: the frame scaled by `scale`, then its even rows
 * (the top field) and its odd rows (the bottom field), each scaled by `fieldScale` to the frame's size, stretched
 * back to its height as a player shows a field. `tag` keeps the pads' names apart.
 */
function withFields(scale: string, fieldScale: string, tag: string): string {
  const [frame, top, bottom] = ['frame', 'top', 'bottom'].map((name) => `[${tag}${name}]`)
  const [frameView, topView, bottomView] = ['frameview', 'topview', 'bottomview'].map((name) => `[${tag}${name}]`)
  // il=l=d:c=d moves the even rows (luma and chroma) to the top half and the odd ones to the bottom half.
  return (
    `split=3${frame}${top}${bottom};${frame}${scale}${frameView};` +
    `${top}il=l=d:c=d,crop=iw:ih/2:0:0,${fieldScale}${topView};${bottom}il=l=d:c=d,crop=iw:ih/2:0:ih/2,${fieldScale}${bottomView};` +
    `${frameView}${topView}${bottomView}vstack=inputs=3`
  )
}

/**
 * The shorter side, as displayed, below which a stream's canvas (canvasOf) is enlarged: what CLIP and the NSFW
 * specialist's first model read.
 */
const CANVAS_SHORT = 224

/**
 * The size every decoded frame of a stream is fitted into before sampling (aspect kept, the rest padded black): the
 * size its description gives, enlarged when it shows smaller than CANVAS_SHORT (or `short`) on its shorter side (and
 * within `long` on its longer side), so that a tiny first picture cannot shrink the pictures that follow it. ffmpeg
 * rebuilds its filter graph when the picture size changes mid-stream (a new sequence header: MPEG-TS and Matroska
 * files may switch), and the frames its filters held then, up to an interval of pictures waiting to be stacked, were
 * dropped: a flagged part just before a switch was never scored. With the graph kept (`-reinit_filter 0`, ffmpegArgs)
 * and every frame of one size, none is; a frame of the size described (even, and not enlarged) passes unchanged.
 */
function canvasOf(stream: VideoStream, short: number, long: number): {width: number; height: number} | undefined {
  const {width, height, sar = 1} = stream
  if (width === undefined || height === undefined) return undefined
  const [shown, tall] = shownSides(width, height, sar)
  const enlarge = Math.max(1, Math.min(Math.min(CANVAS_SHORT, short) / Math.min(shown, tall), long / Math.max(shown, tall)))
  return {width: evenAtLeast(width * enlarge), height: evenAtLeast(height * enlarge)}
}

/** The even number at or above `x` (rounded): ffmpeg's pad keeps 4:2:0 chroma whole by rounding an odd side down, below the picture. */
const evenAtLeast = (x: number): number => 2 * Math.ceil(Math.round(x) / 2)

/** Fits every frame into `canvas` (canvasOf): scaled (aspect kept) only when its size differs, then padded. */
function fitted({width, height}: {width: number; height: number}): string {
  return `scale=w=${width}:h=${height}:force_original_aspect_ratio=decrease,pad=${width}:${height}:(ow-iw)/2:(oh-ih)/2`
}

/**
 * The YCbCr matrices libswscale converts from, by ffmpeg's names; others are taken as BT.2020's, the matrix of HDR
 * video.
 */
const SWSCALE_MATRICES = new Set(['bt709', 'bt2020nc', 'smpte170m', 'bt470bg', 'fcc', 'smpte240m'])
/** The primaries zscale (zimg) converts from, by ffmpeg's names; others are taken as BT.2020's. */
const ZSCALE_PRIMARIES = new Set(['bt709', 'bt2020', 'smpte170m', 'bt470bg', 'smpte431', 'smpte432'])

/**
 * HDR pictures (PQ or HLG) as an SDR screen shows them: to RGB (libswscale), to linear light in BT.709 primaries with
 * reference white at 1 (zscale, zimg), the light above 80% of white compressed towards white (tonemap, Möbius; below
 * it, SDR's picture as BT.2408 places it in HDR is kept as it is), then sRGB. Read as SDR, a PQ frame is a washed-out
 * grey and an HLG one pale (BT.2020 colours read as BT.709): swimwear photos made PQ clips were flagged 38 times in 54
 * against 50 as SDR clips. After the views are scaled, so that it costs a few small pictures a sample. zimg reads no
 * subsampled chroma of an odd width or height, which scaled views have: it is given RGB. `rgb`: the frames are RGB
 * already (overPages).
 */
function toSdr(hdr: HdrColour, rgb: boolean): string {
  const matrix = SWSCALE_MATRICES.has(hdr.matrix) ? hdr.matrix : 'bt2020nc'
  // The frames' own matrix and range, for the conversion to RGB that ffmpeg inserts (a scale filter of its own here
  // crashed ffmpeg 5.1 on frames of an odd width).
  const toRgb = rgb ? '' : `setparams=range=${hdr.fullRange ? 'pc' : 'tv'}:colorspace=${matrix},`
  const primaries = ZSCALE_PRIMARIES.has(hdr.primaries) ? hdr.primaries : 'bt2020'
  // Every side of each conversion is named: frames stacked by vstack do not carry their colour properties.
  return (
    `${toRgb}format=gbrp16le,zscale=tin=${hdr.transfer}:min=gbr:pin=${primaries}:rin=full:t=linear:m=gbr:p=bt709:r=full:npl=${REFERENCE_WHITE},format=gbrpf32le,` +
    `tonemap=tonemap=mobius:param=${KNEE}:peak=${(HDR_PEAK / REFERENCE_WHITE).toFixed(3)}:desat=0,` +
    'zscale=tin=linear:min=gbr:pin=bt709:rin=full:t=iec61966-2-1:m=gbr:p=bt709:r=full,format=gbrp'
  )
}

/**
 * The filter graph of a stream's sampled frames (sampledViews), converted to SDR where the stream is HDR (toSdr).
 */
function sampledFrames(o: DecoderOptions, stream: VideoStream | undefined, canvas: {width: number; height: number} | undefined, packetRate?: number): string {
  const views = sampledViews(o, stream, canvas, packetRate)
  return stream?.hdr === undefined ? views : `${views},${toSdr(stream.hdr, stream.alpha)}`
}

/**
 * The filter graph of a stream's sampled frames: each decoded frame fitted to the stream's canvas (canvasOf); at
 * each instant k / fps the frame on screen then (see ffmpegArgs), its views (overPages) scaled; and, stacked below
 * it, the frame most like its interval [k / fps, (k + 1) / fps), chosen among intervalFrames of them scaled cheaply,
 * given the instant's timestamp.
 */
function sampledViews(o: DecoderOptions, stream: VideoStream | undefined, canvas: {width: number; height: number} | undefined, packetRate?: number): string {
  const {interval, fields} = stackedParts(stream)
  const scale = displayScale(o.frameShortSide, o.maxFrameSide)
  const view = (tag: string): string => (stream?.alpha ? overPages(scale, tag) : scale)
  if (stream?.cover) return view('c')
  // A field's rows are half the frame's, whose number is a multiple of 4 (separatesFields): twice them is the frame's
  // height exactly, so that each field is scaled to the frame's size and the parts stack and part evenly.
  const instant = fields ? withFields(scale, displayScale(o.frameShortSide, o.maxFrameSide, '', '2*ih'), 'f') : view('i')
  const sampling = `fps=${o.fps}:start_time=0:round=up:eof_action=pass,`
  const fit = canvas === undefined ? '' : `${fitted(canvas)},`
  if (!interval) return `${fit}${sampling}${instant}`
  const n = intervalFrames(stream?.fps, o.fps)
  const blend = blendedFrames(Math.max(stream?.fps ?? 0, packetRate ?? 0) || undefined, o.fps, n)
  const mean = blend > 1 ? `tmix=frames=${blend},` : ''
  const choose = `${displayScale(o.frameShortSide, o.maxFrameSide, 'fast_bilinear')},${mean}fps=${o.fps * n}:start_time=0:round=up:eof_action=pass,thumbnail=${n},setpts=N/(${o.fps}*TB),fps=${o.fps},`
  return `${fit}split=2[instant][every];[instant]${sampling}${instant}[atinstant];[every]${choose}${view('r')}[ofinterval];[atinstant][ofinterval]vstack`
}

/** libvpx's decoders, which read the alpha channel of VP8 and VP9 that ffmpeg's own decoders leave out. */
const ALPHA_DECODERS: Record<string, string> = {vp8: 'libvpx', vp9: 'libvpx-vp9'}

function ffmpegArgs(path: string, o: DecoderOptions, stream: VideoStream | undefined, {format, packetRate, offset = 0}: FileFacts): string[] {
  const map = stream === undefined ? '0:v:0' : `0:${stream.index}`
  const decoder = stream?.alpha ? ALPHA_DECODERS[stream.codec] : undefined
  const canvas = stream === undefined || stream.cover ? undefined : canvasOf(stream, o.frameShortSide, o.maxFrameSide)
  // With a canvas, a change of picture size keeps the filter graph and the frames it holds (canvasOf).
  const keepGraph = canvas === undefined ? [] : ['-reinit_filter', '0']
  return [
    ...inputArgs(path, o.maxPixels, format, [
      ...(decoder === undefined ? [] : [`-c:${stream?.index}`, decoder]),
      ...keepGraph,
      // ffmpeg counts timestamps from the file's start; the grid's first instant is `offset` before it.
      ...(offset > 0 ? ['-itsoffset', offset.toFixed(6)] : []),
    ]),
    // Output 1: sampled frames as PPM (each frame states its own size) on stdout. The fps filter fills instant k
    // with the last frame whose timestamp, rounded to its grid, is at most k: its default rounding (to the nearest)
    // gave instant k the frame shown at (k + 1/2) / fps, so a first frame shown for less than half an interval was
    // never seen; `round=up` makes it the frame on screen at k / fps. `start_time=0` starts the grid at its
    // first instant (the file's start, less `offset`), a stream that begins later (after the audio) giving its first
    // frame to the instants before it; `eof_action=pass` keeps a frame for every instant before the end (a video shorter than an interval gives
    // its first frame).
    // A cover is one picture, without a timeline to sample.
    '-map', map, ...(stream?.cover ? ['-frames:v', '1'] : []),
    '-vf', sampledFrames(o, stream, canvas, packetRate),
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
 * PPM on stdout, the packets' listing on fd 3. An attached picture (cover art) gives its one picture. `file`: what
 * the runs before learnt (the demuxer ffmpeg chose, whose options every run gives; the packets' frame rate).
 */
export function startDecoder(path: string, o: DecoderOptions, stream: VideoStream | undefined, file: FileFacts = {}): Decoder {
  const ffmpeg = startFfmpeg(o.ffmpeg, ffmpegArgs(path, o, stream, file), ['ignore', 'pipe', 'pipe', 'pipe'], 'exit')
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

