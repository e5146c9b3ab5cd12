/** The embedded NSFW specialist's fixed facts and the shape of models/nsfw/manifest.json. */

/** Output order of the model's five probabilities. */
export const NSFW_CLASSES = ['Drawing', 'Hentai', 'Neutral', 'Porn', 'Sexy'] as const
export type NsfwClass = (typeof NSFW_CLASSES)[number]

/** Side of the square input, in pixels. */
export const NSFW_SIZE = 224
export const NSFW_INPUT = 'pixels'
export const NSFW_OUTPUT = 'probabilities'

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
