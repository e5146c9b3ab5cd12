import {execFile} from 'node:child_process'
import {resolve} from 'node:path'

import {VIDEO_DEMUXERS} from './ffmpeg-input.js'

const TIMEOUT_MS = 10_000

/**
 * The duration a video's container states (ffmpeg's "Duration: 00:01:02.50" header), in seconds; undefined when
 * it states none or ffmpeg cannot read the file. For a progress estimate only: the container may lie, so limits
 * are enforced on what is decoded, never on this.
 */
export function statedDuration(ffmpeg: string, path: string, signal?: AbortSignal): Promise<number | undefined> {
  // No output file: ffmpeg prints the input's header and exits 1.
  const args = ['-nostdin', '-hide_banner', '-protocol_whitelist', 'file', '-format_whitelist', VIDEO_DEMUXERS, '-i', resolve(path)]
  return new Promise((done) => {
    execFile(ffmpeg, args, {timeout: TIMEOUT_MS, signal, windowsHide: true, maxBuffer: 1024 * 1024}, (_error, _stdout, stderr) => {
      const m = /Duration: (\d+):(\d{2}):(\d{2}(?:\.\d+)?)/.exec(String(stderr))
      done(m ? Number(m[1]) * 3600 + Number(m[2]) * 60 + Number(m[3]) : undefined)
    })
  })
}
