/**
 * The features of every image of a dataset, in dataset order: from the feature cache when the same content
 * was seen with the same model, else from the FeatureSource (and then cached). Up to AHEAD images are in
 * flight at once, yielded in order. Files that cannot be read or decoded are yielded as errors.
 */
import {createHash} from 'node:crypto'

import {isModError, ModError} from '../errors.js'
import {readDatasetFile, type Dataset, type DatasetItem} from './dataset.js'
import type {FeatureCache} from './feature-cache.js'
import type {Features, FeatureSource} from './features.js'

export interface Sample {
  source: string
  labels: string[]
  sha256: string
  features: Features
}

export interface SampleError {
  source: string
  error: {code: string; message: string}
}

export interface CollectOptions {
  maxBytes: number
  onProgress?: (done: number, total: number) => void
}

/** Errors that belong to one file: it is reported and the run goes on. */
const ITEM_ERRORS = new Set(['unreadable_image', 'unsupported_media', 'payload_too_large'])
/** Images in flight: read, hashed, decoded and handed to the source together, so it can batch them. */
const AHEAD = 16

export function sha256Hex(data: Buffer): string {
  return createHash('sha256').update(data).digest('hex')
}

async function featuresOf(
  item: DatasetItem,
  source: FeatureSource,
  cache: FeatureCache,
  maxBytes: number,
): Promise<Sample> {
  const data = await readDatasetFile(item.path, maxBytes)
  const sha256 = sha256Hex(data)
  let features = await cache.get(sha256)
  if (features === undefined || features.embedding.length !== source.embeddingSize) {
    features = await source.extract(data)
    await cache.put(sha256, features)
  }
  return {source: item.source, labels: item.labels, sha256, features}
}

export async function* collectFeatures(
  dataset: Dataset,
  source: FeatureSource,
  cache: FeatureCache,
  options: CollectOptions,
): AsyncGenerator<Sample | SampleError> {
  const items = dataset.items()
  const window: {item: DatasetItem; result: Promise<Sample | {err: unknown}>}[] = []
  let done = 0
  let exhausted = false
  const fill = async () => {
    while (!exhausted && window.length < AHEAD) {
      const next = await items.next()
      if (next.done) {
        exhausted = true
        break
      }
      const item = next.value
      const result = featuresOf(item, source, cache, options.maxBytes).catch((err: unknown) => ({err}))
      window.push({item, result})
    }
  }
  for (;;) {
    await fill()
    const head = window.shift()
    if (head === undefined) return
    const r = await head.result
    options.onProgress?.(++done, dataset.images)
    if ('err' in r) {
      const e = r.err
      if (!(isModError(e) && ITEM_ERRORS.has(e.code))) throw e instanceof Error ? e : new ModError('internal', String(e))
      yield {source: head.item.source, error: {code: e.code, message: e.message}}
    } else yield r
  }
}

export const isSampleError = (s: Sample | SampleError): s is SampleError => 'error' in s
