/**
 * The policy functions (policy/load.ts, policy/schema.ts) with the sections and switches of this build's signals,
 * taken from the signal registry: the policy module sits below the signals and is given them, so that it
 * imports none.
 */
import {
  buildPolicy as buildWith,
  loadPolicyFile as loadWith,
  sectionSummaryLines as linesWith,
  summarizePolicy as summarizeWith,
  validatePolicyFile as validateFileWith,
  type PolicySummary,
  type SectionFiles,
} from '../policy/load.js'
import {validatePolicyText as validateWith, type PolicyFile, type PolicyValidation} from '../policy/schema.js'
import type {SummaryLine} from '../policy/section.js'
import type {Policy} from '../policy/types.js'
import {POLICY_PLUGINS} from '../signals/registry.js'

export function validatePolicyText(text: string): PolicyValidation {
  return validateWith(POLICY_PLUGINS, text)
}

export function buildPolicy(file?: PolicyFile, dir?: string, files?: SectionFiles): Policy {
  return buildWith(POLICY_PLUGINS, file, dir, files)
}

export function validatePolicyFile(filePath: string, text?: string): ReturnType<typeof validateFileWith> {
  return validateFileWith(POLICY_PLUGINS, filePath, text)
}

export function loadPolicyFile(filePath: string): Promise<{policy: Policy; file: PolicyFile}> {
  return loadWith(POLICY_PLUGINS, filePath)
}

export function summarizePolicy(file: PolicyFile): PolicySummary {
  return summarizeWith(POLICY_PLUGINS, file)
}

export function sectionSummaryLines(file: PolicyFile): SummaryLine[] {
  return linesWith(POLICY_PLUGINS, file)
}
