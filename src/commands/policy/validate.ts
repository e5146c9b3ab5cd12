import {join} from 'node:path'

import {Args, Errors} from '@oclif/core'

import {ModCommand} from '../../cli/base-command.js'
import {errorText, EXIT_ERROR, SIGNAL_EXIT_CODES} from '../../cli/errors.js'
import {isModError} from '../../lib/errors.js'
import {chosenFormat, formatFlags} from '../../cli/output.js'
import {verifySections} from '../../cli/policy-files.js'
import {oneResultReporters, PLAIN_FORMATS} from '../../cli/reports/reporter.js'
import {buildPolicy, sectionSummaryLines, summarizePolicy, validatePolicyFile} from '../../lib/config/policy.js'
import {longPresetPrompts, type LongPrompt} from '../../lib/model/prompt-length.js'
import {formatProblems, readPolicyStream, type PolicySummary} from '../../lib/policy/load.js'
import type {PolicyProblem} from '../../lib/policy/schema.js'

const SHOWN_CHARS = 60

function describeLong(p: LongPrompt): string {
  const text = p.text.length > SHOWN_CHARS ? `${p.text.slice(0, SHOWN_CHARS)}…` : p.text
  return p.category === null ? `neutral prompt ${JSON.stringify(text)}` : `${p.kind} ${JSON.stringify(text)} of category ${p.category}`
}

/** What --format json prints: whether the file is valid, its problems, its summary, and what its sections add. */
interface ValidationResult {
  valid: boolean
  problems: PolicyProblem[]
  summary: PolicySummary | null
  [section: string]: unknown
}

/** A check's result, and the summary's lines for the table (none when the file is not valid). */
interface Validation {
  result: ValidationResult
  lines: {label: string; text: string}[]
}

/** "<file>: valid" and the summary, label by label; nothing for a file that is not valid (its problems are on stderr). */
function validationTable(path: string): (v: Validation) => string[] {
  return (v) => (v.result.valid ? [`${path}: valid`, ...v.lines.map((l) => `  ${`${l.label}:`.padEnd(14)}${l.text}`)] : [])
}

function summaryLines(summary: PolicySummary): {label: string; text: string}[] {
  const list = (names: string[]) => (names.length > 0 ? names.join(', ') : 'none')
  return [
    {label: 'categories', text: String(summary.categories)},
    {label: 'custom', text: list(summary.custom)},
    {label: 'changed', text: list(summary.changed)},
    {label: 'disabled', text: list(summary.disabled)},
    {label: 'preset', text: summary.preset ?? 'not set (flag, MOD_PRESET or fast)'},
    {label: 'trim_borders', text: String(summary.trim_borders)},
  ]
}

export default class PolicyValidate extends ModCommand {
  static override description = `Check a policy file and report every problem with its line and column.

A valid file prints a summary. An invalid one prints one "file:line:column: message" line per problem on stderr and exits 2; with --format json (or --json), {valid, problems, summary} goes to stdout either way, the problem lines still on stderr.

The file - reads the policy from stdin (\`cat policy.yaml | mod policy validate -\`), named "stdin" in the problem lines; the files it names are then read relative to the working folder.

Hash lists named under hash_lists: are read (paths relative to the policy file) and each bad line is reported as "list:line: message".

Text rules are checked too: their categories, their regular expressions (RE2 syntax: one that does not compile, uses lookaround or a backreference, or compiles to more than 1000 instructions; the problem named on its line) and their word list files (read relative to the policy file).

A prompt longer than the text encoder's context (77 tokens, start and end included) is truncated when it is encoded, its end token kept: each such prompt gets a warning line on stderr, and the exit code stays 0.`

  static override examples = [
    '<%= config.bin %> policy validate .modrc.yaml',
    '<%= config.bin %> policy validate policy.yaml --json',
    '<%= config.bin %> policy validate - < policy.yaml',
  ]

  static override exitCodes: [string, string][] = [
    ['0', 'the file is valid'],
    ['2', 'the file is not valid, or cannot be read; stdout could not be written (a full disk)'],
    ...SIGNAL_EXIT_CODES,
  ]

  static override args = {
    file: Args.string({description: 'policy YAML file, or - for stdin', required: true, ignoreStdin: true}),
  }

  static override flags = formatFlags(PLAIN_FORMATS, 'table (default: the summary of a valid file), json ({valid, problems, summary}, also for a file that is not valid) or ndjson (the same on one line).')

  async run(): Promise<void> {
    const {args, flags} = await this.parse(PolicyValidate)
    const fromStdin = args.file === '-'
    if (fromStdin && process.stdin.isTTY) {
      throw new Errors.CLIError('the file - reads the policy from stdin, and stdin is a terminal: pipe it in (mod policy validate - < policy.yaml)')
    }
    // From stdin, the files the policy names are read relative to the working folder.
    const path = fromStdin ? join(process.cwd(), 'stdin') : args.file
    const shown = fromStdin ? 'stdin' : args.file
    const reporters = oneResultReporters(validationTable(shown), (v: Validation) => v.result)
    const validate = async () => validatePolicyFile(path, fromStdin ? await this.untilStopped(readPolicyStream(process.stdin)) : undefined)
    const validated = await validate().catch((e: unknown) => {
      // A file that cannot be read (missing, a folder, too large) is still one JSON result for a script to parse.
      if (!isModError(e) || chosenFormat(flags) === 'table') throw e
      this.logToStderr(errorText(e))
      process.exitCode = EXIT_ERROR
      this.printResult(reporters[chosenFormat(flags)](), {result: {valid: false, problems: [{line: 0, column: 0, message: e.message}], summary: null}, lines: []})
      return undefined
    })
    if (validated === undefined) return
    const {problems, file, read} = validated
    // The files the sections name are read whatever else is wrong, so that one round reports every problem.
    const checks = await verifySections(path, read)
    const filesValid = checks.every((c) => c.check.problems.length === 0)
    const summary = file === undefined ? null : summarizePolicy(file)
    if (file !== undefined) {
      const policy = buildPolicy(file)
      const long = await longPresetPrompts(policy, policy.preset ?? 'fast')
      for (const p of long.prompts) {
        this.logToStderr(`${shown}: warning: ${describeLong(p)} is longer than ${long.contextLength} tokens and will be truncated`)
      }
    }
    for (const line of formatProblems(shown, problems)) this.logToStderr(line)
    for (const {check} of checks) for (const p of check.problems) this.logToStderr(`${p.file}:${p.line}: ${p.message}`)
    const valid = file !== undefined && summary !== null && filesValid
    if (!valid) process.exitCode = EXIT_ERROR
    const lines = valid ? [...summaryLines(summary), ...sectionSummaryLines(file), ...checks.flatMap((c) => c.check.lines)] : []
    const outputs = checks.flatMap(({key, check}) => (check.output === undefined ? [] : [[key, check.output] as const]))
    const result: ValidationResult = {valid: summary !== null && filesValid, problems, summary, ...Object.fromEntries(outputs)}
    this.printResult(reporters[chosenFormat(flags)](), {result, lines})
  }
}
