import {ModCommand} from '../../cli/base-command.js'
import {textReporter} from '../../cli/reports/reporter.js'
import {visible} from '../../cli/visible.js'
import {printableYaml} from '../../cli/yaml-text.js'
import {SIGNAL_EXIT_CODES} from '../../cli/errors.js'
import {configFromFlags} from '../../cli/engine.js'
import {modelFlags, policyFlags} from '../../cli/flags.js'
import {DEFAULT_CATEGORIES} from '../../lib/policy/defaults.js'
import type {Policy} from '../../lib/policy/types.js'
import {POLICY_PLUGINS} from '../../lib/signals/registry.js'

/**
 * The policy in force as a policy file: every category with all its fields, so nothing is left to the defaults,
 * and each built-in category that is off as `enabled: false` (left out, it would come back on).
 */
function asPolicyFile(policy: Policy, preset: string): Record<string, unknown> {
  const active = new Set(policy.categories.map((c) => c.name))
  const off = DEFAULT_CATEGORIES.filter((c) => !active.has(c.name)).map((c) => [c.name, {enabled: false}])
  // The categories that exist only while a text rule or hash list names them (contact_info, known_bad) have no
  // prompts and cannot be written as categories: naming them is what brings them back.
  const builtin = new Set(DEFAULT_CATEGORIES.map((c) => c.name))
  const written = policy.categories.filter((c) => c.origin !== 'builtin' || builtin.has(c.name))
  return {
    preset,
    trim_borders: policy.trim_borders,
    specialists: policy.specialists,
    neutral: policy.neutral,
    categories: Object.fromEntries(
      [
        ...written.map((c) => [c.name, {parent: c.parent, threshold: c.threshold, prompts: c.prompts, negatives: c.negatives, calibration: c.calibration}]),
        ...off,
      ],
    ),
    // Each signal's section as it reads back (hash lists by absolute paths, word lists written out).
    ...Object.fromEntries(
      POLICY_PLUGINS.sections.flatMap(({section}) => {
        const value = policy.sections[section.key]
        const shown = value === undefined ? undefined : section.show?.(value)
        return shown === undefined ? [] : [[section.key, shown]]
      }),
    ),
  }
}

export default class PolicyShow extends ModCommand {
  static override description = `Print the policy in force as YAML: the built-in categories with the changes of the policy file (--config, MOD_CONFIG, or the file found by name from the current folder upwards) and of --threshold and --disable.

The output is itself a valid policy file: text rules with their word lists written out, hash lists by the absolute paths of their files. Its first line is a comment naming the file it came from.`

  static override examples = [
    '<%= config.bin %> policy show',
    '<%= config.bin %> policy show --config policy.yaml --threshold nudity=0.3 > effective.yaml',
  ]

  static override exitCodes: [string, string][] = [
    ['0', 'the policy in force is printed'],
    ['2', 'usage error, or a policy file that is not valid'],
    ...SIGNAL_EXIT_CODES,
  ]

  static override flags = {
    ...policyFlags,
    config: modelFlags.config,
    preset: modelFlags.preset,
  }

  async run(): Promise<void> {
    const {flags} = await this.parse(PolicyShow)
    const config = await configFromFlags(flags)
    const from = config.policyPath
      ? `${config.policyPath}${config.policyFound ? ` (found ${config.policyFound})` : ''}`
      : 'no policy file: the built-in defaults'
    this.printResult(textReporter(), `# policy in force: ${visible(from)}\n${printableYaml(asPolicyFile(config.policy, config.preset), {lineWidth: 0}).trimEnd()}\n`)
  }
}
