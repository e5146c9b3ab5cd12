/** The embedded NSFW specialists' fixed facts and the shape of models/nsfw/manifest.json. */

/** Output order of the models' five probabilities. */
export const NSFW_CLASSES = ['Drawing', 'Hentai', 'Neutral', 'Porn', 'Sexy'] as const
export type NsfwClass = (typeof NSFW_CLASSES)[number]

/**
 * The models shipped in models/nsfw/, by the name nsfwjs gives their folders: the id of each one's manifest
 * entry and the side of its square input (nsfwjs's own: 224 by default, its InceptionV3 299).
 */
export const NSFW_MODELS = {
  mobilenet_v2: {id: 'nsfwjs-mobilenet-v2', side: 224},
  inception_v3: {id: 'nsfwjs-inception-v3', side: 299},
} as const
export type NsfwModelName = keyof typeof NSFW_MODELS
/** The model the specialist runs unless told otherwise: the small one. */
export const DEFAULT_NSFW_MODEL: NsfwModelName = 'mobilenet_v2'

/** Side of the default model's square input, in pixels. */
export const NSFW_SIZE = NSFW_MODELS[DEFAULT_NSFW_MODEL].side
export const NSFW_INPUT = 'pixels'
export const NSFW_OUTPUT = 'probabilities'

/** One model's entry in the manifest. */
export interface NsfwManifest {
  id: string
  /** The ONNX file, relative to the manifest's folder. */
  file: string
  size: number
  sha256: string
  source: {package: string; version: string; integrity: string; license: string; files: string[]}
  input: {name: string; dtype: 'float32'; shape: (number | string)[]; layout: 'NHWC'}
  output: {name: string; dtype: 'float32'; shape: (number | string)[]}
  classes: string[]
  preprocess: string
}

/** models/nsfw/manifest.json: every shipped model, in NSFW_MODELS order. */
export interface NsfwManifests {
  models: NsfwManifest[]
}
