import {Args} from '@oclif/core'

import {ModCommand} from '../../cli/base-command.js'
import {EXIT_ERROR} from '../../cli/errors.js'
import {formatProblems, readPolicyText, summarizePolicy, type PolicySummary} from '../../lib/policy/load.js'
import {validatePolicyText, type PolicyProblem} from '../../lib/policy/schema.js'

export default class PolicyValidate extends ModCommand {
  static override description = `Check a policy file and report every problem with its line and column.

A valid file prints a summary. An invalid one prints one "file:line:column: message" line per problem on stderr and exits 2; with --json, {valid, problems, summary} goes to stdout either way.`

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
    const text = await readPolicyText(args.file)
    const {problems, file} = validatePolicyText(text)
    const summary = file === undefined ? null : summarizePolicy(file)
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
    }
    return {valid: summary !== null, problems, summary}
  }
}
