import {realpath} from 'node:fs/promises'

import {Args, Errors} from '@oclif/core'
import chalk from 'chalk'

import {ModCommand} from '../cli/base-command.js'
import {EXIT_ERROR, SIGNAL_EXIT_CODES} from '../cli/errors.js'
import {fpsFlag} from '../cli/flags.js'
import type {EnvVars} from '../cli/help.js'
import {firstReach, isVideoFile, mediaFailure, scanInputs, skippedLine, stdinPathProblem, type Skipped} from '../cli/inputs.js'
import {chosenFormat, formatFlags} from '../cli/output.js'
import {visible} from '../cli/visible.js'
import {jsonArrayReporter, ndjsonReporter, PLAIN_FORMATS, tableReporter, type Reporters} from '../cli/reports/reporter.js'
import {readSettings, type Limits} from '../lib/config/settings.js'
import {decodedPixels, decodeImage, disableDecodeCache, probeImage, type ImageProbe} from '../lib/image/decode.js'
import {MAX_ANIMATION_FRAMES, MAX_PAGES} from '../lib/image/animation-frames.js'
import {isModError, ModError} from '../lib/errors.js'
import {hashFrames, hashVideo, type MediaHash} from '../lib/signals/pdq/hash-media.js'
import {DEFAULT_QUALITY_FLOOR} from '../lib/signals/pdq/match.js'
import type {RgbImage} from '../lib/types.js'
import {resolveFfmpeg} from '../lib/video/ffmpeg.js'
import {DEFAULT_DECODE_LIMITS} from '../lib/video/frames.js'
import {MAX_FPS, MIN_FPS} from '../lib/video/options.js'

/** Images read and decoded ahead of the one being hashed. */
const AHEAD = 2
/**
 * Pixels held ahead at most, a quarter of the pixel limit: photos are read ahead in pairs, but a large image is
 * decoded alone, so that a folder of large images holds no more than one does.
 */
const AHEAD_SHARE = 4
/**
 * Files read and probed ahead of those decoding (their encoded bytes, up to MOD_MAX_BYTES each): reading one takes
 * five trips through libuv's threads (open, stat, read, close, the header), behind the decodes that hold them, and
 * waiting on them left the decoded images unhashed; read ahead, the header is in when its turn comes.
 */
const READ_AHEAD = 2

/** One line of output: a hash of an input, or the error that input met. */
type Row = ({source: string} & MediaHash) | {source: string; error: {code: string; message: string}}

function errorRow(source: string, e: unknown): Row {
  if (!isModError(e)) throw e
  return {source, error: {code: e.code, message: e.message}}
}

/** A table row; the name and the message, which came from elsewhere, are made visible before the row is coloured. */
function tableLine(row: Row): string {
  if ('error' in row) return `${chalk.yellow('ERROR')}  ${visible(row.source)}  ${visible(`${row.error.code}: ${row.error.message}`)}`
  const where = row.time !== undefined ? ` @ ${row.time.toFixed(2)} s` : row.frame !== undefined ? ` frame ${row.frame}` : ''
  const unmatched = row.quality < DEFAULT_QUALITY_FLOOR ? chalk.dim(`  (quality under ${DEFAULT_QUALITY_FLOOR}: never matched)`) : ''
  return `${row.hash}  ${String(row.quality).padStart(3)}  ${visible(row.source)}${where}${unmatched}`
}

/** The formats of hash: a table row, a JSON array or a JSON line per hash (or per input that failed). */
const REPORTERS: Reporters<(typeof PLAIN_FORMATS)[number], Row, void> = {
  table: () => tableReporter(tableLine),
  json: () => jsonArrayReporter(),
  ndjson: () => ndjsonReporter((row: Row) => row),
}

/** What the hashing of one path needs: the limits, where rows go, and whether to stop. */
interface HashRun {
  limits: Limits
  print: (row: Row) => void
  stopped: () => boolean
  skipped: Skipped
  /** The real paths reached so far, shared by every path given: a file reached twice is hashed once, as scan does. */
  reached: Set<string>
}

/** One row per frame of a video sampled at `fps`, or the error that stopped it (none once stopped by a signal). */
async function hashVideoFile(path: string, run: HashRun, ffmpeg: string | undefined, fps: number, signal: AbortSignal): Promise<void> {
  try {
    const {limits} = run
    const decode = {...DEFAULT_DECODE_LIMITS, ffmpeg: await resolveFfmpeg(ffmpeg), fps, maxSeconds: limits.maxVideoSeconds, maxPixels: limits.maxPixels, signal}
    for await (const h of hashVideo(path, decode)) {
      if (run.stopped()) break
      run.print({source: path, ...h})
    }
  } catch (e) {
    if (!signal.aborted) run.print(errorRow(path, await mediaFailure(path, e)))
  }
}

/**
 * The images of a path (a file, a folder, stdin), hashed in input order. The next images are read and decoded (in
 * libuv's threads) while this one is hashed (on this one), so that both cores work; each step of a read or a decode
 * needs this thread for a moment, so one image of lookahead is not enough to keep the decoder busy. At most AHEAD +
 * 1 decoded images are held, and of more than one only while their pixels (from their headers) stay within
 * maxPixels / AHEAD_SHARE; READ_AHEAD more files are read and their headers probed before their decode starts.
 */
async function hashImages(path: string, run: HashRun): Promise<void> {
  const {limits, print, stopped} = run
  const queue: {source: string; frames?: Promise<RgbImage[]>; entry?: Row; pixels: number}[] = []
  const reading: {source: string; bytes: Promise<Buffer>; probe: Promise<ImageProbe>}[] = []
  const held = (): number => queue.reduce((sum, q) => sum + q.pixels, 0)
  const finish = async (): Promise<void> => {
    const {source, frames, entry} = queue.shift() as (typeof queue)[number]
    if (entry) return print(entry)
    try {
      for (const h of hashFrames(await (frames as Promise<RgbImage[]>))) print({source, ...h})
    } catch (e) {
      print(errorRow(source, e))
    }
  }
  const decodeNext = async (): Promise<void> => {
    const {source, bytes, probe} = reading.shift() as (typeof reading)[number]
    // The header is read once: its size decides the lookahead, then the decode takes it.
    const pixels = await probe.then((p) => decodedPixels(p, limits), () => 0)
    while (queue.length > 0 && (queue.length >= AHEAD + 1 || held() + pixels > limits.maxPixels / AHEAD_SHARE)) await finish()
    // A header that cannot be read: the decode reports why (empty, too large, not an image), as it always has.
    const frames = bytes.then((b) => probe.then((p) => decodeImage(b, limits, p), () => decodeImage(b, limits)))
    // Handled when its turn comes; until then a failure must not count as unhandled.
    frames.catch(() => {})
    queue.push({source, frames, pixels})
  }
  for await (const item of scanInputs([path], limits.maxBytes, run.skipped, process.stdin, {reached: run.reached})) {
    if (stopped()) break
    if ('entry' in item) {
      while (reading.length > 0) await decodeNext()
      queue.push({source: item.entry.source, entry: item.entry, pixels: 0})
      continue
    }
    const bytes = item.input.read()
    const probe = bytes.then(probeImage)
    // Both are awaited by decodeNext; a failure read ahead must not count as unhandled meanwhile.
    probe.catch(() => {})
    reading.push({source: item.input.source, bytes, probe})
    if (reading.length > READ_AHEAD) await decodeNext()
  }
  while (reading.length > 0 && !stopped()) await decodeNext()
  while (queue.length > 0 && !stopped()) await finish()
}

export default class Hash extends ModCommand {
  static override description = `Print the PDQ perceptual hash and its quality (0-100) of images and video frames, to build or check hash lists.

Files, folders (recursively, images recognised by their first bytes) or - for one image on stdin; an animated GIF or WebP gives one hash per frame mod scan scores (up to ${MAX_ANIMATION_FRAMES}), a multi-page TIFF one per page (up to ${MAX_PAGES}). A file named on the command line that is not an image is read as a video: one hash per frame sampled at --fps; an image of a format that is not accepted (SVG) is an error saying so. The table prints hash, quality and source; a hash whose quality is under 50 is not matched against lists. An image is hashed as displayed, EXIF orientation applied (a malformed tag as Chromium reads it), one with transparency as a light page shows it (scans also match its dark view, and a turned photo's stored pixels, which lists made with Meta's tools hash).`

  static override examples = [
    '<%= config.bin %> hash photo.jpg',
    '<%= config.bin %> hash ./removed --ndjson > removed.ndjson',
    '<%= config.bin %> hash clip.mp4 --fps 1 --format json',
  ]

  static override envVars: EnvVars = [
    ['MOD_MAX_BYTES', 'largest image file (default 25 MiB)'],
    ['MOD_MAX_PIXELS', 'largest decoded image, width x height (default 100000000)'],
    ['MOD_FFMPEG', 'the ffmpeg binary to run for videos'],
    ['MOD_MAX_VIDEO_SECONDS', 'longest video, counted while decoding (default 600)'],
  ]

  static override exitCodes: [string, string][] = [
    ['0', 'every input was hashed'],
    ['2', 'usage or configuration error; an input that could not be hashed; nothing to hash; stdout could not be written (a full disk)'],
    ...SIGNAL_EXIT_CODES,
  ]

  static override strict = false

  static override args = {
    paths: Args.string({description: 'files, folders, videos or - (stdin)', required: true}),
  }

  static override flags = {
    ...formatFlags(PLAIN_FORMATS, 'table (default: hash, quality, source), json (one array of hashes) or ndjson (one object per hash, per line, as each is computed).'),
    fps: fpsFlag({description: `Video frames hashed per second of video: ${MIN_FPS} to ${MAX_FPS}.`, default: 1}),
  }

  async run(): Promise<void> {
    const {argv, flags} = await this.parse(Hash)
    const paths = argv as string[]
    const stdinProblem = stdinPathProblem('hash', paths, process.stdin)
    if (stdinProblem) throw new Errors.CLIError(stdinProblem)
    const {limits, ffmpeg} = readSettings({}, process.env).engine
    disableDecodeCache()
    const counts = {rows: 0, errors: 0}
    const progress = this.startProgress('Hashing')
    // `| head -1`: once the reader is gone, hashing stops instead of working for nobody.
    const out = this.output(REPORTERS[chosenFormat(flags)]())
    const {signal} = this.interrupt
    const run: HashRun = {
      limits,
      skipped: new Map(),
      reached: new Set(),
      stopped: () => out.closed || signal.aborted,
      print(row) {
        counts.rows++
        if ('error' in row) counts.errors++
        out.item(row)
      },
    }
    try {
      for (const path of paths) {
        if (run.stopped()) break
        if (await isVideoFile(path)) {
          // A video named twice (or by two names) is hashed once, as images are.
          if (firstReach(run.reached, await realpath(path).catch(() => path))) await hashVideoFile(path, run, ffmpeg, flags.fps, signal)
        }
        else await this.untilStopped(hashImages(path, run))
      }
    } finally {
      progress.finish()
      out.end()
      this.sayStopped(`${counts.rows} ${counts.rows === 1 ? 'hash' : 'hashes'}`)
    }
    if (run.stopped()) return
    const skips = skippedLine(run.skipped)
    if (skips) this.logToStderr(skips)
    if (counts.rows === 0) throw new ModError('not_found', `nothing to hash in ${paths.join(' ')}${skips ? `: ${skips}` : ': no images'}`)
    if (counts.errors > 0) this.exit(EXIT_ERROR)
  }
}
