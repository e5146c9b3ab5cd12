import {spawn, type ChildProcess, type StdioOptions} from 'node:child_process'
import type {Readable} from 'node:stream'

import {LOG_HEAD_CHARS, overPixelLimit} from './ffmpeg-input.js'

/** A running ffmpeg of ours: how it ended, the head of its log, and whether a picture went over `-max_pixels`. */
export interface FfmpegProcess {
  child: ChildProcess
  /** Resolves with the exit code (null when killed or never started) once the process ends (`settle`). */
  ended: Promise<number | null>
  spawnFailed(): boolean
  log(): string
  pixelLimit(): boolean
  /** SIGKILL, unless it has ended already. */
  kill(): void
}

/**
 * Starts `ffmpeg` with `args`, its stderr read for the log's head and the pixel limit. `settle`: `exit` when the
 * caller reads the output pipes at its own pace (they may outlive the process), `close` once they are closed too.
 */
export function startFfmpeg(ffmpeg: string, args: string[], stdio: StdioOptions, settle: 'exit' | 'close'): FfmpegProcess {
  const child = spawn(ffmpeg, args, {stdio, windowsHide: true})
  let spawnFailed = false
  const ended = new Promise<number | null>((done) => {
    child.once(settle, (code: number | null) => done(code))
    child.once('error', () => {
      spawnFailed = true
      done(null)
    })
  })
  let log = ''
  let pixelLimit = false
  ;(child.stderr as Readable).on('data', (chunk: Buffer) => {
    const text = chunk.toString('utf8')
    if (log.length < LOG_HEAD_CHARS) log += text.slice(0, LOG_HEAD_CHARS - log.length)
    // ffmpeg decodes a first picture to learn the stream's size, even when it copies the packets.
    if (overPixelLimit(text)) pixelLimit = true
  })
  return {
    child,
    ended,
    spawnFailed: () => spawnFailed,
    log: () => log,
    pixelLimit: () => pixelLimit,
    kill: () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
    },
  }
}
