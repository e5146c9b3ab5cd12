import pino, {type DestinationStream, type Logger} from 'pino'

import type {LogLevel} from '../lib/config/settings.js'
import type {Log} from './errors.js'

export type {Logger} from 'pino'

export interface LoggerOptions {
  level: LogLevel
  /** Where the JSON lines go; default stderr (written synchronously, so no line is lost at exit). */
  destination?: DestinationStream
  /** Fields on every line, e.g. the cluster worker's id. */
  base?: Record<string, unknown>
}

/** One JSON object per line: `level` by name, `time` in ISO 8601, `pid`, `msg`, plus `base` and the line's own fields. */
export function createLogger(o: LoggerOptions): Logger {
  return pino(
    {
      level: o.level,
      base: {pid: process.pid, ...o.base},
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: {level: (label) => ({level: label})},
    },
    o.destination ?? pino.destination({dest: 2, sync: true}),
  )
}

/** The one-line Log of the server code on top of a logger; a line without a level is an error. */
export function logTo(logger: Logger): Log {
  return (line, level = 'error') => logger[level](line)
}

const SHOWN_ELSEWHERE = new Set(['level', 'time', 'msg', 'pid', 'hostname'])

/**
 * For a person at a terminal: each JSON line as `HH:MM:SS LEVEL message key=value…`. A few lines of
 * formatting instead of pino-pretty and its dependencies; stderr stays JSON when it is not a terminal.
 */
export function prettyDestination(write: (text: string) => void): DestinationStream {
  return {
    write(line: string) {
      const record = JSON.parse(line) as Record<string, unknown>
      const time = typeof record.time === 'string' ? record.time.slice(11, 19) : ''
      const fields = Object.entries(record)
        .filter(([key]) => !SHOWN_ELSEWHERE.has(key))
        .map(([key, value]) => `${key}=${typeof value === 'string' ? value : JSON.stringify(value)}`)
      const level = String(record.level).toUpperCase().padEnd(5)
      write(`${[time, level, record.msg, ...fields].filter((p) => p !== undefined && p !== '').join(' ')}\n`)
    },
  }
}
