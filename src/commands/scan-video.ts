import {Args, Errors, Flags} from '@oclif/core'

import {ModCommand} from '../cli/base-command.js'
import {EXIT_ERROR, EXIT_SAFE, EXIT_VIOLATION, SIGNAL_EXIT_CODES} from '../cli/errors.js'
import {engineFromFlags} from '../cli/engine.js'
import {fpsFlag, modelFlags, onlyFlag, policyFlags} from '../cli/flags.js'
import {wholeNumberFlag} from '../cli/value-flags.js'
import {coverage, formatVideo, notEvaluatedLine} from '../cli/format.js'
import {chosenFormat, formatFlags, type Output} from '../cli/output.js'
import {jsonValueReporter, ndjsonReporter, PLAIN_FORMATS, tableReporter, type Reporter} from '../cli/reports/reporter.js'
import type {EnvVars} from '../cli/help.js'
import {checkVideoFile, videoFailure} from '../cli/inputs.js'
import {refuseRemoteFlags, serverFlags} from '../cli/remote/flags.js'
import {coverageOf} from '../lib/signals/listing.js'
import type {Segment, VideoResult} from '../lib/types.js'
import {checkVideoSampling, MAX_FPS, MAX_MIN_FRAMES, MIN_FPS} from '../lib/video/options.js'

/** A segment as it is found: the label it violates and where. */
interface FoundSegment {
  name: string
  segment: Segment
}

/**
 * The formats of scan-video: the verdict and its segments as a table (`partial`: the run's coverage statement),
 * the result as JSON, or each segment as it is found then the result, one JSON object per line.
 */
function videoReporter(format: (typeof PLAIN_FORMATS)[number], partial: string): Reporter<FoundSegment, VideoResult> {
  if (format === 'table') return tableReporter(undefined, (r: VideoResult) => formatVideo(r, partial))
  if (format === 'json') return jsonValueReporter()
  return ndjsonReporter(({name, segment}: FoundSegment) => ({type: 'segment', name, ...segment}), (r: VideoResult) => r)
}

export default class ScanVideo extends ModCommand {
  static override description = `Moderate a video: frames sampled at --fps are scored, and each violated label is reported as timestamped segments.

Any format the ffmpeg in use decodes (at least MP4/MOV H.264, WebM VP8/VP9, MKV, animated GIF). ffmpeg is
MOD_FFMPEG, else the ffmpeg-static package's binary, else ffmpeg on PATH. Limits: MOD_MAX_VIDEO_SECONDS of
decoded video (default 600), 6000 sampled frames, frames scaled to at most 448 px on their shorter side and 1024 on the longer
(a video under 224 px on its shorter side enlarged to it; a stream whose picture size changes midway fitted into the
size of its first pictures; an MPEG-TS whose video moves to another PID decoded on).

Each instant k/fps is scored on the frame a player shows then (the first frame at 0 s), as displayed (rotation,
non-square pixels, transparency onto white); every video stream of the file is scored (a segment in any counts)
and cover art once, at 0 s. Times ("start", "end", "at", "duration") are on the file's own timeline, as players show
it: a file whose streams start at 5 s is sampled from 5 s (an MPEG-TS, whose clock starts anywhere, from 0).

An audio file's cover art (MP3, FLAC, M4A) is scored as one picture; a file of sound alone is refused
(unsupported_media: no picture to score), as is a video stream that gives no frame (declared but empty, or every
picture damaged), before any frame is scored.

--format (table, json, ndjson; --json and --ndjson are its aliases): ndjson prints one line per segment as it is found ({"type":"segment", "name", "start", "end", "frames",
"max_confidence"}), then the video result. Frames are matched against the policy's hash_lists too: a segment of
frames that matched lists the entries in "matches" (list, label, note, distance, and "at", the frame's time).`

  static override examples = [
    '<%= config.bin %> scan-video clip.mp4',
    '<%= config.bin %> scan-video clip.mp4 --fps 2 --min-frames 3 --json',
    '<%= config.bin %> scan-video upload.webm --stop-on-violation --ndjson',
    // oclif puts the prompt only before a line that starts with the command: this one has its own.
    '$ MOD_API_KEY=secret <%= config.bin %> scan-video long.mp4 --server https://mod.example.com --json',
  ]

  static override envVars: EnvVars = [
    ['MOD_FFMPEG', 'the ffmpeg binary to run'],
    ['MOD_TEXT_BUDGET', "recogniser columns the text rules' reader may spend per image, over the policy's text.budget (default 32768)"],
    ['MOD_MAX_VIDEO_SECONDS', 'longest video, counted while decoding (default 600)'],
  ]

  static override exitCodes: [string, string][] = [
    ['0', 'the video was scanned and is safe'],
    ['1', 'a violation was found'],
    ['2', 'usage, configuration or model error; no ffmpeg; a file that is not a video or cannot be decoded; a video over the limits; with --strict, a category that cannot be evaluated; stdout could not take the results (a full disk)'],
    ...SIGNAL_EXIT_CODES,
  ]

  static override args = {
    file: Args.string({description: 'the video file', required: true}),
  }

  static override flags = {
    fps: fpsFlag({description: `Frames sampled per second of video: ${MIN_FPS} to ${MAX_FPS}.`, default: 1}),
    'min-frames': wholeNumberFlag({description: `Consecutive frames a segment needs to count: 1 to ${MAX_MIN_FRAMES}.`, default: 1, min: 1, max: MAX_MIN_FRAMES}),
    'stop-on-violation': Flags.boolean({description: 'Stop decoding as soon as one segment of --min-frames frames exists.'}),
    ...formatFlags(PLAIN_FORMATS, 'table (default: the verdict, then a line per segment), json (the video result) or ndjson (each segment as it is found, then the result, one JSON object per line).'),
    only: onlyFlag,
    strict: Flags.boolean({
      description:
        'Exit 2 when a category of the policy cannot be evaluated (e.g. no CLIP model installed), so a gate never passes on a partial check; known once the models are loaded, so nothing is scanned.',
    }),
    ...policyFlags,
    ...modelFlags,
    ...serverFlags,
  }

  async run(): Promise<void> {
    const {args, flags} = await this.parse(ScanVideo)
    // ffmpeg seeks in a video, which a pipe cannot do; `scan -` and `hash -` read stdin, so a user tries it here too.
    if (args.file === '-') throw new Errors.CLIError('scan-video reads a video file, not stdin (-): save the video to a file first')
    if (flags.server === undefined) refuseRemoteFlags(this.argv, 'scan-video')
    const sampling = checkVideoSampling({
      fps: flags.fps,
      minFrames: flags['min-frames'],
      stopOnViolation: flags['stop-on-violation'],
    })
    await checkVideoFile(args.file)
    const {server} = flags
    const {engine, config} =
      server === undefined ? await engineFromFlags(flags, process.env, {only: flags.only}) : await (await import('../cli/remote/from-flags.js')).remoteFromFlags({...flags, server}, this.argv, (line) => this.logToStderr(line), this.interrupt.signal)
    this.notePolicy(config)
    let result
    let out: Output<FoundSegment, VideoResult>
    try {
      await engine.load()
      const covered = coverageOf(await engine.categoryStates())
      out = this.output(videoReporter(chosenFormat(flags), coverage(covered)))
      if (covered.not_evaluated.length > 0) {
        this.logToStderr(notEvaluatedLine(covered.not_evaluated, config.preset, server))
        // Known before the first frame: a gate fails at once rather than after decoding the whole video.
        if (flags.strict) this.exit(EXIT_ERROR)
      }
      const progress = this.startProgress(`Scanning ${args.file}`)
      const done = {frames: 0, seconds: 0, expected: undefined as number | undefined}
      // "frame 12 of ~60 (6.0 s)": the total is the container's stated duration x fps, an estimate.
      const line = (): string => `frame ${done.frames}${done.expected === undefined ? '' : ` of ~${done.expected}`} (${done.seconds.toFixed(1)} s)`
      try {
        result = await engine.moderateVideo(args.file, {
          source: args.file,
          ...sampling,
          signal: this.interrupt.signal,
          onSegment: (name, segment) => out.item({name, segment}),
          onProgress: (frames, seconds) => {
            Object.assign(done, {frames, seconds})
            // The count first: a long name is what a narrow terminal cuts.
            progress.update(`Scanning ${line()} of ${args.file}`)
          },
          // Only a terminal shows the estimate.
          onDuration: process.stderr.isTTY ? (seconds) => (done.expected = Math.max(1, Math.ceil(seconds * sampling.fps))) : undefined,
        })
      } catch (e) {
        progress.finish()
        this.sayStopped(`${line()} of ${args.file}`)
        throw await videoFailure(args.file, e)
      } finally {
        progress.finish()
      }
    } finally {
      await engine.close()
    }
    out.end(result)
    return this.exit(result.is_safe ? EXIT_SAFE : EXIT_VIOLATION)
  }
}
