import type {TextConfig} from '../../scripts/onnx/text-transformer.js'
import type {VisionConfig} from '../../scripts/onnx/vit.js'

/** The ViT-B/32 CLIP architecture at a size that builds and runs in milliseconds. */
export const TINY_VISION: VisionConfig = {
  imageSize: 64,
  patchSize: 32,
  width: 64,
  layers: 2,
  heads: 4,
  mlpWidth: 256,
  embeddingSize: 32,
}

/** The real vocabulary size, so that real token ids (49406 start, 49407 end) index the table. */
export const TINY_TEXT: TextConfig = {
  vocabSize: 49408,
  contextLength: 77,
  width: 32,
  layers: 2,
  heads: 4,
  mlpWidth: 128,
  embeddingSize: 32,
}
