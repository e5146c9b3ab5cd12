/** The model folder's manifest.json (CONTRACTS §4). */

export interface Preprocessing {
  /** Shortest side is resized to this many pixels. */
  resize: number
  /** Then a centred square crop of this size. */
  crop: number
  mean: [number, number, number]
  std: [number, number, number]
  resample: 'bicubic' | 'bilinear'
}

export type FileRole = 'image_encoder' | 'text_encoder' | 'tokenizer' | 'config'

export interface ModelFile {
  /** Relative to the model folder, e.g. "onnx/vision_model.onnx". */
  path: string
  role: FileRole
  url?: string
  size?: number
  sha256?: string
}

export interface Manifest {
  id: string
  family: 'clip'
  embedding_size: number
  context_length: number
  image: {input: string; output: string}
  text: {input: string; output: string}
  preprocess: Preprocessing
  files: ModelFile[]
  /** Free text: where the export comes from and its licence. */
  source?: string
}
