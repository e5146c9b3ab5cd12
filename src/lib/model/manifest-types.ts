/** The model folder's manifest.json: ours beside the files of the Hugging Face ONNX export layout of CLIP. */

export interface Preprocessing {
  /** Shortest side is resized to this many pixels. */
  resize: number
  /** Then a centred square crop of this size. */
  crop: number
  mean: [number, number, number]
  std: [number, number, number]
  resample: 'bicubic' | 'bilinear'
}

export type FileRole = 'image_encoder' | 'text_encoder' | 'tokenizer' | 'config' | 'detector'

export interface ModelFile {
  /** Relative to the model folder, e.g. "onnx/vision_model.onnx". */
  path: string
  role: FileRole
  url?: string
  size?: number
  sha256?: string
  /**
   * Written by `models pull` in an installed manifest: `pinned` when the download matched the sha256 the preset
   * pins, `first_use` when the preset pins none and the hash recorded here is that of the first download.
   */
  trust?: FileTrust
}

export type FileTrust = 'pinned' | 'first_use'

/** Numeric precisions of the encoders; `files` holds the fp32 ones, `variants` the others. */
export type Precision = 'fp32' | 'int8' | 'fp16'

/**
 * How int8 encoders' matrix weights are stored when they run (MOD_INT8_WEIGHTS): `signed` (int8, derived from
 * the uint8 file into the cache: fast on VNNI CPUs, saturating elsewhere), `unsigned` (the file's uint8, right
 * on every CPU), `auto` (signed where onnxruntime's u8s8 kernel is exact on this x86-64 CPU, else unsigned).
 */
export type Int8Weights = 'auto' | 'signed' | 'unsigned'

/** A reduced-precision pair of encoders offered beside the fp32 ones: opt-in, never needed to run. */
export interface EncoderVariant {
  image_encoder: ModelFile
  text_encoder: ModelFile
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
  /**
   * int8: dynamically quantised encoders (`onnx/*_quantized.onnx`, int8 weights); fp16: float16 weights
   * (`onnx/*_fp16.onnx`). Each takes and gives the same tensors as the fp32 encoders.
   */
  variants?: Partial<Record<Exclude<Precision, 'fp32'>, EncoderVariant>>
  /** Free text: where the export comes from and its licence. */
  source?: string
}
