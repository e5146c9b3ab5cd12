import {Args, Command, Flags} from '@oclif/core'

import {describeError, EXIT_ERROR} from '../../cli/errors.js'
import {longPresetPrompts, type LongPrompt} from '../../lib/model/prompt-length.js'
import {buildPolicy, formatProblems, readPolicyText, summarizePolicy} from '../../lib/policy/load.js'
import {validatePolicyText} from '../../lib/policy/schema.js'

const SHOWN_CHARS = 60

function describeLong(p: LongPrompt): string {
  const text = p.text.length > SHOWN_CHARS ? `${p.text.slice(0, SHOWN_CHARS)}…` : p.text
  return p.category === null ? `neutral prompt ${JSON.stringify(text)}` : `${p.kind} ${JSON.stringify(text)} of category ${p.category}`
}

export default class PolicyValidate extends Command {
  static override description = `Check a policy file and report every problem with its line and column.

Exit codes: 0 the file is valid (a summary is printed), 2 it is not (one "file:line:column: message" line per
problem on stderr) or it cannot be read.

A prompt longer than the text encoder's context (77 tokens, start and end included) is truncated when it is
encoded, its end token kept: each such prompt gets a warning line on stderr, and the exit code stays 0.`

  static override examples = [
    '<%= config.bin %> policy validate .modrc.yaml',
    '<%= config.bin %> policy validate policy.yaml --json',
  ]

  static override args = {
    file: Args.string({description: 'policy YAML file', required: true}),
  }

  static override flags = {
    json: Flags.boolean({description: 'Print {valid, problems, summary} as JSON on stdout.'}),
  }

  async run(): Promise<void> {
    const {args, flags} = await this.parse(PolicyValidate)
    let text
    try {
      text = await readPolicyText(args.file)
    } catch (e) {
      this.logToStderr(describeError(e))
      return this.exit(EXIT_ERROR)
    }
    const {problems, file} = validatePolicyText(text)
    const summary = file === undefined ? null : summarizePolicy(file)
    if (file !== undefined) {
      const policy = buildPolicy(file)
      const long = await longPresetPrompts(policy, policy.preset ?? 'fast')
      for (const p of long.prompts) {
        this.logToStderr(`${args.file}: warning: ${describeLong(p)} is longer than ${long.contextLength} tokens and will be truncated`)
      }
    }
    if (flags.json) {
      this.log(JSON.stringify({valid: summary !== null, problems, summary}, null, 2))
    } else if (summary === null) {
      for (const line of formatProblems(args.file, problems)) this.logToStderr(line)
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
    if (summary === null) this.exit(EXIT_ERROR)
  }
}
