import {buildPolicy, findPolicyFile, loadPolicyFile} from '../policy/load.js'
import type {Policy, PresetName} from '../policy/types.js'
import {readSettings, type Env, type Settings, type SettingsInput} from './settings.js'

/** Everything a command or the server needs before it builds an engine. */
export interface Config {
  settings: Settings
  preset: PresetName
  policy: Policy
  policyPath?: string
}

/** Typed input and MOD_* variables, then the policy file (named, or found by cosmiconfig from cwd); preset: input > MOD_PRESET > policy > fast. */
export async function loadConfig(input: SettingsInput, env: Env, cwd = process.cwd()): Promise<Config> {
  const settings = readSettings(input, env, cwd)
  const policyPath = settings.configPath ?? (await findPolicyFile(cwd))
  const policy = policyPath ? (await loadPolicyFile(policyPath)).policy : buildPolicy()
  return {settings, preset: settings.preset ?? policy.preset ?? 'fast', policy, policyPath}
}
