/**
 * A CLIP vision encoder built like Hugging Face's CLIPVisionModelWithProjection (patch convolution, class token,
 * position embeddings, pre-LayerNorm, pre-norm encoder layers, post-LayerNorm on the class token, projection
 * without bias) with seeded random weights. At VIT_B32_VISION it has the architecture, size and compute cost of
 * openai/clip-vit-base-patch32's image tower; tests build it small through the same code.
 */
import {attr, createGraph, floatTensor} from './graph.js'
import {
  EMBEDDING_STD,
  encoderLayer,
  encoderLayerParameters,
  layerNorm,
  linear,
  projectionStd,
  seededWeights,
} from './layers.js'

export interface VisionConfig {
  imageSize: number
  patchSize: number
  width: number
  layers: number
  heads: number
  mlpWidth: number
  embeddingSize: number
}

/** openai/clip-vit-base-patch32's vision_config and projection_dim. */
export const VIT_B32_VISION: VisionConfig = {
  imageSize: 224,
  patchSize: 32,
  width: 768,
  layers: 12,
  heads: 12,
  mlpWidth: 3072,
  embeddingSize: 512,
}

const CHANNELS = 3

function patchCount(c: VisionConfig): number {
  if (c.imageSize % c.patchSize !== 0) throw new Error(`image size ${c.imageSize} is not a multiple of ${c.patchSize}`)
  return (c.imageSize / c.patchSize) ** 2
}

/** The parameter count of CLIPVisionModelWithProjection at this size, from the architecture alone. */
export function visionParameters(c: VisionConfig): number {
  const positions = patchCount(c) + 1
  const embeddings = CHANNELS * c.patchSize ** 2 * c.width + c.width + positions * c.width
  const layerNorms = 2 * (2 * c.width)
  return embeddings + layerNorms + c.layers * encoderLayerParameters(c) + c.width * c.embeddingSize
}

/**
 * pixel_values float32 [batch, 3, size, size] → image_embeds float32 [batch, embeddingSize], not normalised
 * (as the Hugging Face export; the runner normalises).
 */
export function buildVisionModel(c: VisionConfig, seed: number): Uint8Array {
  const w = seededWeights(seed)
  const g = createGraph('clip_vision')
  const positions = patchCount(c) + 1
  const pixels = g.input('pixel_values', 'float32', ['batch', CHANNELS, c.imageSize, c.imageSize])
  g.output('image_embeds', 'float32', ['batch', c.embeddingSize])

  const kernel = g.initializer(
    floatTensor(
      'vision_model.embeddings.patch_embedding.weight',
      w.normal(c.width * CHANNELS * c.patchSize ** 2, projectionStd(CHANNELS * c.patchSize ** 2)),
      [c.width, CHANNELS, c.patchSize, c.patchSize],
    ),
  )
  const patchGrid = g.op('Conv', [pixels, kernel], {
    kernel_shape: attr.ints([c.patchSize, c.patchSize]),
    strides: attr.ints([c.patchSize, c.patchSize]),
  })
  // [batch, width, rows, cols] → [batch, patches, width]
  const patches = g.op('Transpose', [g.op('Reshape', [patchGrid, g.int64s([0, c.width, -1], [3], 'flat_shape')])], {
    perm: attr.ints([0, 2, 1]),
  })
  // The class token is one learned vector, expanded to [batch, 1, width] to sit before the patches.
  const classEmbedding = g.initializer(
    floatTensor('vision_model.embeddings.class_embedding', w.normal(c.width, EMBEDDING_STD), [c.width]),
  )
  const batch = g.op('Slice', [g.op('Shape', [pixels]), g.int64s([0], [1], 'start'), g.int64s([1], [1], 'end')])
  const classShape = g.op('Concat', [batch, g.int64s([1, c.width], [2], 'class_shape')], {axis: attr.int(0)})
  const classTokens = g.op('Expand', [classEmbedding, classShape])
  const tokens = g.op('Concat', [classTokens, patches], {axis: attr.int(1)})
  const positionEmbedding = g.initializer(
    floatTensor(
      'vision_model.embeddings.position_embedding.weight',
      w.normal(positions * c.width, EMBEDDING_STD),
      [positions, c.width],
    ),
  )
  let hidden = layerNorm(g, g.op('Add', [tokens, positionEmbedding]), 'vision_model.pre_layrnorm', c.width)
  for (let i = 0; i < c.layers; i++) hidden = encoderLayer(g, w, hidden, `vision_model.encoder.layers.${i}`, c)

  const classToken = g.op('Gather', [hidden, g.int64s([0], [], 'class_index')], {axis: attr.int(1)})
  const pooled = layerNorm(g, classToken, 'vision_model.post_layernorm', c.width)
  const projected = linear(g, w, pooled, 'visual_projection', c.width, c.embeddingSize, false)
  g.op('Identity', [projected], {}, 'image_embeds')
  return g.encode({docString: `random-weight CLIP vision encoder (seed ${seed}): ${JSON.stringify(c)}`})
}
