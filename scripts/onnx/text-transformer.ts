/**
 * A CLIP text encoder built like Hugging Face's CLIPTextModelWithProjection (token and position embeddings,
 * causal pre-norm encoder layers, final LayerNorm, the hidden state at each row's highest token id, projection
 * without bias) with seeded random weights. At VIT_B32_TEXT it has the architecture, size and compute cost of
 * openai/clip-vit-base-patch32's text tower; tests build it small through the same code.
 */
import {attr, createGraph, DATA_TYPE, floatTensor} from './graph.js'
import {EMBEDDING_STD, encoderLayer, encoderLayerParameters, layerNorm, linear, seededWeights} from './layers.js'

export interface TextConfig {
  vocabSize: number
  contextLength: number
  width: number
  layers: number
  heads: number
  mlpWidth: number
  embeddingSize: number
}

/** openai/clip-vit-base-patch32's text_config and projection_dim. */
export const VIT_B32_TEXT: TextConfig = {
  vocabSize: 49408,
  contextLength: 77,
  width: 512,
  layers: 12,
  heads: 8,
  mlpWidth: 2048,
  embeddingSize: 512,
}

/** What torch.finfo(float32).min is: Hugging Face's causal mask adds it above the diagonal. */
const MASKED = -3.4028234663852886e38

/** The parameter count of CLIPTextModelWithProjection at this size, from the architecture alone. */
export function textParameters(c: TextConfig): number {
  const embeddings = c.vocabSize * c.width + c.contextLength * c.width
  return embeddings + c.layers * encoderLayerParameters(c) + 2 * c.width + c.width * c.embeddingSize
}

/** [n, n]: 0 where a token may attend (itself and earlier tokens), MASKED where it may not. */
function causalMask(n: number): Float32Array {
  const mask = new Float32Array(n * n)
  for (let i = 0; i < n; i++) mask.fill(MASKED, i * n + i + 1, (i + 1) * n)
  return mask
}

/** input_ids int64 [batch, contextLength] → text_embeds float32 [batch, embeddingSize], not normalised. */
export function buildTextModel(c: TextConfig, seed: number): Uint8Array {
  const w = seededWeights(seed)
  const g = createGraph('clip_text')
  const ids = g.input('input_ids', 'int64', ['batch', c.contextLength])
  g.output('text_embeds', 'float32', ['batch', c.embeddingSize])

  const tokenEmbedding = g.initializer(
    floatTensor(
      'text_model.embeddings.token_embedding.weight',
      w.normal(c.vocabSize * c.width, EMBEDDING_STD),
      [c.vocabSize, c.width],
    ),
  )
  const positionEmbedding = g.initializer(
    floatTensor(
      'text_model.embeddings.position_embedding.weight',
      w.normal(c.contextLength * c.width, EMBEDDING_STD),
      [c.contextLength, c.width],
    ),
  )
  const mask = g.floats(causalMask(c.contextLength), [c.contextLength, c.contextLength], 'causal_mask')
  let hidden = g.op('Add', [g.op('Gather', [tokenEmbedding, ids], {axis: attr.int(0)}), positionEmbedding])
  for (let i = 0; i < c.layers; i++) hidden = encoderLayer(g, w, hidden, `text_model.encoder.layers.${i}`, c, mask)
  hidden = layerNorm(g, hidden, 'text_model.final_layer_norm', c.width)

  // CLIP pools at the end token, the highest id of the vocabulary: argmax over each row's ids (the first one
  // when it repeats as padding), as the Hugging Face export does it (ids cast to int32 first).
  const endPosition = g.op('ArgMax', [g.op('Cast', [ids], {to: attr.int(DATA_TYPE.int32)})], {
    axis: attr.int(1),
    keepdims: attr.int(1),
  })
  const pooled = g.op('GatherND', [hidden, endPosition], {batch_dims: attr.int(1)})
  const projected = linear(g, w, pooled, 'text_projection', c.width, c.embeddingSize, false)
  g.op('Identity', [projected], {}, 'text_embeds')
  return g.encode({docString: `random-weight CLIP text encoder (seed ${seed}): ${JSON.stringify(c)}`})
}
