#!/usr/bin/env node
// onnxruntime-node (1.30, Linux and macOS) sends usage telemetry by default: a device id and an event database
// under ~/.cache/Microsoft/DeveloperTools/.onnxruntime/, a .ses file and mat-debug-<pid>.log in the temporary
// folder, events queued for upload. ORT_DISABLE_TELEMETRY=1 switches all of it off when it is set before
// onnxruntime starts, so it is set here, before oclif loads any command; cluster workers inherit it.
process.env.ORT_DISABLE_TELEMETRY = '1'

// mod lets NO_COLOR win over FORCE_COLOR (--color wins over both). Node.js 22 and later warn, on their first colour
// check (loading node:assert makes one), that NO_COLOR is ignored when both are set, which is not so here and lands
// in the middle of the progress line: FORCE_COLOR goes before anything is loaded.
if (process.env.NO_COLOR && process.env.FORCE_COLOR !== undefined) delete process.env.FORCE_COLOR
// An empty NO_COLOR asks nothing (no-color.org), but Node.js 22 still warns of it beside FORCE_COLOR.
if (process.env.NO_COLOR === '') delete process.env.NO_COLOR
// A terminal that names itself monochrome (terminfo's `-mono` entries: xterm-mono) has no colours, where chalk takes
// every TERM beginning with xterm for one that has them. As NO_COLOR, unless colour is forced (FORCE_COLOR, --color).
if (/-mono$/.test(process.env.TERM ?? '') && process.env.FORCE_COLOR === undefined && process.env.NO_COLOR === undefined) process.env.NO_COLOR = '1'

// Exit codes: a start-up failure (no build, a broken install, an unknown command) is 2, never 1 (1 means a
// violation was found), printed as one line in the style of every other failure.
import {existsSync} from 'node:fs'

const fail = (message) => {
  process.stderr.write(`mod: ${message}\n`)
  process.exit(2)
}

if (!existsSync(new URL('../dist/commands/', import.meta.url))) {
  fail('internal: the build is missing (no dist/ folder): run `npm run build` in the package folder')
}

// A working folder removed under the shell (a checkout of another branch, rm -rf in another shell): paths typed
// relative to it, the policy search from it and the names in reports have nothing to start from, and a scan that
// skipped the search could judge by another policy than the one it was typed under. Only help and the version,
// which read no path, still run.
const args = process.argv.slice(2)
const typed = args.includes('--') ? args.slice(0, args.indexOf('--')) : args
const asksHelp = ['help', 'version'].includes(args[0]) || typed.some((a) => ['--help', '-h', '--version', '-v'].includes(a))
if (!asksHelp) {
  try {
    process.cwd()
  } catch (e) {
    if (e.code === 'ENOENT') fail('usage: the working folder no longer exists (removed or moved): cd to an existing folder and run the command again')
  }
}

let oclif
try {
  oclif = await import('@oclif/core')
} catch (e) {
  fail(`internal: cannot load @oclif/core (${e.message}): run \`npm ci\``)
}
// The same error line as every command's (src/cli/errors.ts).
const {exitForSignal, startupErrorLine} = await import('../dist/cli/errors.js')
const {endBySignal} = await import('../dist/lib/processes.js')
// stderr is best effort; results stdout could not take make the exit 2 (src/cli/streams.ts).
const {guardStreams, outputFailureLine} = await import('../dist/cli/streams.js')
const streams = guardStreams()

// Exits with `code`, or 2 once stdout has lost results, or as SIGHUP once the terminal it wrote to closed, or 141
// (as SIGPIPE ends a process) once the reader of stdout went away: the work was cut short, which is never 0, and a
// shell under `set -o pipefail` sees it fail as it would see grep or cat; undefined: a command that ended
// normally ends as it would.
const leave = async (code) => {
  await streams.flushed()
  // Once the terminal closed (a write failed, or SIGHUP stopped the command), the process ends of SIGHUP itself,
  // which a shell reports as 129, saying nothing (there is nowhere to say it): an exit would first reset the closed
  // terminal, stdin's too, which Node.js 20 asserts on (a native abort, nodejs/node#51519).
  if (streams.hungUp() || code === exitForSignal('SIGHUP')) await endBySignal('SIGHUP')
  const failure = streams.failure()
  if (failure) process.stderr.write(`${outputFailureLine(failure)}\n`)
  if (failure) process.exit(2)
  if (streams.readerGone()) process.exit(exitForSignal('SIGPIPE'))
  if (code !== undefined) process.exit(code)
}

try {
  // Not oclif.flush(): it waits for a 'drain' that a stdout that failed never emits.
  await oclif.run(process.argv.slice(2), import.meta.url)
} catch (e) {
  // this.exit(code) inside a command: the code is already decided.
  if (e instanceof oclif.Errors.ExitError) await leave(e.oclif.exit)
  if (process.env.DEBUG && e?.stack) process.stderr.write(`${e.stack}\n`)
  process.stderr.write(`${startupErrorLine(e)}\n`)
  await leave(2)
}
await leave(undefined)
