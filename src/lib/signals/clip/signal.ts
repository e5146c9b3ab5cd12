/**
 * The zero-shot signal: a CLIP model embeds the image, and each category's score comes from how much better
 * its prompts fit than its negatives and the policy's neutral prompts (zero-shot.ts). Its embedding is also
 * what a trained head reads. The image session opens on the first frame (or the engine's load); the text
 * encoder only while prompt embeddings are missing from the cache, and its memory goes back once they are in.
 */
import {disposer} from '../../dispose.js'
import {isModError} from '../../errors.js'
import {preprocess} from '../../image/preprocess.js'
import {lazy} from '../../lazy.js'
import {loadManifest} from '../../model/manifest.js'
import type {Manifest} from '../../model/manifest-types.js'
import {loadPresetManifest} from '../../model/presets.js'
import {embedPrompts} from '../../model/prompt-cache.js'
import {stackTensors} from '../../pipeline/stack.js'
import {policyWeight, type OpenSignal, type Signal, type SignalSetup} from '../signal.js'
import {openClip} from './model.js'
import {policyPrompts, zeroShotMargins, zeroShotScores} from './zero-shot.js'

export interface OpenClip extends OpenSignal<Float32Array, Float32Array> {
  readonly manifest: Manifest
}

/** Reduced-precision encoders give slightly different embeddings: their prompts and features are kept apart. */
function modelKey(manifest: Manifest, setup: SignalSetup): string {
  return setup.precision === 'fp32' ? manifest.id : `${manifest.id}-${setup.precision}`
}

async function open(setup: SignalSetup): Promise<OpenClip> {
  const manifest = await loadManifest(setup.modelDir, setup.preset, setup.precision)
  const int8Weights = setup.precision === 'int8' ? (setup.int8Weights ?? 'auto') : undefined
  const model = lazy(() => openClip(setup.modelDir, manifest, {threads: setup.threads, cacheDir: setup.cacheDir, int8Weights}))
  const {dispose} = disposer(async () => {
    const pending = model.current()
    model.reset()
    await (await pending?.catch(() => undefined))?.close()
  })
  const {policy} = setup
  let prompts: Map<string, Float32Array>
  try {
    prompts = await embedPrompts(policyPrompts(policy), {
      cacheDir: setup.cacheDir,
      modelId: modelKey(manifest, setup),
      embed: async (texts) => (await model.get()).embedTexts(texts),
    })
    // The text encoder is only needed for prompts; once they are embedded its memory goes back.
    await model.peek()?.releaseText()
  } catch (e) {
    await dispose()
    throw e
  }
  return {
    manifest,
    key: modelKey(manifest, setup),
    outputSize: manifest.embedding_size,
    frameSide: Math.max(manifest.preprocess.resize, manifest.preprocess.crop),
    warm: async () => void (await model.get()),
    prepare: (frame) => preprocess(frame, manifest.preprocess),
    infer: async (tensors) => (await model.get()).embedImages(stackTensors(tensors), tensors.length),
    scores: (embedding) => zeroShotScores(embedding, policy, prompts),
    raw: (embedding) => zeroShotMargins(embedding, policy, prompts),
    encode: (embedding) => embedding,
    decode: (features) => features,
    dispose,
  }
}

export const clipSignal: Signal = {
  name: 'clip',
  title: 'the CLIP model',
  description: 'zero-shot prompts',
  kind: 'model',
  combine: {mode: 'mean'},
  embedding: true,
  required: (setup) => setup.requireClip === true,
  off: () => undefined,
  weight: policyWeight('clip'),
  open,
  async missing(setup) {
    try {
      await loadManifest(setup.modelDir, setup.preset, setup.precision)
      return undefined
    } catch (e) {
      if (!(isModError(e) && e.code === 'model_missing')) throw e
      // No folder in the message: it is shown on the public /health.
      const precision = setup.precision === 'fp32' ? '' : ` --precision ${setup.precision}`
      return `not installed, run \`mod models pull ${setup.preset ?? 'fast'}${precision}\``
    }
  },
  async modelId(setup) {
    return loadManifest(setup.modelDir, setup.preset, setup.precision).then(
      (m) => m.id,
      async (e: unknown) => {
        if (isModError(e) && e.code === 'model_missing' && setup.preset !== undefined) return (await loadPresetManifest(setup.preset)).id
        throw e
      },
    )
  },
}
