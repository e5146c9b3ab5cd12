import {Flags} from '@oclif/core'

import {PRECISIONS} from '../lib/config/settings.js'
import {PRESETS} from '../lib/policy/types.js'

/** Flags shared by every command that loads a model; each has its MOD_* variable (a flag wins). */
export const modelFlags = {
  preset: Flags.string({description: 'Model preset (MOD_PRESET; default: the policy file\'s preset, else fast).', options: [...PRESETS]}),
  'model-dir': Flags.string({description: 'Use the model in this folder instead of the preset\'s cached copy (MOD_MODEL_DIR).'}),
  'cache-dir': Flags.string({description: 'Where presets are stored (MOD_CACHE_DIR; default ~/.cache/mod).'}),
  config: Flags.string({description: 'Policy YAML file (MOD_CONFIG; default: found by name, e.g. .modrc.yaml).'}),
  head: Flags.string({description: 'Trained head file to add and blend labels (MOD_HEAD).'}),
  precision: Flags.string({description: 'Encoder weights: fp32, or the model\'s int8 (about 3x faster, less memory) or fp16 variant (MOD_PRECISION).', options: [...PRECISIONS]}),
  threads: Flags.integer({description: 'onnxruntime threads per model (MOD_THREADS; default: chosen for the machine).', min: 1}),
}
