import cluster from 'node:cluster'
import {format} from 'node:util'

import {Command, Errors, Flags} from '@oclif/core'
import chalk, {chalkStderr} from 'chalk'

import type {Config} from '../lib/config/load.js'
import {isModError} from '../lib/errors.js'
import {endBySignal} from '../lib/processes.js'
import {unknownVariables} from '../lib/config/variables.js'
import {stopThreadsBeforeExit} from '../lib/worker-module.js'
import {showCursor} from './cursor.js'
import {errorText, EXIT_ERROR, exitForSignal, STOP_SIGNALS, type StopSignal} from './errors.js'
import type {EnvVars} from './help.js'
import {usageLine, type FlagShape} from './parse-errors.js'
import {openOutput, type Output} from './output.js'
import {resultsTarget, startProgress, type Progress} from './progress.js'
import type {Reporter} from './reports/reporter.js'
import {visible} from './visible.js'

function isParseError(e: unknown): boolean {
  return e instanceof Errors.CLIError && !isModError(e)
}

/**
 * Why the command line gives a value to an on/off flag (`--strict=false`), if it does: the parser would take such a
 * flag as given, whatever the value (`--strict=false` turns strict on), and the value as a path to scan.
 */
export function valuedSwitch(argv: readonly string[], cmd: Pick<typeof Command, 'flags' | 'baseFlags'>): string | undefined {
  const flags: Record<string, {type?: string; allowNo?: boolean}> = {...cmd.baseFlags, ...cmd.flags}
  for (const arg of argv) {
    if (arg === '--') return undefined
    const typed = /^--(no-)?([^=]+)=/.exec(arg)
    const flag = typed ? flags[typed[2]] : undefined
    if (!typed || flag?.type !== 'boolean' || (typed[1] && !flag.allowNo)) continue
    const name = typed[2]
    return `--${typed[1] ?? ''}${name} takes no value: write --${name}${flag.allowNo ? ` or --no-${name}` : ' or leave it out'}`
  }
  return undefined
}

/**
 * The colour the command line asks for, if any: the last of --color and --no-color, as for any flag given twice
 * (an alias may hold `--no-color`, and `--color` typed after it asks for colour this once).
 */
export function colourAsked(argv: readonly string[]): boolean | undefined {
  const end = argv.includes('--') ? argv.indexOf('--') : argv.length
  for (let i = end - 1; i >= 0; i--) {
    if (argv[i] === '--color') return true
    if (argv[i] === '--no-color') return false
  }
  return undefined
}

/**
 * What every `mod` command shares (after the Salesforce CLI's SfCommand): a failure is one stderr line
 * `mod: <code>: <message>` and exit 2 (a stack trace only with DEBUG set), oclif's own parse errors in the same
 * style, Ctrl-C is exit 130, and a progress line on stderr that the base removes however the command ends.
 */
export abstract class ModCommand extends Command {
  static override baseFlags = {
    color: Flags.boolean({
      description: 'Colour the output (wins over NO_COLOR and FORCE_COLOR=0).',
      allowNo: true,
      default: true,
      helpGroup: 'GLOBAL',
    }),
  }

  /**
   * Commands that stop on signals themselves (serve) set this; the others stop their work on Ctrl-C (SIGINT),
   * SIGTERM (CI runners, `docker stop`, `timeout`) or SIGHUP (a closed terminal) and exit 128 + the signal's number.
   */
  static ownSignals = false
  /** MOD_* variables without a flag that this command reads, listed under ENVIRONMENT VARIABLES in --help. */
  static envVars?: EnvVars
  /** Replaces the default EXIT CODES section of --help. */
  static exitCodes?: [string, string][]

  /** Aborted by the first stop signal; commands stop their work when it fires. */
  protected readonly interrupt = new AbortController()
  /** The signal that stopped the command, once one has. */
  protected stoppedBy?: StopSignal
  /** Whether the one stderr line saying the command was stopped, and how far it got, is out. */
  private stopSaid = false
  private progress?: Progress
  private readonly onSignal = (signal: StopSignal): void => {
    if (this.interrupt.signal.aborted) return this.quit(this.stoppedBy ?? signal)
    this.stoppedBy = signal
    this.interrupt.abort()
  }

  protected override async init(): Promise<void> {
    await super.init()
    const valued = valuedSwitch(this.argv, this.constructor as typeof Command)
    if (valued) throw new Errors.CLIError(valued)
    // chalk's own detection (stdout's, and stderr's for the steps) knows --no-color but not NO_COLOR
    // (https://no-color.org), and lets FORCE_COLOR=0 beat --color: a flag typed wins over the environment.
    const asked = colourAsked(this.argv)
    if (asked === false || (process.env.NO_COLOR && asked === undefined)) chalk.level = chalkStderr.level = 0
    else if (asked) {
      chalk.level ||= 1
      chalkStderr.level ||= 1
    }
    if (!(this.constructor as typeof ModCommand).ownSignals) for (const s of STOP_SIGNALS) process.on(s, this.onSignal)
    // Once per run: the workers of mod serve --workers N share the primary's environment.
    if (!cluster.isWorker) for (const line of unknownVariables(process.env)) this.logToStderr(`mod: warning: ${line}`)
  }

  /**
   * `work`, unless a stop signal comes first: a read that may block for ever (a FIFO with no writer, a pipe never
   * closed) cannot hold the command after it was asked to stop. The read itself is abandoned, and the process exits.
   */
  protected untilStopped<T>(work: Promise<T>): Promise<T> {
    const {signal} = this.interrupt
    if (signal.aborted) return Promise.reject(new Error('stopped'))
    return new Promise<T>((resolve, reject) => {
      const stop = () => reject(new Error('stopped'))
      signal.addEventListener('abort', stop, {once: true})
      work.then(resolve, reject).finally(() => signal.removeEventListener('abort', stop))
    })
  }

  /** The one stderr line of a command a signal stopped: which signal, and how far it got when the command knows. */
  protected sayStopped(progress?: string): void {
    if (this.stopSaid || !this.stoppedBy) return
    this.stopSaid = true
    this.logToStderr(`mod: stopped by ${this.stoppedBy}${progress ? ` after ${progress}` : ''}`)
  }

  /** Settles once a stop signal has come (at once if one has): a loop can race its next step against it. */
  protected whenStopped(): Promise<'stopped'> {
    const {signal} = this.interrupt
    if (signal.aborted) return Promise.resolve('stopped')
    return new Promise((resolve) => signal.addEventListener('abort', () => resolve('stopped'), {once: true}))
  }

  /**
   * One stderr line naming a policy file found by search: a file in a parent folder changes verdicts, so it must
   * never apply unseen. A file named by --config or MOD_CONFIG was asked for and is not repeated.
   */
  protected notePolicy(config: Pick<Config, 'policyFound' | 'policyPath'>): void {
    if (config.policyFound) this.logToStderr(`mod: policy: ${config.policyPath} (found ${config.policyFound}; --config names another)`)
  }

  /**
   * One note on stderr. It may quote a name from elsewhere (a file, a policy's key, a path typed): the note is made
   * visible, line breaks included, so it stays one line and no part of it passes for a line of its own (a CI
   * log's workflow command). A note of several lines is several calls. Written to the stream, not through
   * console.error (oclif's way): Node.js's console judges colours on first use, and with NO_COLOR and FORCE_COLOR
   * both set it prints a warning of its own, which lands in the middle of the progress line.
   */
  override logToStderr(message = '', ...args: unknown[]): void {
    process.stderr.write(`${visible(format(message, ...args))}\n`)
  }

  /** A progress line on stderr, only on a terminal and with stdout not a pipe; finished when the command ends. */
  protected startProgress(text: string): Progress {
    this.progress?.finish()
    this.progress = startProgress(text, process.stderr, resultsTarget(process.stdout), process.env.TERM === 'dumb')
    return this.progress
  }

  /**
   * The one writer of this command's results on stdout, in the format's reporter (src/cli/output.ts); each write
   * steps around the progress line. Notes go to stderr with logToStderr, whatever the format.
   */
  protected output<Item, End>(reporter: Reporter<Item, End>): Output<Item, End> {
    return openOutput(reporter, process.stdout, (write, text) => (this.progress ? this.progress.above(write, text) : write()))
  }

  /** Prints the one result of a command that has one, in the format's reporter. */
  protected printResult<End>(reporter: Reporter<never, End>, result: End): void {
    this.output(reporter).end(result)
  }

  protected override async catch(err: Error & {exitCode?: number}): Promise<unknown> {
    this.progress?.finish()
    if (err instanceof Errors.ExitError) throw err
    // Work may still be under way (an inference the scan no longer waits for): it ends before the process does.
    await stopThreadsBeforeExit()
    if (this.interrupt.signal.aborted) {
      this.sayStopped()
      return this.exit(this.signalExit())
    }
    process.stderr.write(`${this.describe(err)}\n`)
    if (process.env.DEBUG && err.stack) process.stderr.write(`${err.stack}\n`)
    return this.exit(EXIT_ERROR)
  }

  protected override async finally(err: Error | undefined): Promise<unknown> {
    this.progress?.finish()
    for (const s of STOP_SIGNALS) process.off(s, this.onSignal)
    if (err === undefined && this.interrupt.signal.aborted) {
      await stopThreadsBeforeExit()
      this.sayStopped()
      return this.exit(this.signalExit())
    }
    return super.finally(err)
  }

  private signalExit(): number {
    return exitForSignal(this.stoppedBy ?? 'SIGINT')
  }

  /**
   * Leaves at once (a second Ctrl-C), of the signal itself (endBySignal): the progress line is removed first and the
   * cursor shown again (a progress display may have hidden it).
   */
  private quit(signal: StopSignal): void {
    this.progress?.finish()
    if (process.stderr.isTTY) showCursor()
    void endBySignal(signal)
  }

  /** The failure's text, made visible: a message may quote what came from elsewhere (a server, a file, what was typed). */
  private describe(err: Error): string {
    if (!isParseError(err)) return errorText(err)
    const cmd = this.constructor as typeof Command
    const json: Record<string, FlagShape> = cmd.enableJsonFlag ? {json: {type: 'boolean'}} : {}
    const flags = {...cmd.baseFlags, ...cmd.flags, ...json}
    const id = (this.id ?? '').replaceAll(':', ' ')
    return visible(usageLine(err, {bin: this.config.bin, id, flags, args: cmd.args ?? {}, strict: cmd.strict !== false, argv: this.argv, env: process.env}))
  }
}
