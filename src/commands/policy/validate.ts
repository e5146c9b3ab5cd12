import {Args} from '@oclif/core'

import {ModCommand} from '../../cli/base-command.js'
import {EXIT_ERROR} from '../../cli/errors.js'
import {longPresetPrompts, type LongPrompt} from '../../lib/model/prompt-length.js'
import {buildPolicy, formatProblems, summarizePolicy, validatePolicyFile, type PolicySummary} from '../../lib/policy/load.js'
import type {PolicyProblem} from '../../lib/policy/schema.js'

const SHOWN_CHARS = 60

function describeLong(p: LongPrompt): string {
  const text = p.text.length > SHOWN_CHARS ? `${p.text.slice(0, SHOWN_CHARS)}…` : p.text
  return p.category === null ? `neutral prompt ${JSON.stringify(text)}` : `${p.kind} ${JSON.stringify(text)} of category ${p.category}`
}

export default class PolicyValidate extends ModCommand {
  static override description = `Check a policy file and report every problem with its line and column.

A valid file prints a summary. An invalid one prints one "file:line:column: message" line per problem on stderr and exits 2; with --json, {valid, problems, summary} goes to stdout either way.

Text rules are checked too: their categories, their regular expressions (the problem named on its line) and their word list files (read relative to the policy file).

A prompt longer than the text encoder's context (77 tokens, start and end included) is truncated when it is encoded, its end token kept: each such prompt gets a warning line on stderr, and the exit code stays 0.`

  static override examples = [
    '<%= config.bin %> policy validate .modrc.yaml',
    '<%= config.bin %> policy validate policy.yaml --json',
  ]

  static override exitCodes: [string, string][] = [
    ['0', 'the file is valid'],
    ['2', 'the file is not valid, or cannot be read'],
  ]

  static override enableJsonFlag = true

  static override args = {
    file: Args.string({description: 'policy YAML file', required: true}),
  }

  async run(): Promise<{valid: boolean; problems: PolicyProblem[]; summary: PolicySummary | null}> {
    const {args} = await this.parse(PolicyValidate)
    const {problems, file} = await validatePolicyFile(args.file)
    const summary = file === undefined ? null : summarizePolicy(file)
    if (file !== undefined) {
      const policy = buildPolicy(file)
      const long = await longPresetPrompts(policy, policy.preset ?? 'fast')
      for (const p of long.prompts) {
        this.logToStderr(`${args.file}: warning: ${describeLong(p)} is longer than ${long.contextLength} tokens and will be truncated`)
      }
    }
    if (summary === null) {
      for (const line of formatProblems(args.file, problems)) this.logToStderr(line)
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
    }
    return {valid: summary !== null, problems, summary}
  }
}
