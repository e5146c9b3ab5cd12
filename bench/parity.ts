/**
 * The same model folder read by `mod` and by transformers.js: image embeddings, text
 * embeddings and token ids from both, for bench/peer.ts and test/parity.test.ts. transformers.js is loaded
 * offline (local files only, absolute folder path) with the per-tower classes, since the folder holds
 * separate vision and text ONNX files. The two resize differently (mod antialiases as Pillow does, which
 * OpenAI CLIP was trained with; transformers.js in Node samples with sharp's affine, unfiltered), so the
 * vision tower is compared on mod's pixels (`embedPixels`), and whole paths only on images no resize touches.
 */
import './no-telemetry.js'

import {
  AutoProcessor,
  AutoTokenizer,
  CLIPTextModelWithProjection,
  CLIPVisionModelWithProjection,
  env,
  RawImage,
  Tensor,
  type PreTrainedTokenizer,
  type Processor,
  type PreTrainedModel,
} from '@huggingface/transformers'

import {prepareImage} from '../src/lib/image/prepare.js'
import {openClip, type ClipModel} from '../src/lib/signals/clip/model.js'
import {loadManifest} from '../src/lib/model/manifest.js'
import type {Manifest} from '../src/lib/model/manifest-types.js'
import {loadTokenizer, type ClipTokenizer} from '../src/lib/model/tokenizer.js'
import {DEFAULT_CATEGORIES, DEFAULT_NEUTRAL} from '../src/lib/policy/defaults.js'
import {cosine} from '../src/lib/signals/clip/zero-shot.js'

/** Decoding limits far above any test image. */
const LIMITS = {maxBytes: 1 << 30, maxPixels: 1e9}

/** Every prompt text of the built-in policy: each category's prompts and negatives, then the neutral prompts. */
export function defaultPrompts(): string[] {
  const texts = new Set<string>()
  for (const c of DEFAULT_CATEGORIES) for (const t of [...c.prompts, ...c.negatives]) texts.add(t)
  for (const t of DEFAULT_NEUTRAL) texts.add(t)
  return [...texts]
}

function unit(v: Float32Array): Float32Array {
  let sum = 0
  for (const x of v) sum += x * x
  const inv = sum > 0 ? 1 / Math.sqrt(sum) : 0
  return v.map((x) => x * inv)
}

function tensorRows(t: Tensor): Float32Array[] {
  const [n, dim] = t.dims
  const data = t.data as Float32Array
  return Array.from({length: n}, (_, i) => unit(data.slice(i * dim, (i + 1) * dim)))
}

// ---------- mod ----------

export interface ModSide {
  manifest: Manifest
  clip: ClipModel
  tokenizer: ClipTokenizer
  /** mod's preprocessed tensor of encoded image bytes, 3 x crop x crop: decode and preprocess, no border trim (transformers.js has none). */
  pixels(bytes: Buffer): Promise<Float32Array>
  /** mod's image embedding of encoded image bytes: `pixels`, then the vision encoder. */
  embedImage(bytes: Buffer): Promise<Float32Array>
  /** mod's token ids, [texts.length * context_length]. */
  tokenIds(texts: string[]): number[][]
  close(): Promise<void>
}

export async function openMod(dir: string, threads?: number): Promise<ModSide> {
  const manifest = await loadManifest(dir)
  const clip = await openClip(dir, manifest, {threads})
  const tokenizer = await loadTokenizer(dir)
  const ctx = manifest.context_length
  const pixels = async (bytes: Buffer) => (await prepareImage(bytes, {limits: LIMITS, preprocess: manifest.preprocess, trimBorders: false})).tensors[0]
  return {
    manifest,
    clip,
    tokenizer,
    pixels,
    async embedImage(bytes) {
      const [embedding] = await clip.embedImages(await pixels(bytes), 1)
      return embedding
    },
    tokenIds(texts) {
      const ids = tokenizer.encodeBatch(texts, ctx)
      return texts.map((_, i) => Array.from(ids.subarray(i * ctx, (i + 1) * ctx), Number))
    },
    close: () => clip.close(),
  }
}

// ---------- transformers.js ----------

export interface PeerSide {
  processor: Processor
  tokenizer: PreTrainedTokenizer
  vision: PreTrainedModel
  /** Loaded on first use of embedTexts / tokenIds… (the text model is only needed for prompts). */
  embedTexts(texts: string[]): Promise<Float32Array[]>
  tokenIds(texts: string[]): number[][]
  /** transformers.js's embedding of encoded image bytes: RawImage from a Blob, the CLIP processor, the vision tower. */
  embedImage(bytes: Buffer): Promise<Float32Array>
  /** transformers.js's vision tower on given pixel values, 3 x side x side (mod's preprocessing, say). */
  embedPixels(pixels: Float32Array, side: number): Promise<Float32Array>
  close(): Promise<void>
}

export async function openPeer(dir: string, contextLength: number): Promise<PeerSide> {
  env.allowRemoteModels = false
  env.allowLocalModels = true
  const [processor, tokenizer, vision] = await Promise.all([
    AutoProcessor.from_pretrained(dir),
    AutoTokenizer.from_pretrained(dir),
    CLIPVisionModelWithProjection.from_pretrained(dir, {dtype: 'fp32'}),
  ])
  let text: PreTrainedModel | undefined
  const encode = (texts: string[]) => tokenizer(texts, {padding: 'max_length', max_length: contextLength, truncation: true})
  return {
    processor,
    tokenizer,
    vision,
    async embedTexts(texts) {
      text ??= await CLIPTextModelWithProjection.from_pretrained(dir, {dtype: 'fp32'})
      const out: Float32Array[] = []
      // Batches of 32, as mod embeds them: bounded activations for a full-size text tower.
      for (let i = 0; i < texts.length; i += 32) {
        const {text_embeds} = (await text(encode(texts.slice(i, i + 32)))) as {text_embeds: Tensor}
        out.push(...tensorRows(text_embeds))
      }
      return out
    },
    tokenIds(texts) {
      const ids = (encode(texts) as {input_ids: Tensor}).input_ids
      const data = ids.data as BigInt64Array
      return texts.map((_, i) => Array.from(data.subarray(i * contextLength, (i + 1) * contextLength), Number))
    },
    async embedImage(bytes) {
      const image = await RawImage.fromBlob(new Blob([new Uint8Array(bytes)]))
      const inputs = await processor(image)
      const {image_embeds} = (await vision(inputs)) as {image_embeds: Tensor}
      return tensorRows(image_embeds)[0]
    },
    async embedPixels(pixels, side) {
      const {image_embeds} = (await vision({pixel_values: new Tensor('float32', pixels, [1, 3, side, side])})) as {image_embeds: Tensor}
      return tensorRows(image_embeds)[0]
    },
    async close() {
      await vision.dispose()
      await text?.dispose()
    },
  }
}

// ---------- comparison ----------

export interface Agreement {
  /** Smallest cosine over the items compared. */
  worst: number
  /** The item it was found on. */
  worstItem: string
  cosines: number[]
}

export function agreement(items: string[], ours: Float32Array[], theirs: Float32Array[]): Agreement {
  const cosines = items.map((_, i) => cosine(ours[i], theirs[i]))
  let k = 0
  cosines.forEach((c, i) => (k = c < cosines[k] ? i : k))
  return {worst: cosines[k], worstItem: items[k], cosines}
}

/** Prompts whose token ids differ between the two tokenizers, with both id lists (empty when all agree). */
export function tokenMismatches(texts: string[], ours: number[][], theirs: number[][]): {text: string; ours: number[]; theirs: number[]}[] {
  return texts
    .map((text, i) => ({text, ours: ours[i], theirs: theirs[i]}))
    .filter((m) => m.ours.length !== m.theirs.length || m.ours.some((id, j) => id !== m.theirs[j]))
}
