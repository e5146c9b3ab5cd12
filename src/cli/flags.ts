import {Flags} from '@oclif/core'

import {MAX_THREADS, PRECISIONS, SETTING_VARIABLES, type SettingsInput} from '../lib/config/settings.js'
import {PRESETS} from '../lib/policy/types.js'
import {MODEL_SIGNALS} from '../lib/signals/registry.js'
import {MAX_FPS, MIN_FPS} from '../lib/video/options.js'
import {InvalidFlagValue, wholeNumberFlag} from './value-flags.js'

const MODEL = 'MODEL'

/** `--only`, its values and their text from the signal registry, so a new signal appears in `--help` by itself. */
export const onlyFlag = Flags.string({
  description: `Score with one signal alone: ${MODEL_SIGNALS.map((s) => `${s.name} (${s.title})`).join(', ')}.`,
  options: MODEL_SIGNALS.map((s) => s.name),
  helpValue: 'SIGNAL',
})

/**
 * Flags shared by every command that loads a model. Each declares its MOD_* variable and default, so `--help`
 * shows them and oclif applies the order flag > variable > default before the settings reader sees the value.
 */
export const modelFlags = {
  preset: Flags.string({
    description: "fast, balanced or accurate. Default: the policy's, else fast.",
    helpValue: 'PRESET',
    options: [...PRESETS],
    env: SETTING_VARIABLES.preset,
    helpGroup: MODEL,
  }),
  'model-dir': Flags.string({
    description: 'A model folder to use instead of a preset.',
    helpValue: 'DIR',
    env: SETTING_VARIABLES.modelDir,
    helpGroup: MODEL,
  }),
  'cache-dir': Flags.string({
    description: 'Where presets and embeddings are stored.',
    helpValue: 'DIR',
    env: SETTING_VARIABLES.cacheDir,
    defaultHelp: async () => '~/.cache/mod',
    helpGroup: MODEL,
  }),
  config: Flags.string({
    description: 'Policy YAML file. Default: one found by name (.modrc.yaml).',
    helpValue: 'FILE',
    env: SETTING_VARIABLES.config,
    helpGroup: MODEL,
  }),
  head: Flags.string({description: 'Trained head file: more labels.', helpValue: 'FILE', env: SETTING_VARIABLES.head, helpGroup: MODEL}),
  precision: Flags.string({
    description: "Encoder weights: fp32, or the model's int8 or fp16 variant (int8: signed weights on VNNI CPUs, else uint8; MOD_INT8_WEIGHTS=signed|unsigned overrides).",
    helpValue: 'WEIGHTS',
    options: [...PRECISIONS],
    default: 'fp32',
    env: SETTING_VARIABLES.precision,
    helpGroup: MODEL,
  }),
  threads: wholeNumberFlag({
    description: `onnxruntime threads per model, 1 to ${MAX_THREADS} (default: fit the machine).`,
    helpValue: 'N',
    min: 1,
    max: MAX_THREADS,
    env: SETTING_VARIABLES.threads,
    helpGroup: MODEL,
  }),
}

const POLICY = 'POLICY'

/*
 * Every repeatable flag takes exactly one value per use (multipleNonGreedy): the words after it stay paths, so
 * `mod scan a --exclude '*.tmp' b` scans b, and flags may come before, between or after the paths.
 */

/** One run's changes to the policy in force, for the commands that score (no file to write). */
export const policyFlags = {
  threshold: Flags.string({
    description: "A category's threshold (0 to 1) for this run.",
    helpValue: 'CATEGORY=VALUE',
    multiple: true,
    multipleNonGreedy: true,
    helpGroup: POLICY,
  }),
  disable: Flags.string({
    description: 'Switch a category off for this run.',
    helpValue: 'CATEGORY',
    multiple: true,
    multipleNonGreedy: true,
    helpGroup: POLICY,
  }),
}

/** --fps: a decimal number within the sampling bounds; anything else is a usage error naming the flag. */
/** Frames per second, in plain decimal (`2`, `0.5`) as the API takes them: `1e0` or `0x1` are no frame rates. */
export const fpsFlag = Flags.custom<number>({
  parse: async (input) => {
    const n = /^\d+(\.\d+)?$|^\.\d+$/.test(input.trim()) ? Number(input) : Number.NaN
    if (!Number.isFinite(n) || n < MIN_FPS || n > MAX_FPS) throw new InvalidFlagValue(input, `a number from ${MIN_FPS} to ${MAX_FPS} in plain decimal (2, 0.5)`)
    return n
  },
})

export interface FlagValues {
  preset?: string
  'model-dir'?: string
  'cache-dir'?: string
  config?: string
  head?: string
  precision?: string
  threads?: number
  host?: string
  port?: number
  workers?: number
  'body-min-rate'?: string
  'max-uploads-per-client'?: number
  threshold?: string[]
  disable?: string[]
}

/** Parsed flags → the settings reader's typed input (no flag names below the command layer). */
export function settingsInput(flags: FlagValues): SettingsInput {
  return {
    preset: flags.preset,
    modelDir: flags['model-dir'],
    cacheDir: flags['cache-dir'],
    config: flags.config,
    head: flags.head,
    precision: flags.precision,
    threads: flags.threads,
    host: flags.host,
    port: flags.port,
    workers: flags.workers,
    bodyMinRate: flags['body-min-rate'],
    maxUploadsPerClient: flags['max-uploads-per-client'],
  }
}
