import {loadConfig, type Config} from '../lib/config/load.js'
import {createEngine, type Engine} from '../lib/engine.js'
import {resolveModelDir} from '../lib/model/presets.js'
import {settingsInput, type FlagValues} from './flags.js'

/** Parsed flags (each already resolved from its MOD_* variable by oclif) + policy file → an engine that loads its model on first use. */
export async function engineFromFlags(flags: FlagValues, env = process.env): Promise<{config: Config; engine: Engine}> {
  const config = await loadConfig(settingsInput(flags), env)
  return {config, engine: engineFromConfig(config)}
}

export function engineFromConfig(config: Config): Engine {
  const {settings} = config
  return createEngine({
    preset: config.preset,
    modelDir: resolveModelDir(settings, config.preset),
    cacheDir: settings.cacheDir,
    policy: config.policy,
    headPath: settings.headPath,
    threads: settings.threads,
    precision: settings.precision,
    limits: settings.limits,
    ffmpeg: settings.ffmpeg,
  })
}
