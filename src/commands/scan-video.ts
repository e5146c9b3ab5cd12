import {Args, Command, Errors, Flags} from '@oclif/core'

import {describeError, EXIT_ERROR, EXIT_SAFE, EXIT_VIOLATION} from '../cli/errors.js'
import {engineFromFlags} from '../cli/engine.js'
import {modelFlags} from '../cli/flags.js'
import {formatVideo} from '../cli/format.js'
import {startProgress} from '../cli/progress.js'
import {checkVideoSampling, MAX_FPS, MAX_MIN_FRAMES, MIN_FPS} from '../lib/video/options.js'

/** A decimal number flag (a usage error like oclif's integer flags); the bounds are checked by checkVideoSampling. */
const decimal = Flags.custom<number>({
  parse: async (input) => {
    const n = Number(input)
    if (input.trim() === '' || !Number.isFinite(n)) throw new Errors.CLIError(`Expected a number but received: ${input}`)
    return n
  },
})

export default class ScanVideo extends Command {
  static override description = `Moderate a video: frames sampled at --fps are scored, and each violated label is reported as timestamped segments.

Any format the ffmpeg in use decodes (at least MP4/MOV H.264, WebM VP8/VP9, MKV, animated GIF). ffmpeg is
MOD_FFMPEG, else the ffmpeg-static package's binary, else ffmpeg on PATH. Limits: MOD_MAX_VIDEO_SECONDS of
decoded video (default 600), 6000 sampled frames, frames scaled to at most 512 px a side.
Exit codes: 0 safe, 1 a violation was found, 2 usage, configuration, model or decoding error.
--ndjson prints one line per segment as it is found ({"type":"segment", "name", "start", "end", "frames",
"max_confidence"}), then the video result.`

  static override examples = [
    '<%= config.bin %> scan-video clip.mp4',
    '<%= config.bin %> scan-video clip.mp4 --fps 2 --min-frames 3 --json',
    '<%= config.bin %> scan-video upload.webm --stop-on-violation --ndjson',
  ]

  static override args = {
    file: Args.string({description: 'the video file', required: true}),
  }

  static override flags = {
    fps: decimal({description: `Frames sampled per second of video: ${MIN_FPS} to ${MAX_FPS}.`, default: 1}),
    'min-frames': Flags.integer({description: `Consecutive frames a segment needs to count: 1 to ${MAX_MIN_FRAMES}.`, default: 1}),
    'stop-on-violation': Flags.boolean({description: 'Stop decoding as soon as one segment of --min-frames frames exists.'}),
    json: Flags.boolean({description: 'Print the video result as JSON.', exclusive: ['ndjson']}),
    ndjson: Flags.boolean({description: 'Print each segment as it is found, then the result, one JSON object per line.', exclusive: ['json']}),
    ...modelFlags,
  }

  async run(): Promise<void> {
    const {args, flags} = await this.parse(ScanVideo)
    const progress = startProgress(`Scanning ${args.file}`)
    let result
    try {
      const sampling = checkVideoSampling({
        fps: flags.fps,
        minFrames: flags['min-frames'],
        stopOnViolation: flags['stop-on-violation'],
      })
      const {engine} = await engineFromFlags(flags)
      try {
        result = await engine.moderateVideo(args.file, {
          source: args.file,
          ...sampling,
          onSegment: flags.ndjson ? (name, segment) => this.log(JSON.stringify({type: 'segment', name, ...segment})) : undefined,
          onProgress: (frames, seconds) => progress.update(`Scanning ${args.file}: ${frames} frames, ${seconds.toFixed(1)} s`),
        })
      } finally {
        await engine.close()
      }
    } catch (e) {
      await progress.finish()
      this.logToStderr(describeError(e))
      return this.exit(EXIT_ERROR)
    }
    await progress.finish()
    if (flags.json || flags.ndjson) this.log(JSON.stringify(result))
    else this.log(formatVideo(result))
    if (!result.is_safe) this.exit(EXIT_VIOLATION)
    return this.exit(EXIT_SAFE)
  }
}
