/**
 * The toy CLIP of the tests: tiny ONNX encoders whose outputs can be worked out by hand.
 * Image: the L2-normalised per-channel mean of pixel_values in dims 0..2. Text: the L2-normalised
 * count of the colour words red, green and blue in dims 0..2. Every other dimension is zero.
 */
import {attr, createGraph, DATA_TYPE, type GraphBuilder} from './graph.js'
import {l2Normalize, reduce} from './layers.js'

export const TOY_EMBEDDING_SIZE = 8
export const TOY_IMAGE_SIZE = 224
export const TOY_CONTEXT_LENGTH = 77
/** CLIP vocabulary ids of `red</w>`, `green</w>`, `blue</w>`, in embedding order. */
export const TOY_COLOUR_IDS = [736, 1901, 1746]
/** Small enough not to change any real embedding, large enough to keep 0 / eps at 0. */
const EPS = 1e-12

/** [batch, 3] → [batch, 8]: a MatMul with an identity-then-zeros matrix keeps the batch dim free. */
function padWithZeros(g: GraphBuilder, x: string): string {
  const m = new Float32Array(3 * TOY_EMBEDDING_SIZE)
  for (let i = 0; i < 3; i++) m[i * TOY_EMBEDDING_SIZE + i] = 1
  return g.op('MatMul', [x, g.floats(m, [3, TOY_EMBEDDING_SIZE], 'pad')])
}

/** pixel_values float32 [batch, 3, 224, 224] → image_embeds float32 [batch, 8]. */
export function buildToyVisionModel(): Uint8Array {
  const g = createGraph('toy_clip_vision')
  const pixels = g.input('pixel_values', 'float32', ['batch', 3, TOY_IMAGE_SIZE, TOY_IMAGE_SIZE])
  g.output('image_embeds', 'float32', ['batch', TOY_EMBEDDING_SIZE])
  const channelMeans = reduce(g, 'ReduceMean', pixels, [2, 3], false)
  l2Normalize(g, padWithZeros(g, channelMeans), EPS, 'image_embeds')
  return g.encode({docString: 'toy CLIP image encoder: normalised per-channel mean'})
}

/** input_ids int64 [batch, 77] → text_embeds float32 [batch, 8]. */
export function buildToyTextModel(): Uint8Array {
  const g = createGraph('toy_clip_text')
  const ids = g.input('input_ids', 'int64', ['batch', TOY_CONTEXT_LENGTH])
  g.output('text_embeds', 'float32', ['batch', TOY_EMBEDDING_SIZE])
  // [batch, tokens, 1] == [3] broadcasts to one match flag per token and colour.
  const column = g.op('Unsqueeze', [ids, g.int64s([2], [1], 'axes')])
  const matches = g.op('Equal', [column, g.int64s(TOY_COLOUR_IDS, [3], 'colour_ids')])
  const counts = reduce(g, 'ReduceSum', g.op('Cast', [matches], {to: attr.int(DATA_TYPE.float32)}), [1], false)
  l2Normalize(g, padWithZeros(g, counts), EPS, 'text_embeds')
  return g.encode({docString: 'toy CLIP text encoder: normalised colour-word counts'})
}
