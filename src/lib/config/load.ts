import {buildPolicy, findPolicyFile, loadPolicyFile} from '../policy/load.js'
import type {Policy, PresetName} from '../policy/types.js'
import {readSettings, type Env, type Settings, type SettingsFlags} from './settings.js'

/** Everything a command or the server needs before it builds an engine. */
export interface Config {
  settings: Settings
  preset: PresetName
  policy: Policy
  policyPath?: string
}

/** Flags and MOD_* variables, then the policy file (named, or found by cosmiconfig from cwd); preset: flag > MOD_PRESET > policy > fast. */
export async function loadConfig(flags: SettingsFlags, env: Env, cwd = process.cwd()): Promise<Config> {
  const settings = readSettings(flags, env, cwd)
  const policyPath = settings.configPath ?? (await findPolicyFile(cwd))
  const policy = policyPath ? (await loadPolicyFile(policyPath)).policy : buildPolicy()
  return {settings, preset: settings.preset ?? policy.preset ?? 'fast', policy, policyPath}
}
