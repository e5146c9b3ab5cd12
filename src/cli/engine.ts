import {loadConfig, type Config} from '../lib/config/load.js'
import {engineFromConfig, type EngineChoices} from '../lib/compose.js'
import type {Engine} from '../lib/engine.js'
import {applyOverrides, parseThresholds} from '../lib/policy/overrides.js'
import {settingsInput, type FlagValues} from './flags.js'

/** Parsed flags (each already resolved from its MOD_* variable by oclif) + policy file → an engine that loads its model on first use. */
export async function engineFromFlags(flags: FlagValues, env = process.env, options: EngineChoices = {}): Promise<{config: Config; engine: Engine}> {
  const config = await configFromFlags(flags, env)
  return {config, engine: engineFromConfig(config, options)}
}

/** The settings and the policy in force, with this run's --threshold and --disable applied. */
export async function configFromFlags(flags: FlagValues, env = process.env): Promise<Config> {
  const config = await loadConfig(settingsInput(flags), env)
  if (!flags.threshold?.length && !flags.disable?.length) return config
  const thresholds = parseThresholds(flags.threshold ?? [])
  return {...config, policy: applyOverrides(config.policy, {thresholds, disabled: flags.disable})}
}
