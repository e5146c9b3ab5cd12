/**
 * What a command does when it cannot write its standard streams. stderr carries notes, progress and error lines:
 * best effort, so a closed or full stderr (`2>/dev/full`, `2>&1 | true`) neither loses the results on stdout nor
 * changes the exit code. stdout carries the results: a reader that went away (EPIPE, `| head -1`) stops the
 * command quietly, as the output's own reader expects, with 141 as a process that SIGPIPE ends (never 0: the work
 * was cut short, and a CI gate under `set -o pipefail` reads 0 as safe); any other failure (a full disk, an I/O
 * error) means results were lost, so the process exits 2 with one line naming the cause. A
 * terminal that closed fails every later write to it with EIO: that is the hang-up (SIGHUP), not a lost output,
 * and the process exits 129 as for SIGHUP, whichever of the two it learnt first.
 */
export interface StreamGuard {
  /** The error that made stdout lose results, once one has (never EPIPE, nor the EIO of a closed terminal). */
  failure(): NodeJS.ErrnoException | undefined
  /** Whether stdout was a terminal that has closed (its writes fail with EIO). */
  hungUp(): boolean
  /** Whether the reader of stdout went away (its writes fail with EPIPE). */
  readerGone(): boolean
  /** Resolves once what was written to stdout has been handed to the system, or failed. */
  flushed(): Promise<void>
}

/** Installs the handlers; call it once @oclif/core is loaded, as that replaces its stdout listener. */
export function guardStreams(stdout: NodeJS.WriteStream = process.stdout, stderr: NodeJS.WriteStream = process.stderr): StreamGuard {
  let failed: NodeJS.ErrnoException | undefined
  let hungUp = false
  let readerGone = false
  // @oclif/core's own listener rethrows every stdout error but EPIPE, as an uncaught exception: a stack trace, exit 1
  // (which means "a violation"), or an abort when it surfaces inside a native callback.
  stdout.removeAllListeners('error')
  stderr.on('error', () => {})
  stdout.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code === 'EIO' && stdout.isTTY) hungUp = true
    else if (e.code === 'EPIPE') readerGone = true
    else failed ??= e
  })
  return {
    failure: () => failed,
    hungUp: () => hungUp,
    readerGone: () => readerGone,
    flushed: () =>
      new Promise((done) => {
        // A stream that failed calls no write's callback again; its 'error' event is still on its way.
        if (!stdout.writable || stdout.destroyed) return void setImmediate(done)
        stdout.once('error', () => done())
        stdout.write('', () => done())
      }),
  }
}

/** The line for results stdout could not take: `mod: output: cannot write to stdout: ENOSPC: no space left on device, write`. */
export function outputFailureLine(e: Error): string {
  return `mod: output: cannot write to stdout: ${e.message}`
}
