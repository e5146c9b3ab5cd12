/** Shapes shared by the engine's modules and its adapters (CONTRACTS §2). */

export type Origin = 'builtin' | 'custom' | 'head'

export interface Label {
  name: string
  score: number
  threshold: number
  parent: string | null
  violated: boolean
  origin: Origin
}

export interface Violation {
  name: string
  confidence: number
  parent: string | null
  threshold: number
}

export interface ModerationResult {
  source: string
  is_safe: boolean
  violations: Violation[]
  labels: Label[]
  /** Categories of the policy that no loaded signal could score (e.g. no CLIP model installed); empty when all were. */
  not_evaluated: string[]
}

export interface ErrorEntry {
  source: string
  error: {code: string; message: string}
}

export interface CategoryListing {
  name: string
  parent: string | null
  threshold: number
  origin: Origin
  /** What feeds the category's score: `clip` (zero-shot prompts), `nsfw` (the embedded specialist), `head`. */
  signals: ('clip' | 'nsfw' | 'head')[]
  prompts?: string[]
  negatives?: string[]
}

export interface CategoriesResult {
  preset: string
  model: string
  categories: CategoryListing[]
}

export interface Segment {
  start: number
  end: number
  frames: number
  max_confidence: number
}

export interface VideoViolation {
  name: string
  parent: string | null
  threshold: number
  max_confidence: number
  segments: Segment[]
}

export interface VideoResult {
  source: string
  is_safe: boolean
  duration: number
  fps: number
  frames_analyzed: number
  stopped_early: boolean
  violations: VideoViolation[]
  not_evaluated: string[]
}

/** Decoded pixels: interleaved RGB (3 channels, no alpha), row-major. */
export interface RgbImage {
  data: Buffer
  width: number
  height: number
}
