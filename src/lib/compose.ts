/**
 * The composition root: the configuration read (settings, preset, policy) turned into what scores images, with the
 * registry's signals. Every command that scores (scan, scan-video, categories, serve, worker, eval, calibrate,
 * head train) starts here, so that all of them score with the same signals from the same settings. Each signal
 * opens its own model from the setup (signals/<name>/signal.ts).
 */
import type {Config} from './config/load.js'
import {createEngine, type Engine, type EngineObserver} from './engine.js'
import type {ModelOptions} from './eval/features.js'
import {resolveModelDir} from './model/presets.js'

export interface EngineChoices {
  /** `--only`: one signal alone. */
  only?: string
  /** Metrics hooks (`mod serve`). */
  observer?: EngineObserver
  /** Every model opens at load, also those only some frames need (`mod serve`, `mod worker`); else on first need. */
  eager?: boolean
}

/**
 * The settings every signal opens from: the CLIP preset (when pulled, or the folder named by --model-dir, which
 * must then hold a model), the cache folder the add-ons are pulled into, the precision and threads.
 */
export function modelOptions(config: Config): ModelOptions {
  const settings = config.settings.engine
  return {
    modelDir: resolveModelDir(settings, config.preset),
    preset: config.preset,
    precision: settings.precision,
    int8Weights: settings.int8Weights,
    threads: settings.threads,
    cacheDir: settings.cacheDir,
    limits: settings.limits,
  }
}

/** The engine of a configuration; it loads its models on first use. */
export function engineFromConfig(config: Config, options: EngineChoices = {}): Engine {
  const settings = config.settings.engine
  return createEngine({
    ...modelOptions(config),
    preset: config.preset,
    requireClip: settings.modelDir !== undefined,
    only: options.only,
    eager: options.eager,
    observer: options.observer,
    policy: config.policy,
    headPath: settings.headPath,
    limits: settings.limits,
    ffmpeg: settings.ffmpeg,
    textBudget: settings.textBudget,
  })
}
