import {spawn, type ChildProcess, type StdioOptions} from 'node:child_process'
import type {Readable} from 'node:stream'

import {LOG_HEAD_CHARS, overPixelLimit} from './ffmpeg-input.js'
import {createLeveledLog} from './ffmpeg-log.js'

/** A running ffmpeg of ours: how it ended, the head of its log, and whether a picture went over `-max_pixels`. */
export interface FfmpegProcess {
  child: ChildProcess
  /** Resolves with the exit code (null when killed or never started) once the process ends (`settle`). */
  ended: Promise<number | null>
  spawnFailed(): boolean
  /** The head of its error lines. */
  log(): string
  pixelLimit(): boolean
  /** Its description of the file, when it was started at DESCRIBING_LOGLEVEL (`describing`); else empty. */
  description(): string
  /** Whether that description left out lines that say what the streams are (too long to keep whole). */
  descriptionCut(): boolean
  /** The input streams of its stream mapping, when it was started at DESCRIBING_LOGLEVEL; else none. */
  mapped(): number[]
  /** SIGKILL, unless it has ended already. */
  kill(): void
}

/**
 * Starts `ffmpeg` with `args`, its stderr read for the log's head and the pixel limit. `settle`: `exit` when the
 * caller reads the output pipes at its own pace (they may outlive the process), `close` once they are closed too.
 * `describing`: `args` set DESCRIBING_LOGLEVEL, and the log is told apart from the description, which is handed to
 * its `onDescribed` once complete.
 */
export function startFfmpeg(ffmpeg: string, args: string[], stdio: StdioOptions, settle: 'exit' | 'close', describing?: {onDescribed(description: string): void}): FfmpegProcess {
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
  const leveled = describing ? createLeveledLog(describing.onDescribed) : undefined
  const stderr = child.stderr as Readable
  stderr.setEncoding('utf8')
  stderr.on('data', (text: string) => {
    if (leveled) return leveled.push(text)
    if (log.length < LOG_HEAD_CHARS) log += text.slice(0, LOG_HEAD_CHARS - log.length)
    // ffmpeg decodes a first picture to learn the stream's size, even when it copies the packets.
    if (overPixelLimit(text)) pixelLimit = true
  })
  stderr.on('end', () => leveled?.end())
  return {
    child,
    ended,
    spawnFailed: () => spawnFailed,
    log: () => leveled?.errors() ?? log,
    // A description holds the file's own metadata: there, only the error lines tell.
    pixelLimit: () => (leveled ? overPixelLimit(leveled.errors()) : pixelLimit),
    description: () => leveled?.description() ?? '',
    descriptionCut: () => leveled?.cut() ?? false,
    mapped: () => leveled?.mapped() ?? [],
    kill: () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
    },
  }
}
