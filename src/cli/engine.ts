import {loadConfig, type Config} from '../lib/config/load.js'
import {createEngine, type Engine, type EngineObserver} from '../lib/engine.js'
import {openNsfwRunner} from '../lib/signals/nsfw/runner.js'
import {resolveModelDir} from '../lib/model/presets.js'
import {applyOverrides, parseThreshold} from '../lib/policy/overrides.js'
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
  const thresholds = new Map((flags.threshold ?? []).map(parseThreshold))
  return {...config, policy: applyOverrides(config.policy, {thresholds, disabled: flags.disable})}
}

export interface EngineChoices {
  /** `--only`: one signal alone. */
  only?: string
  /** Metrics hooks (`mod serve`). */
  observer?: EngineObserver
}

/**
 * The engine with what ships inside mod: the CLIP preset (when pulled, or the folder named by --model-dir, which
 * must then hold a model) and the embedded NSFW specialist.
 */
export function engineFromConfig(config: Config, options: EngineChoices = {}): Engine {
  const settings = config.settings.engine
  return createEngine({
    requireClip: settings.modelDir !== undefined,
    openNsfw: () => openNsfwRunner({threads: settings.threads, cacheDir: settings.cacheDir}),
    only: options.only,
    observer: options.observer,
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
