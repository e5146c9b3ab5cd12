import {constants} from 'node:os'

import {isModError} from '../lib/errors.js'
import {visible} from './visible.js'

/** 0 all safe, 1 a violation, 2 usage, configuration, model or input error (nothing scanned, a failed start). */
export const EXIT_SAFE = 0
export const EXIT_VIOLATION = 1
export const EXIT_ERROR = 2
/** The signals that stop a command's work (what finished is still printed whole): Ctrl-C, CI runners and `docker stop`, a closed terminal. */
export const STOP_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const
export type StopSignal = (typeof STOP_SIGNALS)[number]

/** 128 + the signal's number, as a shell reports a command a signal stopped: 130 (SIGINT), 143 (SIGTERM), 129 (SIGHUP), 141 (SIGPIPE). */
export function exitForSignal(signal: StopSignal | 'SIGPIPE'): number {
  return 128 + constants.signals[signal]
}

/** The rows every command that stops on signals lists under EXIT CODES. */
export const SIGNAL_EXIT_CODES: [string, string][] = [
  ['129', 'stopped by SIGHUP (the terminal closed)'],
  ['130', 'stopped by Ctrl-C (SIGINT)'],
  ['141', 'the reader of stdout went away (| head): the output was cut short'],
  ['143', 'stopped by SIGTERM (a CI runner, docker stop, timeout)'],
]

/** The EXIT CODES of --help for a command that states none of its own. */
export const EXIT_CODES: [string, string][] = [['0', 'done'], ['2', 'usage or configuration error; stdout could not be written (a full disk)'], ...SIGNAL_EXIT_CODES]

/**
 * What the CLI prints for a failure: `mod: <code>: <message>`, on one line whatever the message quotes (a file's
 * name, a server's words: made visible, line breaks included), so that nothing in it passes for a line of its own
 * (a CI log's workflow command). Only a message `mod` built of several lines (an invalid file's problems) keeps
 * the breaks between them, each of its lines made visible alike.
 */
export function errorText(e: unknown): string {
  if (!isModError(e)) return `mod: internal: ${visible(e instanceof Error ? e.message : String(e))}`
  const [first, ...rest] = e.lines ?? [e.message]
  return [`mod: ${e.code}: ${visible(first)}`, ...rest.map(visible)].join('\n')
}

/** oclif's "--a=true cannot also be provided when using --b", said once per pair of flags. */
function exclusivePair(line: string): string {
  const pair = /^(--[\w-]+)=\S* cannot also be provided when using (--[\w-]+)$/.exec(line)
  return pair ? `${[pair[1], pair[2]].sort().join(' and ')} cannot be used together` : line
}

/** oclif's multi-line parse messages ("Parsing --x \n\tExpected …\nSee more help with --help") as one line. */
export function oneLine(message: string): string {
  return [...new Set(message.split('\n').map((l) => exclusivePair(l.trim())))]
    // oclif's heading says "error" for one problem and "errors" for several.
    .filter((l) => l !== '' && !/^See more help with/.test(l) && !/^The following errors? occurred:$/.test(l))
    .reduce((all, l) => (all === '' ? l : `${all}${/:$/.test(all) ? ' ' : ': '}${l}`), '')
    .replace(/^Parsing (--[\w-]+)\s*:\s*/, '$1: ')
}

/**
 * The text for a failure outside any command (bin/run.js: an unknown command, oclif failing to start): oclif's
 * own errors are usage errors, anything else is internal, each on one line (a ModError as errorText prints it).
 */
export function startupErrorLine(e: unknown): string {
  if (isModError(e)) return errorText(e)
  // oclif's messages quote what was typed (an unknown command): nothing in it may reach the terminal raw.
  const message = visible(oneLine(String((e as {message?: unknown} | undefined)?.message ?? e)))
  return (e as {oclif?: unknown} | undefined)?.oclif ? `mod: usage: ${message}` : `mod: internal: ${message}`
}
