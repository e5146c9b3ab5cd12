import {validatePolicyFile} from '../lib/config/policy.js'
import {ModError} from '../lib/errors.js'
import type {SectionCheck} from '../lib/policy/section.js'
import {POLICY_PLUGINS} from '../lib/signals/registry.js'

/** Each section's check of the files it names (hash lists read through), also when the policy has problems. */
export async function verifySections(policyPath: string, read: Record<string, unknown> | undefined): Promise<{key: string; check: SectionCheck}[]> {
  const checks = POLICY_PLUGINS.sections.flatMap(({section}) => {
    const value = read?.[section.key]
    return section.verify && value !== undefined ? [section.verify(value, policyPath).then((check) => ({key: section.key, check}))] : []
  })
  return Promise.all(checks)
}

/**
 * Refuses a policy whose named files (hash lists) a scan would refuse, for a command that reads the policy but
 * opens no signal (mod categories): what it says is evaluated must be what a scan with that policy evaluates.
 * Every problem is listed, one a line, as `file:line: message`.
 */
export async function checkPolicyFiles(policyPath: string): Promise<void> {
  const {read} = await validatePolicyFile(policyPath)
  const problems = (await verifySections(policyPath, read)).flatMap(({check}) => check.problems)
  if (problems.length === 0) return
  throw new ModError('invalid_config', [`policy ${policyPath}: a file it names is not valid:`, ...problems.map((p) => `${p.file}:${p.line}: ${p.message}`)])
}
