/**
 * From the NSFW specialist's five probabilities to the scores of the policy's sexual-content categories.
 *
 * With p = (Drawing, Hentai, Neutral, Porn, Sexy), already averaged over the views scored (e.g. the image and
 * its mirror), explicit = Porn + Hentai and safe = Drawing + Neutral:
 *
 *   nudity          = explicit − PULL · max(0, safe − explicit)
 *   suggestive      = Sexy − PULL · max(0, safe − Sexy)
 *   sexual_activity = 2 · Porn − 1
 *
 * each clamped to [0, 1]. The pull-down only acts while the safe classes outweigh the class scored, so a score
 * is never lowered once that class holds the majority: every image nsfwjs flags clearly (its argmax is Porn,
 * Hentai or Sexy with p > 0.5) still scores >= 0.5 in nudity or suggestive; nothing nsfwjs is sure of is lost.
 * What it trades: nsfwjs's own rule (argmax in Porn/Hentai/Sexy) also flags plurality winners below 0.5 (Sexy
 * 0.40 beside Neutral 0.35 and Drawing 0.25), which on ordinary photos are mostly portraits, skin-coloured
 * surfaces and bare arms; at 0.5 this rule does not, and below 0.5 such mixed images sit well under their raw
 * probability (Porn 0.35 with Neutral 0.6 gives nudity 0.225), so a strict threshold flags fewer of them.
 * Porn and Hentai count together because drawn nudity moves probability between them. Sexy never counts as
 * nudity (swimwear and lingerie are its training examples). The model has no class for sexual acts: only a
 * dominant Porn probability (>= 0.75 for a score of 0.5) is taken as evidence of sexual activity.
 */
import {NSFW_CLASSES} from '../../model/nsfw-manifest.js'

/** How strongly the safe classes pull a score down when they outweigh it. */
export const NSFW_PULL = 0.5

export interface NsfwCategoryScores {
  nudity: number
  sexual_activity: number
  suggestive: number
}

const clamp01 = (x: number): number => Math.min(1, Math.max(0, x))

export function nsfwCategoryScores(p: ArrayLike<number>): NsfwCategoryScores {
  if (p.length !== NSFW_CLASSES.length) throw new RangeError(`nsfwCategoryScores: ${p.length} probabilities, expected ${NSFW_CLASSES.length}`)
  const [drawing, hentai, neutral, porn, sexy] = Array.from(p)
  const explicit = porn + hentai
  const safe = drawing + neutral
  return {
    nudity: clamp01(explicit - NSFW_PULL * Math.max(0, safe - explicit)),
    sexual_activity: clamp01(2 * porn - 1),
    suggestive: clamp01(sexy - NSFW_PULL * Math.max(0, safe - sexy)),
  }
}

/** The mean of several views' probabilities (e.g. an image and its mirror), class by class. */
export function averageViews(views: ArrayLike<number>[]): Float32Array {
  if (views.length === 0) throw new RangeError('averageViews: no views')
  const out = new Float32Array(NSFW_CLASSES.length)
  for (const v of views) for (let k = 0; k < out.length; k++) out[k] += v[k] / views.length
  return out
}
