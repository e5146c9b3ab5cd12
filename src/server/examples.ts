/** Example values the OpenAPI document shows; test/server/openapi.test.ts checks each against its schema. */
import {createRequire} from 'node:module'

import {SIGNALS} from '../lib/signals/registry.js'

/** The version of this build (package.json; the same relative path from src/ and dist/), as /health gives it. */
const VERSION = (createRequire(import.meta.url)('../../package.json') as {version: string}).version

export const EXAMPLE_LABELS = [
  {name: 'weapons', score: 0.91, threshold: 0.5, parent: 'violence', violated: true, origin: 'builtin'},
  {name: 'violence', score: 0.42, threshold: 0.5, parent: null, violated: false, origin: 'builtin'},
  {name: 'alcohol', score: 0.03, threshold: 0.5, parent: null, violated: false, origin: 'builtin'},
]

export const EXAMPLE_RESULT = {
  source: 'beach.jpg',
  is_safe: false,
  violations: [{name: 'weapons', confidence: 0.91, parent: 'violence', threshold: 0.5}],
  labels: EXAMPLE_LABELS,
  not_evaluated: [],
}

export const EXAMPLE_ERROR_ENTRY = {
  source: 'notes.txt',
  error: {code: 'unsupported_media', message: 'not an image in a supported format (JPEG, PNG, WebP, GIF, AVIF, TIFF)'},
}

export const EXAMPLE_BATCH = {results: [EXAMPLE_RESULT, EXAMPLE_ERROR_ENTRY]}

export const EXAMPLE_VIDEO = {
  source: 'clip.mp4',
  is_safe: false,
  duration: 12.48,
  fps: 1,
  frames_analyzed: 13,
  stopped_early: false,
  violations: [
    {
      name: 'weapons',
      parent: 'violence',
      threshold: 0.5,
      max_confidence: 0.93,
      segments: [{start: 2, end: 6, frames: 4, max_confidence: 0.93}],
    },
  ],
  not_evaluated: [],
}

const PULL_CLIP = 'needs the CLIP model: not installed, run `mod models pull fast`'

export const EXAMPLE_COVERAGE = {
  evaluated: 3,
  total: 11,
  not_evaluated: [
    'violence',
    'gore',
    'weapons',
    'hate_symbols',
    'drugs',
    'self_harm',
    'alcohol',
    'tobacco',
  ],
}

export const EXAMPLE_CATEGORIES = {
  preset: 'fast',
  model: 'clip-vit-b32',
  coverage: {evaluated: 3, total: 3, not_evaluated: []},
  categories: [
    {
      name: 'weapons',
      parent: 'violence',
      threshold: 0.5,
      origin: 'builtin',
      signals: ['clip'],
      evaluated: true,
      evaluated_by: ['clip'],
      prompts: ['a photo of a gun', 'a photo of a knife used as a weapon'],
      negatives: ['a photo of a kitchen knife on a cutting board'],
    },
    {
      name: 'redness',
      parent: null,
      threshold: 0.5,
      origin: 'custom',
      signals: ['clip'],
      evaluated: true,
      evaluated_by: ['clip'],
      prompts: ['red'],
      negatives: [],
    },
    {name: 'uniforms', parent: null, threshold: 0.7, origin: 'head', signals: ['head'], evaluated: true, evaluated_by: ['head']},
  ],
}

/** A fresh install: the embedded NSFW specialist scores its three categories, the CLIP model is not pulled. */
export const EXAMPLE_HEALTH = {
  status: 'ok',
  version: VERSION,
  model_loaded: true,
  // Every signal of the registry: off unless named here.
  signals: {...Object.fromEntries(SIGNALS.map((s) => [s.name, 'off'])), clip: 'not_installed', nsfw: 'loaded', nudenet: 'not_installed'},
  coverage: EXAMPLE_COVERAGE,
  categories: [
    {name: 'nudity', evaluated: true, evaluated_by: ['nsfw']},
    {name: 'weapons', evaluated: false, evaluated_by: [], reason: PULL_CLIP},
  ],
  policy: {sha256: '3b2f1c0e9d8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c'},
  jobs: 'redis',
  limits: {max_batch: 16, max_bytes: 26_214_400, max_batch_bytes: 104_857_600},
}

export const EXAMPLE_READY = {status: 'ready', coverage: EXAMPLE_COVERAGE}

/** A 16×16 blue PNG: the documentation page's request succeeds as sent, on any server (no URL fetching needed). */
export const EXAMPLE_PNG_BASE64 =
  'iVBORw0KGgoAAAANSUhEUgAAABAAAAAQCAMAAAAoLQ9TAAAAA1BMVEUAAP+KeNJXAAAACXBIWXMAAAPoAAAD6AG1e1JrAAAADUlEQVQY02NgGAXIAAABEAAB7JfjegAAAABJRU5ErkJggg=='

/** An X-Request-Id as the server generates it. */
export const EXAMPLE_REQUEST_ID = '6f1c2a9e-4b7d-4e21-9a3f-0c5d8e7b1a24'

/** Examples shown on the component schemas, by component name. */
export const COMPONENT_EXAMPLES: Record<string, unknown[]> = {
  Label: [EXAMPLE_LABELS[0]],
  Violation: [EXAMPLE_RESULT.violations[0]],
  ModerationResult: [EXAMPLE_RESULT],
  ErrorEntry: [EXAMPLE_ERROR_ENTRY],
  CategoryListing: [EXAMPLE_CATEGORIES.categories[0]],
  Segment: [EXAMPLE_VIDEO.violations[0].segments[0]],
  VideoResult: [EXAMPLE_VIDEO],
  Error: [{error: {code: 'bad_request', message: 'the form has no file in the field "file"', request_id: EXAMPLE_REQUEST_ID}}],
  ModerateJsonRequest: [{image_base64: EXAMPLE_PNG_BASE64}, {url: 'https://example.com/beach.jpg'}],
}
