import {buildPolicy} from '../../src/lib/config/policy.js'
import type {EngineSettings} from '../../src/lib/config/settings.js'
import {createEngine, type Engine, type EngineOptions} from '../../src/lib/engine.js'
import {TOY_MODEL} from './cli.js'
import {withoutSpecialist} from './signals.js'

/**
 * The toy model with a `redness` category: red is unsafe, blue is safe. Without the NSFW specialist unless `more`
 * gives the signals (the registry's, for a test of both); `more.observer` sees its runs.
 */
export function toyEngine(settings: Pick<EngineSettings, 'cacheDir' | 'limits' | 'ffmpeg'>, modelDir = TOY_MODEL, more: Pick<EngineOptions, 'signals' | 'observer'> = {}): Engine {
  return createEngine({
    preset: 'fast',
    modelDir,
    cacheDir: settings.cacheDir,
    policy: buildPolicy({categories: [{name: 'redness', prompts: ['red']}]}),
    limits: settings.limits,
    ffmpeg: settings.ffmpeg,
    signals: withoutSpecialist(),
    ...more,
  })
}
