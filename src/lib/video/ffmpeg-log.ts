import {COMPONENT_PREFIX, LOG_HEAD_CHARS} from './ffmpeg-input.js'
import {readsLine} from './streams.js'

/**
 * ffmpeg's log level for a run that also describes its input: every line tagged with its level ("[info] ", after
 * any "[component @ 0x…] " prefix), so that its description of the file and its errors can be told apart.
 */
export const DESCRIBING_LOGLEVEL = 'level+info'

/** The description is in ffmpeg's first lines, a few KiB; past this only the lines readDescription reads are kept. */
const MAX_DESCRIPTION_CHARS = 256 * 1024
/**
 * How much of the lines readDescription reads (readsLine: the streams' own, their tags, the duration) is kept past
 * MAX_DESCRIPTION_CHARS, where a file's own metadata may have filled the first part: a stream described after it must
 * still be seen, or it would go unscored. Past this the description is cut. A key or value of the file's cannot pass
 * for such a line: its line breaks are joined (createLeveledLog).
 */
const MAX_STREAM_DETAIL_CHARS = 1024 * 1024
/** Longest partial line kept across chunks. */
const MAX_LINE_CHARS = 64 * 1024

const LEVELED_LINE = new RegExp(String.raw`^((?:${COMPONENT_PREFIX})*)\[(panic|fatal|error|warning|info|verbose|debug|trace)\] (.*)$`)
const ERROR_LEVELS = new Set(['panic', 'fatal', 'error'])

export interface LeveledLog {
  /** Feeds the next text of ffmpeg's stderr. */
  push(text: string): void
  /** Ends the input: a last line without its newline is read too. */
  end(): void
  /**
   * ffmpeg's description of its input ("Input #0, …" and the indented lines under it), without the level tags; past
   * MAX_DESCRIPTION_CHARS, only the lines that say what the streams are.
   */
  description(): string
  /** Whether lines that say what the streams are were left out (even those exceed MAX_STREAM_DETAIL_CHARS). */
  cut(): boolean
  /** The error lines (their components' prefixes kept, the level tags left out), the first LOG_HEAD_CHARS of them. */
  errors(): string
  /**
   * The input streams of the run's stream mapping ("  Stream #0:1 -> #0:1 (copy)", after the description), the first
   * MAX_MAPPED of them: those it reads. A line of the file's metadata can add to them, never take one away.
   */
  mapped(): number[]
}

/** Stream mapping lines kept: a run maps a few streams (at most MAX_VIDEO_STREAMS are decoded). */
const MAX_MAPPED = 64
const MAPPING_LINE = /^ {2}Stream #0:(\d+) -> #\d+:\d+/

/**
 * Reads a log written at DESCRIBING_LOGLEVEL; `onDescribed` is called once the description is complete (before the
 * packets are read). A line without a tag continues the line before it (a message with a newline inside, or a
 * metadata key or value that holds one): in the description it is joined to that line (after a `\n` written out),
 * so that a key or value of the file's cannot pass for a line of ffmpeg's own, nor end the description. The
 * description ends at the first line of ffmpeg's own that is not indented under it (its output's description, its
 * stream mapping): a key's line break did, and the streams after it went unscored.
 */
export function createLeveledLog(onDescribed?: (description: string) => void): LeveledLog {
  let carry = ''
  // An ffmpeg too old to tag its lines (before 4.0) refuses the log level in an untagged line: an error.
  let level = 'error'
  let description = ''
  let cut = false
  let stage: 'before' | 'in' | 'after' = 'before'
  let errors = ''
  const mapped: number[] = []
  /** Whether the last line read was kept in the description: a line without a tag goes on with it. */
  let kept = false
  const keep = (body: string): void => {
    kept = false
    if (description.length < MAX_DESCRIPTION_CHARS) description += `${body}\n`
    else if (!readsLine(body)) return
    else if (description.length + body.length < MAX_DESCRIPTION_CHARS + MAX_STREAM_DETAIL_CHARS) description += `${body}\n`
    else return void (cut = true)
    kept = true
  }
  const goOn = (text: string): void => {
    if (!kept) return
    if (description.length < MAX_DESCRIPTION_CHARS || description.length + text.length < MAX_DESCRIPTION_CHARS + MAX_STREAM_DETAIL_CHARS) {
      description = `${description.slice(0, -1)}\\n${text}\n`
    } else {
      kept = false
      cut = true
    }
  }
  const line = (text: string): void => {
    const m = LEVELED_LINE.exec(text)
    const [context, body] = m ? [m[1], m[3]] : ['', text]
    if (m) level = m[2]
    if (ERROR_LEVELS.has(level)) {
      kept = false
      if (errors.length < LOG_HEAD_CHARS) errors += `${context}${body}\n`.slice(0, LOG_HEAD_CHARS - errors.length)
    } else if (!m) {
      goOn(text)
    } else if (level === 'info' && context === '') {
      if (stage === 'before' && body.startsWith('Input #0,')) stage = 'in'
      else if (stage === 'in' && !/^\s/.test(body)) {
        stage = 'after'
        onDescribed?.(description)
      }
      if (stage === 'in') keep(body)
      else kept = false
      const m = stage === 'after' ? MAPPING_LINE.exec(body) : null
      if (m && mapped.length < MAX_MAPPED) mapped.push(Number(m[1]))
    } else {
      kept = false
    }
  }
  return {
    push(text) {
      const lines = (carry + text).split('\n')
      carry = (lines.pop() as string).slice(0, MAX_LINE_CHARS)
      for (const l of lines) line(l)
    },
    end() {
      if (carry !== '') line(carry)
      carry = ''
    },
    description: () => description,
    cut: () => cut,
    errors: () => errors,
    mapped: () => mapped,
  }
}
