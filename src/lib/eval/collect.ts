/**
 * The features of every image of a dataset, in dataset order: from the feature cache when the same content
 * was seen with the same model, else from the FeatureSource (and then cached). Up to AHEAD images are in
 * flight at once, yielded in order. Files that cannot be read or decoded are yielded as errors.
 */
import {createHash} from 'node:crypto'

import {ModError} from '../errors.js'
import {isItemError, itemErrorEntry} from '../item-errors.js'
import {orderedMap} from '../pipeline/ordered.js'
import {readDatasetFile, type Dataset, type DatasetItem} from './dataset.js'
import type {FeatureCache} from './feature-cache.js'
import type {Features, FeatureSource} from './features.js'
import type {ErrorEntry} from '../types.js'

export interface Sample {
  source: string
  labels: string[]
  sha256: string
  features: Features
}

/** A file that could not be read or decoded: reported in its place, left out of the figures. */
export type SampleError = ErrorEntry

export interface CollectOptions {
  maxBytes: number
  onProgress?: (done: number, total: number) => void
  /** Stops the run between images once aborted (a stop signal): the images in flight are dropped. */
  signal?: AbortSignal
}

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
  const data = await readDatasetFile(item, maxBytes)
  const sha256 = sha256Hex(data)
  let features = await cache.get(sha256)
  if (features === undefined || features.embedding.length !== source.embeddingSize) {
    features = await source.extract(data)
    await cache.put(sha256, features)
  } else if (source.hasLive) {
    features = await source.extract(data, features)
  }
  return {source: item.source, labels: item.labels, sha256, features}
}

export async function* collectFeatures(
  dataset: Dataset,
  source: FeatureSource,
  cache: FeatureCache,
  options: CollectOptions,
): AsyncGenerator<Sample | SampleError> {
  let done = 0
  const samples = orderedMap(dataset.items(), AHEAD, (item) =>
    featuresOf(item, source, cache, options.maxBytes).catch((e: unknown): SampleError => {
      if (isItemError(e)) return itemErrorEntry(item.source, e)
      throw e instanceof Error ? e : new ModError('internal', String(e))
    }),
  )
  for await (const s of samples) {
    options.signal?.throwIfAborted()
    options.onProgress?.(++done, dataset.images)
    yield s
  }
}

export const isSampleError = (s: Sample | SampleError): s is SampleError => 'error' in s
