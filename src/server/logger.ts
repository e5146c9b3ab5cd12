import type {ServerResponse} from 'node:http'

import pino, {type DestinationStream, type Logger} from 'pino'

import type {LogLevel} from '../lib/config/settings.js'
import type {Log, LogFields} from './errors.js'

export type {Logger} from 'pino'

export interface LoggerOptions {
  level: LogLevel
  /** Where the JSON lines go; default stderr (written synchronously, so no line is lost at exit). */
  destination?: DestinationStream
  /** Fields on every line, e.g. the cluster worker's id. */
  base?: Record<string, unknown>
}

/**
 * One JSON object per line: `level` by name, `time` in ISO 8601, `pid`, `msg`, plus `base` and the line's own
 * fields; an `err` field is serialised by pino's error serialiser (`type`, `message`, `stack`, and its own fields).
 */
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

/** The Log of the server code on top of a logger: a line without a level is an error, its fields go into the record. */
export function logTo(logger: Logger): Log {
  return (line, level = 'error', fields) => (fields === undefined ? logger[level](line) : logger[level](fields, line))
}

/** The log of one request: each record carries the request's X-Request-Id, so that an answer can be matched to it. */
export function requestLog(log: Log, res: ServerResponse): Log {
  const id = res.getHeader('x-request-id')
  return (line, level, fields) => log(line, level, {...(typeof id === 'string' ? {request_id: id} : {}), ...fields})
}

/** A Log call as plain text: the line, its fields as `key=value`, then the error's stack on the next lines. */
export function plainText(line: string, fields: LogFields = {}): string {
  const {err, ...rest} = fields
  const pairs = Object.entries(rest).map(([key, value]) => ` ${key}=${typeof value === 'string' ? value : JSON.stringify(value)}`)
  const stack = err === undefined ? '' : `\n${err instanceof Error ? (err.stack ?? err.message) : String(err)}`
  return `${line}${pairs.join('')}${stack}`
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
        .filter(([key]) => !SHOWN_ELSEWHERE.has(key) && key !== 'err')
        .map(([key, value]) => `${key}=${typeof value === 'string' ? value : JSON.stringify(value)}`)
      const level = String(record.level).toUpperCase().padEnd(5)
      const err = record.err as {stack?: unknown} | undefined
      const stack = typeof err?.stack === 'string' ? `${err.stack}\n` : ''
      write(`${[time, level, record.msg, ...fields].filter((p) => p !== undefined && p !== '').join(' ')}\n${stack}`)
    },
  }
}
