/**
 * From the NSFW specialist's class probabilities to the scores of the policy's sexual-content categories.
 *
 * One view first. With p = (Drawing, Hentai, Neutral, Porn, Sexy) for a view, explicit = Porn + Hentai and
 * safe = Drawing + Neutral:
 *
 *   nudity          = explicit − PULL · max(0, safe − explicit)
 *   sexual_activity = 2 · Porn − 1
 *   suggestive      = stretch(Sexy − PULL · max(0, safe − Sexy)), with stretch(SUGGESTIVE_BAR) = 0.5
 *
 * each clamped to [0, 1]. The pull-down only acts while the safe classes outweigh the class scored. Porn and
 * Hentai count together because drawn nudity moves probability between them; Sexy never counts as nudity
 * (swimwear and lingerie are its training examples). The model has no class for sexual acts: only a dominant
 * Porn probability (>= 0.75 for a score of 0.5) counts as evidence of one, a stronger bar than nudity's. Sexy
 * is the model's weakest class (on ordinary photos it fires on orange balls, red socks, a banjo, sportswear),
 * so suggestive needs Sexy 0.7 for a score of 0.5, not 0.5.
 *
 * Then the views of a frame (the image, its mirror, its centre enlarged, the whole image undistorted: see
 * runner.ts): each category scores the LOWEST of its views' scores. On ordinary photos the model's
 * confident mistakes (a green apple or a dog rated 0.7 explicit) rarely survive a second framing of the same
 * pixels, while a picture that really shows nudity shows it in every framing. Agreement, not averaging:
 * an average still flags an image one view rates 0.9 and another 0.3.
 *
 * Recall guarantee: a frame whose image AND mirror both rate explicit >= SURE (0.9) scores at least the lower
 * of the two for nudity, whatever the other views say (the centre and letterbox views confirm uncertain looks;
 * they never overrule two sure ones). So with the specialist alone such a frame is always flagged for nudity.
 */
import {NSFW_CLASSES} from '../../model/nsfw-manifest.js'

/** How strongly the safe classes pull a score down when they outweigh it. */
export const NSFW_PULL = 0.5

/** The suggestive evidence (Sexy after the pull-down) that scores 0.5. */
export const SUGGESTIVE_BAR = 0.7

/** Image and mirror both at least this explicit: nudity stands, whatever the other views say. */
export const SURE = 0.9

/** A first look scoring below this in every category is final: the other views could only lower it. */
export const LOOK_AGAIN = 0.25

export interface NsfwCategoryScores {
  nudity: number
  sexual_activity: number
  suggestive: number
}

const clamp01 = (x: number): number => Math.min(1, Math.max(0, x))

/** Piecewise linear: 0 → 0, bar → 0.5, 1 → 1. */
function stretch(x: number, bar: number): number {
  return x < bar ? (0.5 * x) / bar : 0.5 + (0.5 * (x - bar)) / (1 - bar)
}

/** The category scores of one view's five probabilities. */
export function viewScores(p: ArrayLike<number>): NsfwCategoryScores {
  if (p.length !== NSFW_CLASSES.length) throw new RangeError(`viewScores: ${p.length} probabilities, expected ${NSFW_CLASSES.length}`)
  const [drawing, hentai, neutral, porn, sexy] = Array.from(p)
  const explicit = porn + hentai
  const safe = drawing + neutral
  return {
    nudity: clamp01(explicit - NSFW_PULL * Math.max(0, safe - explicit)),
    sexual_activity: clamp01(2 * porn - 1),
    suggestive: stretch(clamp01(sexy - NSFW_PULL * Math.max(0, safe - sexy)), SUGGESTIVE_BAR),
  }
}

/** Whether a first look is worth the other views: some category scores LOOK_AGAIN or more. */
export function looksAgain(first: ArrayLike<number>): boolean {
  return Object.values(viewScores(first)).some((s) => s >= LOOK_AGAIN)
}

/**
 * The category scores of a frame from its views' probabilities laid end to end (five per view): the first view
 * alone, or the image, its mirror and any further views.
 */
export function nsfwCategoryScores(views: ArrayLike<number>): NsfwCategoryScores {
  const n = NSFW_CLASSES.length
  if (views.length === 0 || views.length % n !== 0) throw new RangeError(`nsfwCategoryScores: ${views.length} probabilities, expected ${n} per view`)
  const p = Array.from(views)
  const all = Array.from({length: p.length / n}, (_, i) => viewScores(p.slice(i * n, (i + 1) * n)))
  const lowest = (k: keyof NsfwCategoryScores, some = all) => Math.min(...some.map((s) => s[k]))
  const sure = all.length >= 2 ? lowest('nudity', all.slice(0, 2)) : 0
  return {
    nudity: sure >= SURE ? sure : lowest('nudity'),
    sexual_activity: lowest('sexual_activity'),
    suggestive: lowest('suggestive'),
  }
}
