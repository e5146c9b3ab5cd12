import {Args, Errors, Flags} from '@oclif/core'

import {ModCommand} from '../cli/base-command.js'
import {baselineText, hashedInputs, isAccepted, readBaseline, writeAtomically, type BaselineItem} from '../cli/baseline.js'
import {EXIT_ERROR, EXIT_SAFE, EXIT_VIOLATION, SIGNAL_EXIT_CODES} from '../cli/errors.js'
import {engineFromFlags} from '../cli/engine.js'
import {modelFlags, onlyFlag, policyFlags} from '../cli/flags.js'
import {coverage, coverageHint, formatRow, notEvaluatedLine, summaryLine, type Counts} from '../cli/format.js'
import {readFileList} from '../cli/files-from.js'
import {batchFlags, serverFlags} from '../cli/remote/flags.js'
import type {EnvVars} from '../cli/help.js'
import {openHtmlReport, type HtmlReport, type ReportSummary} from '../cli/reports/html-report.js'
import {scanInputs, skippedLine, type ScanEntry, type ScanItem, type Skipped} from '../cli/inputs.js'
import {reporterFor, SCAN_FORMATS, type ScanFormat} from '../cli/reports/index.js'
import {repositoryRoot} from '../cli/repository.js'
import {reviewSample} from '../cli/reports/review-sample.js'
import {relativePath} from '../cli/reports/report.js'
import {printableLine} from '../cli/visible.js'
import {MissingArgumentError} from '../cli/parse-errors.js'
import {withRawBytes} from '../cli/raw-args.js'
import type {ImageInput, ItemResult} from '../lib/engine.js'
import {ModError} from '../lib/errors.js'
import type {ImageLimits} from '../lib/image/decode.js'
import {thumbnail, type Thumbnail} from '../lib/image/thumbnail.js'
import {readFileCapped} from '../lib/input/read-capped.js'
import {coverageOf} from '../lib/signals/listing.js'
import {POLICY_PLUGINS} from '../lib/signals/registry.js'
import type {Coverage} from '../lib/types.js'

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

/** The thumbnail of a file for the report; none for stdin, a missing path, or what cannot be decoded. */
async function thumbnailOf(item: ItemResult | ScanEntry, limits: ImageLimits): Promise<Thumbnail | undefined> {
  if (item.source === '-' || ('error' in item && item.error.code === 'not_found')) return undefined
  const bytes = await readFileCapped(item.source, limits.maxBytes).catch(() => undefined)
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

// Help groups after the common flags (oclif lists the flags without a group first).
const CI = 'CI'
const REPORT = 'REPORT'

export default class Scan extends ModCommand {
  static override summary = 'Moderate images: files, folders (recursively) or - for one image on stdin.'

  static override description = `Results go to stdout; progress and the summary to stderr. Every flag in full, what a folder scan reads, the formats and exit codes: docs/cli.md. The policy's sections apply too:
${POLICY_PLUGINS.sections.flatMap((s) => (s.section.help ? [`- ${s.section.help}`] : [])).join('\n')}`

  static override usage = '<%= command.id %> [PATHS...] [FLAGS]'

  static override examples = [
    '<%= config.bin %> scan ./photos',
    'cat photo.jpg | <%= config.bin %> scan - --ndjson',
    'git diff --name-only -z --diff-filter=d origin/main | <%= config.bin %> scan --files-from - -0 --format github',
    '<%= config.bin %> scan ./assets --baseline mod-baseline.json --format sarif > mod.sarif',
    'MOD_API_KEY=secret <%= config.bin %> scan ./uploads --server https://mod.example.com --resume mod-journal.ndjson',
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
    ['2', 'usage, configuration or model error; an input that could not be scanned; nothing to scan; with --strict, a category that cannot be evaluated'],
    ...SIGNAL_EXIT_CODES,
  ]

  static override strict = false

  static override args = {
    // ignoreStdin: oclif would otherwise read piped stdin as the missing path, racing --files-from - for it.
    paths: Args.string({description: 'files, folders or - (stdin); none with --files-from', ignoreStdin: true}),
  }

  static override flags = {
    json: Flags.boolean({description: 'Print one JSON array (same as --format json).', exclusive: ['ndjson', 'format']}),
    ndjson: Flags.boolean({description: 'Print one JSON result per line (--format ndjson).', exclusive: ['json', 'format']}),
    format: Flags.string({
      description: 'table (default), json, ndjson, sarif, junit or github.',
      helpValue: 'FORMAT',
      options: [...SCAN_FORMATS],
      exclusive: ['json', 'ndjson', 'summary'],
    }),
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
    'report-sample': Flags.integer({
      description: 'Also put N safe items in the page, to mark misses.',
      helpValue: 'N',
      helpGroup: REPORT,
      min: 0,
      dependsOn: ['report'],
    }),
    strict: Flags.boolean({
      description: 'Exit 2 if a category cannot be evaluated (no model).',
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
    const format: ScanFormat = (flags.format as ScanFormat | undefined) ?? (flags.json ? 'json' : flags.ndjson ? 'ndjson' : 'table')
    // Any of these may be a FIFO or a pipe that nothing writes to: a stop signal still ends the command.
    const baseline = flags.baseline === undefined ? undefined : await this.untilStopped(readBaseline(flags.baseline))
    const listed = fromList === undefined ? [] : await this.untilStopped(readFileList(fromList, flags.null, process.stdin))
    const {server} = flags
    const {engine, config} =
      server === undefined
        ? await this.untilStopped(engineFromFlags(flags, process.env, {only: flags.only}))
        : await this.untilStopped(
            import('../cli/remote/from-flags.js').then(({remoteFromFlags}) => remoteFromFlags({...flags, server}, this.argv, (line) => this.logToStderr(line), this.interrupt.signal)),
          )
    this.notePolicy(config)
    const out = process.stdout
    let closed = false
    // `| head -1`: once the reader is gone, stop scanning instead of working for nobody.
    const onOutError = (e: NodeJS.ErrnoException): void => {
      if (e.code !== 'EPIPE') throw e
      closed = true
    }
    out.on('error', onOutError)
    const counts: Required<Counts> = {safe: 0, unsafe: 0, accepted: 0, errors: 0, missing: 0}
    // sha256 of each input's bytes, by source, taken as the engine reads them: baselines and SARIF fingerprints.
    const hashes = new Map<string, string>()
    const flagged: BaselineItem[] = []
    const summaryText = (): string => {
      const skips = skippedLine(skipped)
      return `${summaryLine(counts, coverageHint(covered, config.preset, server))}${skips ? `; ${skips}` : ''}`
    }
    // Reports name files relative to the repository the working folder is in (the working folder outside git).
    const root = (await repositoryRoot(process.cwd())) ?? process.cwd()
    const reporter = reporterFor(format, {categories: engine.policy.categories, version: this.config.version, cwd: process.cwd(), root})
    const skipped: Skipped = new Map()
    let covered: Coverage = {evaluated: 0, total: 0, not_evaluated: []}
    const found = {count: 0, done: false}
    // Results printed: all, or with --only-unsafe the UNSAFE and ERROR ones; --summary prints none.
    let printed = 0
    let report: HtmlReport | undefined
    // Safe items held for the report's sample (their results only; thumbnails are made at the end for those kept).
    const sample = reviewSample<ItemResult>(flags['report-sample'] ?? 0)
    try {
      await engine.load()
      covered = coverageOf(await engine.categoryStates())
      if (covered.not_evaluated.length > 0) {
        this.logToStderr(notEvaluatedLine(covered.not_evaluated, config.preset, server))
        // Known before the first image: a gate fails at once rather than after scanning everything.
        if (flags.strict) this.exit(EXIT_ERROR)
      }
      const partial = coverage(covered)
      report = flags.report ? await openHtmlReport(flags.report, process.cwd()) : undefined
      const progress = this.startProgress('Scanning')
      const write = (text: string): void => progress.above(() => out.write(text))
      const listing = format === 'json' && !flags.summary
      if (listing) write('[')
      if (reporter) write(reporter.start())
      const {limits} = config.settings.engine
      // One set of the paths reached for both: a listed file that a folder given holds is scanned once.
      const walking = {exclude: flags.exclude ?? [], vcsIgnore: !flags['no-ignore'], reached: new Set<string>()}
      async function* all(): AsyncGenerator<ScanItem> {
        yield* scanInputs(withRawBytes(paths), limits.maxBytes, skipped, process.stdin, walking)
        yield* scanInputs(listed, limits.maxBytes, skipped, process.stdin, {...walking, listed: true})
      }
      const items = walkedAhead(hashedInputs(all(), hashes), found)
      const closeArray = (): void => {
        progress.finish()
        if (listing && !closed) out.write(`${printed > 0 ? '\n' : ''}]\n`)
        if (reporter && !closed) out.write(reporter.end(summaryText()))
      }
      try {
        for await (const item of inOrder(items, (inputs) => engine.moderateMany(inputs))) {
          if (closed || this.interrupt.signal.aborted) break
          const sha256 = hashes.get(item.source)
          const accepted = 'is_safe' in item && isAccepted(baseline, item, sha256)
          if ('error' in item) counts[item.error.code === 'not_found' ? 'missing' : 'errors']++
          else if (item.is_safe) counts.safe++
          else {
            counts.unsafe++
            if (accepted) counts.accepted++
            if (sha256 !== undefined) flagged.push({sha256, source: relativePath(item.source, process.cwd()) ?? '-', categories: item.violations.map((v) => v.name)})
          }
          if (report) {
            if ('error' in item || !item.is_safe) await report.add(item, await thumbnailOf(item, limits), {accepted})
            else if (sha256 !== undefined && item.source !== '-') sample.offer(sha256, item)
          }
          const shown = !flags.summary && !(flags['only-unsafe'] && 'is_safe' in item && item.is_safe)
          if (shown) {
            printed++
            // An accepted result says so in every format; its fields are otherwise the engine's.
            const json = (): string => JSON.stringify(accepted ? {...item, accepted_by_baseline: true} : item)
            if (reporter) write(reporter.item({item, accepted, sha256}))
            else if (format === 'json') write(`${printed > 1 ? ',' : ''}\n${json()}`)
            else if (format === 'ndjson') write(`${json()}\n`)
            // A name or a message may hold anything (a file's name, a server's text): each row stays one line.
            else write(`${printableLine(formatRow(item, partial))}${accepted ? '  (accepted by the baseline)' : ''}\n`)
          }
          const done = counts.safe + counts.unsafe + counts.errors + counts.missing
          progress.update(`Scanning ${done} of ${found.count}${found.done ? '' : '+'}: ${summaryLine(counts)}`)
        }
      } finally {
        // stdout stays valid JSON whatever stops the scan; the failure itself goes to stderr.
        closeArray()
      }
    } catch (e) {
      await report?.abort()
      throw e
    } finally {
      await engine.close()
    }
    if (this.stoppedBy) {
      const done = counts.safe + counts.unsafe + counts.errors + counts.missing
      this.logToStderr(`mod: stopped by ${this.stoppedBy} after ${done} of ${found.count}${found.done ? '' : '+'} files: ${summaryLine(counts)}`)
    }
    if (closed || this.interrupt.signal.aborted) {
      await report?.abort()
      return
    }
    const total = counts.safe + counts.unsafe + counts.errors
    const skips = skippedLine(skipped)
    if (total === 0 && counts.missing === 0 && fromList === undefined) {
      await report?.abort()
      throw new ModError('not_found', `nothing was scanned in ${paths.join(' ')}${skips ? `: ${skips}` : ': no images'}`)
    }
    if (report) {
      const sampled = sample.chosen()
      await closeReport(report, sampled, config.settings.engine.limits, {...counts, scanned: total, not_evaluated: covered.not_evaluated, coverage: coverage(covered), sampled: sampled.length})
    }
    const summary = summaryText()
    if (flags['write-baseline']) {
      await writeAtomically(flags['write-baseline'], baselineText(flagged))
      this.logToStderr(`mod: baseline: wrote ${flagged.length} flagged ${flagged.length === 1 ? 'image' : 'images'} to ${flags['write-baseline']}`)
    }
    if (flags.summary && flags.json) {
      // `accepted` only where a baseline could accept anything.
      const {accepted, ...rest} = counts
      const textOnly = covered.text_only ? {text_only: covered.text_only} : {}
      this.log(JSON.stringify({...rest, ...(baseline ? {accepted} : {}), scanned: total, skipped: Object.fromEntries(skipped), not_evaluated: covered.not_evaluated, ...textOnly}))
    } else if (flags.summary) this.log(summary)
    else if (format !== 'json' && format !== 'ndjson') this.logToStderr(summary)
    else if (skips) this.logToStderr(skips)
    const failed = counts.errors > 0 || counts.missing > 0
    const code = counts.unsafe > counts.accepted ? EXIT_VIOLATION : failed ? EXIT_ERROR : EXIT_SAFE
    if (code !== EXIT_SAFE) this.exit(code)
  }
}
