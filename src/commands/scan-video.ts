import {Args, Flags} from '@oclif/core'

import {ModCommand} from '../cli/base-command.js'
import {EXIT_SAFE, EXIT_VIOLATION} from '../cli/errors.js'
import {engineFromFlags} from '../cli/engine.js'
import {modelFlags} from '../cli/flags.js'
import {formatVideo} from '../cli/format.js'
import type {EnvVars} from '../cli/help.js'
import {checkVideoFile} from '../cli/inputs.js'
import {parseVideoOptions} from '../lib/video/options.js'

export default class ScanVideo extends ModCommand {
  static override description = `Moderate a video: frames sampled at --fps are scored, and each violated label is reported as timestamped segments.

Any format the ffmpeg in use decodes (at least MP4/MOV H.264, WebM VP8/VP9, MKV, animated GIF). ffmpeg is
MOD_FFMPEG, else the ffmpeg-static package's binary, else ffmpeg on PATH. Limits: MOD_MAX_VIDEO_SECONDS of
decoded video (default 600), 6000 sampled frames, frames scaled to at most 512 px a side.
--ndjson prints one line per segment as it is found ({"type":"segment", "name", "start", "end", "frames",
"max_confidence"}), then the video result.`

  static override examples = [
    '<%= config.bin %> scan-video clip.mp4',
    '<%= config.bin %> scan-video clip.mp4 --fps 2 --min-frames 3 --json',
    '<%= config.bin %> scan-video upload.webm --stop-on-violation --ndjson',
  ]

  static override envVars: EnvVars = [
    ['MOD_FFMPEG', 'the ffmpeg binary to run'],
    ['MOD_MAX_VIDEO_SECONDS', 'longest video, counted while decoding (default 600)'],
  ]

  static override args = {
    file: Args.string({description: 'the video file', required: true}),
  }

  static override flags = {
    fps: Flags.string({description: 'Frames sampled per second of video: 0 < fps <= 10.', default: '1'}),
    'min-frames': Flags.string({description: 'Consecutive frames a segment needs to count: 1..1000.', default: '1'}),
    'stop-on-violation': Flags.boolean({description: 'Stop decoding as soon as one segment of --min-frames frames exists.'}),
    json: Flags.boolean({description: 'Print the video result as JSON.', exclusive: ['ndjson']}),
    ndjson: Flags.boolean({description: 'Print each segment as it is found, then the result, one JSON object per line.', exclusive: ['json']}),
    ...modelFlags,
  }

  async run(): Promise<void> {
    const {args, flags} = await this.parse(ScanVideo)
    const query = parseVideoOptions({
      fps: flags.fps,
      min_frames: flags['min-frames'],
      stop_on_violation: flags['stop-on-violation'] ? 'true' : 'false',
    })
    await checkVideoFile(args.file)
    const {engine} = await engineFromFlags(flags)
    const progress = this.startProgress(`Scanning ${args.file}`)
    let result
    try {
      result = await engine.moderateVideo(args.file, {
        source: args.file,
        ...query,
        signal: this.interrupt.signal,
        onSegment: flags.ndjson ? (name, segment) => progress.above(() => this.log(JSON.stringify({type: 'segment', name, ...segment}))) : undefined,
        onProgress: (frames, seconds) => progress.update(`Scanning ${args.file}: ${frames} frames, ${seconds.toFixed(1)} s`),
      })
    } finally {
      progress.finish()
      await engine.close()
    }
    if (flags.json || flags.ndjson) this.log(JSON.stringify(result))
    else this.log(formatVideo(result))
    return this.exit(result.is_safe ? EXIT_SAFE : EXIT_VIOLATION)
  }
}
