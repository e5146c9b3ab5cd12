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
  /** Where it comes from (a head's labels, `head`, are not categories). */
  origin: 'builtin' | 'custom'
  signals: SignalWeights
}

/** Per signal the policy can switch off (the registry's switchable ones): whether it runs (`specialists: {nsfw: false}`). */
export type Specialists = Readonly<Record<string, boolean>>

/** The active policy: defaults merged with a policy file. Disabled categories are already removed. */
export interface Policy {
  preset?: PresetName
  trim_borders: boolean
  categories: Category[]
  /** Shared neutral prompts: every category's positives are weighed against these and its own negatives. */
  neutral: string[]
  specialists: Specialists
  /**
   * Each signal section's part, by its key in the policy file (`hash_lists`, `text`): read by its signal through
   * an accessor in the signal's folder (`hashListsOf`, `textPolicyOf`).
   */
  sections: Readonly<Record<string, unknown>>
}

