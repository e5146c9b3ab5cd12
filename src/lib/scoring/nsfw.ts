/**
 * The NSFW specialist as a signal: its five class probabilities (Drawing, Hentai, Neutral, Porn, Sexy, in the
 * model's output order) → scores for the categories it was trained for.
 */
export const NSFW_CLASSES = ['drawing', 'hentai', 'neutral', 'porn', 'sexy'] as const

/** The categories the specialist can score; the policy's signal weights decide how much it counts. */
export const NSFW_CATEGORIES = ['nudity', 'sexual_activity', 'suggestive'] as const

export function nsfwScores(p: Float32Array): Map<string, number> {
  const [, hentai, , porn, sexy] = p
  const explicit = porn + hentai
  return new Map([
    ['nudity', explicit],
    ['sexual_activity', explicit],
    ['suggestive', sexy],
  ])
}
