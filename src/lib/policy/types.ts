import type {TextRule} from '../signals/text/rules.js'
import type {Origin} from '../types.js'

export const PRESETS = ['fast', 'balanced', 'accurate'] as const
export type PresetName = (typeof PRESETS)[number]

/** calibrated = sigmoid(scale * raw + bias), where raw is the category's logit margin (scoring/score.ts). */
export interface Calibration {
  scale: number
  bias: number
}

/**
 * How much each signal (by its name in the signal registry) counts in a category's score: a weighted mean over
 * the signals that ran.
 */
export type SignalWeights = Readonly<Partial<Record<string, number>>>

export interface Category {
  name: string
  parent: string | null
  threshold: number
  prompts: string[]
  negatives: string[]
  calibration: Calibration
  origin: Exclude<Origin, 'head'>
  signals: SignalWeights
}

/** Per signal the policy can switch off (the registry's switchable ones): whether it runs (`specialists: {nsfw: false}`). */
export type Specialists = Readonly<Record<string, boolean>>

/** A list of known-bad PDQ hashes as the policy names it, its file resolved against the policy file's folder. */
export interface PolicyHashList {
  name: string
  /** Absolute path of the list file. */
  file: string
  /** The category its matches are violations of. */
  category: string
  /** Largest Hamming distance that matches. */
  distance: number
}

/** The active policy: defaults merged with a policy file. Disabled categories are already removed. */
export interface Policy {
  preset?: PresetName
  trim_borders: boolean
  categories: Category[]
  /** Shared neutral prompts: every category's positives are weighed against these and its own negatives. */
  neutral: string[]
  specialists: Specialists
  /** Hash lists whose matches are violations (the `pdq` signal runs only when there is one). */
  hash_lists: PolicyHashList[]
  /** Rules over the text read in images: present only when the policy has at least one. */
  text?: TextPolicy
}

export interface TextPolicy {
  /** Read the frames of videos too. */
  video: boolean
  /** Word lists hold their files' entries. */
  rules: TextRule[]
}
