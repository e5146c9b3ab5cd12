import {dirname, resolve} from 'node:path'

import {Args} from '@oclif/core'

import {ModCommand} from '../../cli/base-command.js'
import {EXIT_ERROR, SIGNAL_EXIT_CODES} from '../../cli/errors.js'
import {longPresetPrompts, type LongPrompt} from '../../lib/model/prompt-length.js'
import {buildPolicy, formatProblems, summarizePolicy, validatePolicyFile, type PolicySummary} from '../../lib/policy/load.js'
import type {HashListEntry, PolicyProblem} from '../../lib/policy/schema.js'
import {checkHashListFile} from '../../lib/signals/pdq/list-load.js'

const SHOWN_CHARS = 60

/** A hash list of the policy, checked: its entries, or its problems (`line` 0 for the file as a whole). */
interface ListCheck {
  name: string
  file: string
  entries: number
  problems: {line: number; message: string}[]
}

/** Reads each list file (relative to the policy file's folder) and reports its bad lines. */
async function checkLists(policyFile: string, lists: HashListEntry[]): Promise<ListCheck[]> {
  return Promise.all(
    lists.map(async (l) => {
      const file = resolve(dirname(policyFile), l.file)
      try {
        const {count, errors} = await checkHashListFile(file)
        return {name: l.name, file, entries: count, problems: errors}
      } catch (e) {
        return {name: l.name, file, entries: 0, problems: [{line: 0, message: (e as Error).message}]}
      }
    }),
  )
}

function describeLong(p: LongPrompt): string {
  const text = p.text.length > SHOWN_CHARS ? `${p.text.slice(0, SHOWN_CHARS)}…` : p.text
  return p.category === null ? `neutral prompt ${JSON.stringify(text)}` : `${p.kind} ${JSON.stringify(text)} of category ${p.category}`
}

export default class PolicyValidate extends ModCommand {
  static override description = `Check a policy file and report every problem with its line and column.

A valid file prints a summary. An invalid one prints one "file:line:column: message" line per problem on stderr and exits 2; with --json, {valid, problems, summary} goes to stdout either way.

Hash lists named under hash_lists: are read (paths relative to the policy file) and each bad line is reported as "list:line: message".

Text rules are checked too: their categories, their regular expressions (RE2 syntax: one that does not compile, uses lookaround or a backreference, or compiles to more than 1000 instructions; the problem named on its line) and their word list files (read relative to the policy file).

A prompt longer than the text encoder's context (77 tokens, start and end included) is truncated when it is encoded, its end token kept: each such prompt gets a warning line on stderr, and the exit code stays 0.`

  static override examples = [
    '<%= config.bin %> policy validate .modrc.yaml',
    '<%= config.bin %> policy validate policy.yaml --json',
  ]

  static override exitCodes: [string, string][] = [
    ['0', 'the file is valid'],
    ['2', 'the file is not valid, or cannot be read'],
    ...SIGNAL_EXIT_CODES,
  ]

  static override enableJsonFlag = true

  static override args = {
    file: Args.string({description: 'policy YAML file', required: true}),
  }

  async run(): Promise<{valid: boolean; problems: PolicyProblem[]; summary: PolicySummary | null; hash_lists?: ListCheck[]}> {
    const {args} = await this.parse(PolicyValidate)
    const {problems, file, read} = await validatePolicyFile(args.file)
    // The lists are read whatever else is wrong, so that one round reports every problem.
    const lists = await checkLists(args.file, read?.hash_lists ?? [])
    const listsValid = lists.every((l) => l.problems.length === 0)
    const summary = file === undefined ? null : summarizePolicy(file)
    if (file !== undefined) {
      const policy = buildPolicy(file)
      const long = await longPresetPrompts(policy, policy.preset ?? 'fast')
      for (const p of long.prompts) {
        this.logToStderr(`${args.file}: warning: ${describeLong(p)} is longer than ${long.contextLength} tokens and will be truncated`)
      }
    }
    for (const line of formatProblems(args.file, problems)) this.logToStderr(line)
    // A list file that cannot be read is reported on the line of its `file:` in the policy.
    lists.forEach((l, i) => {
      const at = read?.hash_lists?.[i]?.line
      for (const p of l.problems) this.logToStderr(p.line === 0 ? `${args.file}:${at}: hash_lists.${l.name}: ${p.message}` : `${l.file}:${p.line}: ${p.message}`)
    })
    if (summary === null || !listsValid) {
      process.exitCode = EXIT_ERROR
    } else {
      const list = (names: string[]) => (names.length > 0 ? names.join(', ') : 'none')
      this.log(`${args.file}: valid`)
      this.log(`  categories:   ${summary.categories}`)
      this.log(`  custom:       ${list(summary.custom)}`)
      this.log(`  changed:      ${list(summary.changed)}`)
      this.log(`  disabled:     ${list(summary.disabled)}`)
      this.log(`  preset:       ${summary.preset ?? 'not set (flag, MOD_PRESET or fast)'}`)
      this.log(`  trim_borders: ${summary.trim_borders}`)
      this.log(`  text rules:   ${list(summary.text_rules)}`)
      for (const l of lists) this.log(`  hash list:    ${l.name}: ${l.entries} ${l.entries === 1 ? 'hash' : 'hashes'} in ${l.file}`)
    }
    return {valid: summary !== null && listsValid, problems, summary, ...(lists.length > 0 ? {hash_lists: lists} : {})}
  }
}
