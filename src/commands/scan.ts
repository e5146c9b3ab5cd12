import {stat} from 'node:fs/promises'

import {Args, Errors, Flags, type Interfaces} from '@oclif/core'

import {ModCommand} from '../cli/base-command.js'
import {baselineText, hashedInputs, isAccepted, readBaseline, type Baseline, type BaselineItem} from '../cli/baseline.js'
import {EXIT_ERROR, EXIT_SAFE, EXIT_VIOLATION, SIGNAL_EXIT_CODES} from '../cli/errors.js'
import {engineFromFlags} from '../cli/engine.js'
import {chosenFormat, formatFlags, type Output} from '../cli/output.js'
import {modelFlags, onlyFlag, policyFlags} from '../cli/flags.js'
import {wholeNumberFlag} from '../cli/value-flags.js'
import {coverage, coverageHint, notEvaluatedLine, summaryLine, type Counts} from '../cli/format.js'
import {readFileList} from '../cli/files-from.js'
import {batchFlags, refuseRemoteFlags, serverFlags} from '../cli/remote/flags.js'
import type {EnvVars} from '../cli/help.js'
import {openHtmlReport, type HtmlReport, type ReportSummary} from '../cli/reports/html-report.js'
import {scanInputs, skippedLine, stdinPathProblem, type ScanEntry, type ScanItem, type Skipped} from '../cli/inputs.js'
import {scanReporter, SCAN_FORMATS, SUMMARY_REPORTERS, type ScanFormat, type ScanTotals} from '../cli/reports/index.js'
import {repositoryRoot} from '../cli/repository.js'
import {reviewSample, type ReviewSample} from '../cli/reports/review-sample.js'
import {animationTruncated, relativePath, type ReportItem} from '../cli/reports/report.js'
import {MissingArgumentError} from '../cli/parse-errors.js'
import {withRawBytes} from '../cli/raw-args.js'
import type {Config} from '../lib/config/load.js'
import type {Limits} from '../lib/config/settings.js'
import type {Engine, ImageInput, ItemResult} from '../lib/engine.js'
import {ModError} from '../lib/errors.js'
import type {ImageLimits} from '../lib/image/decode.js'
import {thumbnail, type Thumbnail} from '../lib/image/thumbnail.js'
import {namedBytes, type FsPath} from '../lib/input/file-names.js'
import {readFileCapped} from '../lib/input/read-capped.js'
import {plural} from '../lib/plural.js'
import {coverageOf} from '../lib/signals/listing.js'
import {POLICY_PLUGINS} from '../lib/signals/registry.js'
import type {Coverage} from '../lib/types.js'
import type {RemoteEngine} from '../cli/remote/engine.js'
import type {RemoteConfig} from '../cli/remote/from-flags.js'
import {checkWritable, refuseNonBaseline, writeWhole} from '../cli/writable.js'

/** Engine results and the inputs that failed before reaching it (not found, not a regular file), in input order. */
async function* inOrder(items: AsyncIterable<ScanItem>, moderate: (inputs: AsyncIterable<ImageInput>) => AsyncIterable<ItemResult>): AsyncGenerator<ItemResult | ScanEntry> {
  // One slot per input as the engine pulls them: null for an input the engine answers, or the entry to report.
  const slots: (ScanEntry | null)[] = []
  async function* feed(): AsyncGenerator<ImageInput> {
    for await (const item of items) {
      if ('entry' in item) slots.push(item.entry)
      else {
        slots.push(null)
        yield item.input
      }
    }
  }
  for await (const result of moderate(feed())) {
    while (slots.length > 0 && slots[0] !== null) yield slots.shift() as ScanEntry
    slots.shift()
    yield result
  }
  for (const e of slots) if (e) yield e
}

/**
 * The thumbnail of a file for the report; none for stdin, a missing path, or what cannot be decoded. A name that is
 * not UTF-8 is shown with `\xNN` escapes, which name no file: its bytes are read then. Only a regular file is read
 * again: a named pipe (`<(curl …)`) was read once, and opening it again would wait for a writer that never comes.
 */
async function thumbnailOf(item: ItemResult | ScanEntry, limits: ImageLimits): Promise<Thumbnail | undefined> {
  if (item.source === '-' || ('error' in item && item.error.code === 'not_found')) return undefined
  const read = async (path: FsPath) => ((await stat(path).catch(() => undefined))?.isFile() ? readFileCapped(path, limits.maxBytes).catch(() => undefined) : undefined)
  const bytes = (await read(item.source)) ?? (/\\x[0-9a-f]{2}/.test(item.source) ? await read(namedBytes(item.source)) : undefined)
  return bytes && thumbnail(bytes, limits)
}

/** Adds the safe sample (thumbnails made now, from the files) and puts the page in place; no half page on a failure. */
async function closeReport(report: HtmlReport, sampled: readonly ItemResult[], limits: ImageLimits, summary: ReportSummary): Promise<void> {
  try {
    for (const item of sampled) await report.add(item, await thumbnailOf(item, limits), {sample: true})
    await report.close(summary)
  } catch (e) {
    await report.abort()
    throw e
  }
}

/**
 * The walk runs ahead of the engine, counting what it finds, so the progress line knows the total long before the
 * last image is scored (listing and sniffing a file costs far less than scoring it). It holds the found inputs
 * (a path and a reader each), never their bytes. `done` once every path has been walked.
 */
async function* walkedAhead(items: AsyncIterable<ScanItem>, found: {count: number; done: boolean}): AsyncGenerator<ScanItem> {
  const ready: ScanItem[] = []
  let wake: (() => void) | undefined
  let failure: {error: unknown} | undefined
  const walk = (async () => {
    try {
      for await (const item of items) {
        found.count++
        ready.push(item)
        wake?.()
      }
    } catch (error) {
      failure = {error}
    }
    found.done = true
    wake?.()
  })()
  try {
    for (;;) {
      const item = ready.shift()
      if (item !== undefined) yield item
      else if (failure) throw failure.error
      else if (found.done) return
      else await new Promise<void>((resolve) => (wake = resolve))
    }
  } finally {
    wake = undefined
    await walk.catch(() => undefined)
  }
}

/** What a scan has found so far: the counts, and what the summary, the baseline and SARIF need. */
interface ScanState {
  counts: Required<Counts>
  /** sha256 of each input's bytes, by source, taken as the engine reads them: baselines and SARIF fingerprints. */
  hashes: Map<string, string>
  /** The flagged images, for --write-baseline. */
  flagged: BaselineItem[]
  skipped: Skipped
  covered: Coverage
  /** Animations whose pictures were not all scored (`animation_truncated`): with --strict, the run exits 2. */
  truncated: number
  /** Inputs the walk has found, ahead of the engine, and whether it is done. */
  found: {count: number; done: boolean}
}

/** Inputs answered: scanned, failed or not found. */
const answered = (c: Required<Counts>): number => c.safe + c.unsafe + c.errors + c.missing

/** "12 of 40" while scanning, "12 of 40+" while the walk is still finding inputs. */
const ofFound = (state: ScanState): string => `${answered(state.counts)} of ${state.found.count}${state.found.done ? '' : '+'}`

/** Counts a result; a flagged one is kept for --write-baseline (by its bytes' sha256, where it was read). */
function tally(state: ScanState, item: ItemResult | ScanEntry, accepted: boolean, sha256: string | undefined): void {
  const {counts} = state
  if (animationTruncated(item)) state.truncated++
  if ('error' in item) counts[item.error.code === 'not_found' ? 'missing' : 'errors']++
  else if (item.is_safe) counts.safe++
  else {
    counts.unsafe++
    if (accepted) counts.accepted++
    if (sha256 !== undefined) state.flagged.push({sha256, source: relativePath(item.source, process.cwd()) ?? '-', categories: item.violations.map((v) => v.name)})
  }
}

/** The run's summary line, with the coverage and what was skipped: stdout with --summary, else stderr or a CI report's end. */
function summaryText(state: ScanState, preset: string, server: string | undefined): string {
  const skips = skippedLine(state.skipped)
  const partial = state.truncated > 0 ? `; ${plural(state.truncated, 'animation')} with pictures left unscored` : ''
  return `${summaryLine(state.counts, coverageHint(state.covered, preset, server))}${skips ? `; ${skips}` : ''}${partial}`
}

/** `--summary --json`: the counts, `accepted` only where a baseline could accept anything. */
function summaryCounts(state: ScanState, withBaseline: boolean): Record<string, unknown> {
  const {accepted, ...rest} = state.counts
  const textOnly = state.covered.text_only ? {text_only: state.covered.text_only} : {}
  const truncated = state.truncated > 0 ? {animation_truncated: state.truncated} : {}
  const scanned = rest.safe + rest.unsafe + rest.errors
  return {...rest, ...(withBaseline ? {accepted} : {}), scanned, skipped: Object.fromEntries(state.skipped), not_evaluated: state.covered.not_evaluated, ...textOnly, ...truncated}
}

type ScanFlags = Interfaces.InferredFlags<(typeof Scan)['flags']>

/** One scan in progress: what it was given, what it has found, and where its results go. */
interface ScanRun {
  flags: ScanFlags
  paths: string[]
  listed: (string | Buffer)[]
  baseline: Baseline | undefined
  config: Config | RemoteConfig
  limits: Limits
  state: ScanState
  report?: HtmlReport
  /** Safe items held for the report's sample (their results only; thumbnails are made at the end for those kept). */
  sample: ReviewSample<ItemResult>
}

/** A result: counted, added to the report (or offered to its sample), and printed unless --only-unsafe hides it. */
async function onResult(run: ScanRun, item: ItemResult | ScanEntry, out: Output<ReportItem, string>): Promise<void> {
  const {state, flags, report} = run
  const sha256 = state.hashes.get(item.source)
  const accepted = 'is_safe' in item && isAccepted(run.baseline, item, sha256)
  tally(state, item, accepted, sha256)
  if (report) {
    if ('error' in item || !item.is_safe) await report.add(item, await thumbnailOf(item, run.limits), {accepted})
    else if (sha256 !== undefined && item.source !== '-') run.sample.offer(sha256, item)
  }
  if (!(flags['only-unsafe'] && 'is_safe' in item && item.is_safe)) out.item({item, accepted, sha256})
}

// Help groups after the common flags (oclif lists the flags without a group first).
const CI = 'CI'
const REPORT = 'REPORT'

export default class Scan extends ModCommand {
  static override summary = 'Moderate images: files, folders (recursively) or - for one image on stdin.'

  static override description = `Results go to stdout; progress and the summary to stderr. Every flag in full, what a folder scan reads, the formats and exit codes: docs/cli.md. The policy's sections apply too:
${POLICY_PLUGINS.sections.flatMap((s) => (s.section.help ? [`- ${s.section.help}`] : [])).join('\n')}`

  static override usage = '<%= command.id %> [PATHS...] [FLAGS]'

  // oclif puts the prompt only before a line that starts with the command: the others have theirs written.
  static override examples = [
    '<%= config.bin %> scan ./photos',
    '$ cat photo.jpg | <%= config.bin %> scan - --ndjson',
    '$ git diff --name-only -z --diff-filter=d origin/main... | <%= config.bin %> scan --files-from - -0 --format github',
    '<%= config.bin %> scan ./assets --baseline mod-baseline.json --format sarif > mod.sarif',
    '$ MOD_API_KEY=secret <%= config.bin %> scan ./uploads --server https://mod.example.com --resume mod-journal.ndjson',
  ]

  static override envVars: EnvVars = [
    ['MOD_MAX_BYTES', 'largest image file (default 25 MiB)'],
    ['MOD_MAX_PIXELS', 'largest decoded image, width x height (default 100000000)'],
    ['MOD_TEXT_BUDGET', "recogniser columns the text rules' reader may spend per image, over the policy's text.budget (default 32768)"],
    ['MOD_JOURNAL_KEY', 'with --server --resume: the secret that signs the journal (default: the API key)'],
  ]

  static override exitCodes: [string, string][] = [
    ['0', 'success: every input was scanned and is safe'],
    ['1', 'a violation was found'],
    ['2', 'usage, configuration or model error; an input not scanned; nothing to scan; with --strict, a partial check; stdout full (results lost)'],
    ...SIGNAL_EXIT_CODES,
  ]

  static override strict = false

  static override args = {
    // ignoreStdin: oclif would otherwise read piped stdin as the missing path, racing --files-from - for it.
    paths: Args.string({description: 'files, folders or - (stdin); none with --files-from', ignoreStdin: true}),
  }

  static override flags = {
    ...formatFlags(SCAN_FORMATS, 'table (default), json, ndjson, sarif, junit or github.', ['summary']),
    baseline: Flags.string({
      description: 'Accept the flagged images a baseline lists.',
      helpValue: 'FILE',
      helpGroup: CI,
    }),
    'write-baseline': Flags.string({
      description: "Write this run's flagged images to a baseline.",
      helpValue: 'FILE',
      helpGroup: CI,
    }),
    'files-from': Flags.string({
      description: 'Also scan the paths listed in FILE (- for stdin).',
      helpValue: 'FILE',
      helpGroup: CI,
    }),
    null: Flags.boolean({
      // -0 as xargs and grep -z spell it; oclif's types allow only letters, its parser takes any character.
      char: '0' as 'a',
      description: 'The --files-from list is NUL-separated.',
      dependsOn: ['files-from'],
      helpGroup: CI,
    }),
    only: onlyFlag,
    'only-unsafe': Flags.boolean({
      description: 'Print only UNSAFE and ERROR results.',
      exclusive: ['summary'],
    }),
    summary: Flags.boolean({
      description: 'Print only the summary, on stdout.',
      exclusive: ['ndjson', 'only-unsafe'],
    }),
    exclude: Flags.string({
      description: "Leave out paths matching this git-ignore pattern.",
      helpValue: 'PATTERN',
      multiple: true,
      multipleNonGreedy: true,
    }),
    'no-ignore': Flags.boolean({
      description: 'Also walk .git and what .gitignore/.ignore exclude.',
    }),
    report: Flags.string({
      description: 'Also write an HTML page to review the flags.',
      helpValue: 'FILE',
      helpGroup: REPORT,
    }),
    'report-sample': wholeNumberFlag({
      description: 'Also put N safe items in the page, to mark misses.',
      helpValue: 'N',
      helpGroup: REPORT,
      min: 0,
      dependsOn: ['report'],
    }),
    strict: Flags.boolean({
      description: 'Exit 2 if a category or animation is not checked whole.',
    }),
    ...policyFlags,
    ...modelFlags,
    ...serverFlags,
    ...batchFlags,
  }

  async run(): Promise<void> {
    const {argv, flags} = await this.parse(Scan)
    const paths = argv as string[]
    const fromList = flags['files-from']
    if (paths.length === 0 && fromList === undefined) throw new MissingArgumentError('Missing 1 required arg: paths  files, folders or - (stdin), or --files-from')
    if (fromList === '-' && paths.includes('-')) throw new Errors.CLIError('--files-from - and the path - both read stdin: give one of them')
    // --summary prints a line or, as --json asks, an object of counts: the formats that are a list of results are not its.
    if (flags.summary && flags.format !== undefined && !['table', 'json'].includes(flags.format)) {
      throw new Errors.CLIError(`--format ${flags.format} and --summary cannot be used together: --summary prints one line, or with --format json one object of counts`)
    }
    if (flags.server === undefined) refuseRemoteFlags(this.argv, 'scan')
    const stdinProblem = stdinPathProblem('scan', paths, process.stdin)
    if (stdinProblem) throw new Errors.CLIError(stdinProblem)
    if (flags['write-baseline']) {
      await checkWritable('--write-baseline', flags['write-baseline'])
      await refuseNonBaseline('--write-baseline', flags['write-baseline'])
    }
    // Any of these may be a FIFO or a pipe that nothing writes to: a stop signal still ends the command.
    const baseline = flags.baseline === undefined ? undefined : await this.untilStopped(readBaseline(flags.baseline))
    // Typed paths are a list too, but a command waiting without a word looks stuck.
    if (fromList === '-' && process.stdin.isTTY) this.logToStderr(`mod: reading the paths to scan from the terminal, one ${flags.null ? 'per NUL' : 'a line'}; end with Ctrl-D`)
    const listed = fromList === undefined ? [] : await this.untilStopped(readFileList(fromList, flags.null, process.stdin))
    const {engine, config} = await this.untilStopped(this.openEngine(flags))
    this.notePolicy(config)
    const state: ScanState = {
      counts: {safe: 0, unsafe: 0, accepted: 0, errors: 0, missing: 0},
      hashes: new Map(),
      flagged: [],
      skipped: new Map(),
      covered: {evaluated: 0, total: 0, not_evaluated: []},
      truncated: 0,
      found: {count: 0, done: false},
    }
    const run: ScanRun = {flags, paths, listed, baseline, config, limits: config.settings.engine.limits, state, sample: reviewSample(flags['report-sample'] ?? 0)}
    let out: Output<ReportItem, string>
    try {
      await engine.load()
      state.covered = await this.checkCoverage(engine, config.preset, flags)
      run.report = flags.report ? await openHtmlReport(flags.report, process.cwd()) : undefined
      out = await this.scanAll(engine, run)
    } catch (e) {
      await run.report?.abort()
      throw e
    } finally {
      await engine.close()
    }
    this.sayStopped(`${ofFound(state)} files: ${summaryLine(state.counts)}`)
    if (out.closed || this.interrupt.signal.aborted) return void (await run.report?.abort())
    await this.finish(run)
  }

  /** The engine that scores: this machine's, or with --server the server's. */
  private async openEngine(flags: ScanFlags) {
    const {server} = flags
    if (server === undefined) return engineFromFlags(flags, process.env, {only: flags.only})
    const {remoteFromFlags} = await import('../cli/remote/from-flags.js')
    return remoteFromFlags({...flags, server}, this.argv, (line) => this.logToStderr(line), this.interrupt.signal)
  }

  /** What the models loaded can score; with --strict a category they cannot fails the run before the first image. */
  private async checkCoverage(engine: Engine | RemoteEngine, preset: string, flags: ScanFlags): Promise<Coverage> {
    const covered = coverageOf(await engine.categoryStates())
    if (covered.not_evaluated.length > 0) {
      this.logToStderr(notEvaluatedLine(covered.not_evaluated, preset, flags.server))
      if (flags.strict) this.exit(EXIT_ERROR)
    }
    return covered
  }

  /**
   * Every input, walked ahead of the engine and answered in input order, each result printed as it comes; the
   * output is closed whatever stops the scan (stdout stays valid JSON; the failure itself goes to stderr).
   */
  private async scanAll(engine: Engine | RemoteEngine, run: ScanRun): Promise<Output<ReportItem, string>> {
    const {flags, state, paths, listed, limits} = run
    const progress = this.startProgress('Scanning')
    // Reports name files relative to the repository the working folder is in (the working folder outside git).
    const root = (await repositoryRoot(process.cwd())) ?? process.cwd()
    const info = {categories: engine.policy.categories, version: this.config.version, cwd: process.cwd(), root}
    const format = chosenFormat(flags) as ScanFormat
    const out = this.output(scanReporter(format, info, coverage(state.covered), flags.summary))
    // One set of the paths reached for both: a listed file that a folder given holds is scanned once.
    // A video in a folder or a list is an error entry (mod scan-video scores it), never skipped as not an image.
    // Once per repository (two folders given may share one): which ignore files were not applied, and git's reason.
    const told = new Set<string>()
    const gitUnknown = (top: string, why: string) => {
      if (told.has(top)) return
      told.add(top)
      this.logToStderr(`mod: warning: git cannot list the files of the repository ${top} (${why}): its .gitignore and .ignore files are not applied there, so that none hides a committed image`)
    }
    const walking = {exclude: flags.exclude ?? [], vcsIgnore: !flags['no-ignore'], reached: new Set<string>(), videos: true, gitUnknown}
    async function* all(): AsyncGenerator<ScanItem> {
      yield* scanInputs(withRawBytes(paths), limits.maxBytes, state.skipped, process.stdin, walking)
      yield* scanInputs(listed, limits.maxBytes, state.skipped, process.stdin, {...walking, listed: true})
    }
    const items = walkedAhead(hashedInputs(all(), state.hashes), state.found)
    const results = inOrder(items, (inputs) => engine.moderateMany(inputs))[Symbol.asyncIterator]()
    // A stop signal ends the loop even while the next result waits on an input that may never end (stdin, a FIFO).
    const stopped = this.whenStopped()
    try {
      for (;;) {
        const pending = results.next()
        // Abandoned at a stop: its failure then (the engine closing under it) must not count as unhandled.
        pending.catch(() => {})
        const next = await Promise.race([pending, stopped])
        if (next === 'stopped' || next.done || out.closed) break
        await onResult(run, next.value, out)
        progress.update(`Scanning ${ofFound(state)}: ${summaryLine(state.counts)}`)
      }
    } finally {
      // As a for await loop ends its iterator (the walk stops); not after a stop, where a read may still hold it.
      if (!this.interrupt.signal.aborted) await results.return?.(undefined)
      progress.finish()
      // A stopped run's CI report says so, as the stderr line does: its counts are not a finished run's.
      const summary = summaryText(state, run.config.preset, flags.server)
      out.end(this.stoppedBy ? `stopped by ${this.stoppedBy} after ${ofFound(state)} files: ${summary}` : summary)
    }
    return out
  }

  /** --summary's one result on stdout: the summary line, or its counts as JSON. */
  private printSummary({flags, state, config, baseline}: ScanRun): void {
    const totals: ScanTotals = {line: summaryText(state, config.preset, flags.server), counts: summaryCounts(state, baseline !== undefined)}
    this.printResult(SUMMARY_REPORTERS[chosenFormat(flags) === 'json' ? 'json' : 'table'](), totals)
  }

  /** A finished scan: the report page, the baseline, the summary where the format wants it, and the exit code. */
  private async finish(run: ScanRun): Promise<void> {
    const {flags, state, report} = run
    const {counts} = state
    const scanned = counts.safe + counts.unsafe + counts.errors
    const skips = skippedLine(state.skipped)
    if (scanned === 0 && counts.missing === 0 && flags['files-from'] === undefined) {
      await report?.abort()
      // A script that reads --summary's counts gets them, all 0, beside the error.
      if (flags.summary) this.printSummary(run)
      throw new ModError('not_found', `nothing was scanned in ${run.paths.join(' ')}${skips ? `: ${skips}` : ': no images'}`)
    }
    if (report) {
      const sampled = run.sample.chosen()
      await closeReport(report, sampled, run.limits, {...counts, scanned, not_evaluated: state.covered.not_evaluated, coverage: coverage(state.covered), sampled: sampled.length})
    }
    if (flags['write-baseline']) {
      await writeWhole('--write-baseline', flags['write-baseline'], baselineText(state.flagged))
      this.logToStderr(`mod: baseline: wrote ${state.flagged.length} flagged ${state.flagged.length === 1 ? 'image' : 'images'} to ${flags['write-baseline']}`)
    }
    // Every format: a run that exits 2 says why on the terminal, and --json > out.json keeps stdout one document.
    if (flags.summary) this.printSummary(run)
    else this.logToStderr(summaryText(state, run.config.preset, flags.server))
    // A gate never passes on a partial check: with --strict, an animation not scored whole fails the run as an error.
    const partial = flags.strict === true && state.truncated > 0
    if (partial) this.logToStderr(`mod: --strict: ${plural(state.truncated, 'animation')} had pictures left unscored (more than are scored per animation)`)
    const failed = counts.errors > 0 || counts.missing > 0 || partial
    const code = counts.unsafe > counts.accepted ? EXIT_VIOLATION : failed ? EXIT_ERROR : EXIT_SAFE
    if (code !== EXIT_SAFE) this.exit(code)
  }
}
