/**
 * How NudeNet's detections combine with the embedded specialist's scores of the nudity family: the detector
 * is a second opinion that confirms or vetoes, never a category of its own.
 *
 * Evidence of a frame: `exposed` is the best score of a detection of an exposed intimate part (EXPOSED_PARTS);
 * `revealing` the best of those and of covered intimate parts or a bare belly (SUGGESTIVE_PARTS: swimwear and
 * lingerie show them); 0 without such a detection. Each maps to agreement = stretch(evidence), a piecewise
 * linear map with stretch(0) = 0, stretch(AGREE) = 0.5 and stretch(1) = 1, AGREE being the package's own
 * default threshold (0.25).
 *
 *   nudity          = specialist's nudity,          if it is at least SURE (0.9)
 *                     min(specialist's nudity, stretch(exposed))           otherwise
 *   sexual_activity = specialist's sexual_activity, if it is at least SURE
 *                     min(specialist's sexual_activity, stretch(exposed))  otherwise
 *   suggestive      = min(specialist's suggestive, stretch(revealing))
 *
 * Where a CLIP model also scores the family, the same caps apply to the combined score (confirmLabels): the
 * detector is a second opinion on the family whichever signals scored it.
 *
 * So below the specialist's sure bar, a category scores 0.5 or more only when both say so: the specialist, and
 * the detector with a detection at its own default threshold or above. The two models err on different images
 * (on ordinary photos, the specialist on apples, trucks and dogs; the detector on skin-coloured shapes), so
 * requiring both removes most false alarms of either (bench/README.md, nudenet).
 *
 * Recall guarantee kept: a frame the specialist rates Porn + Hentai >= 0.9 on both the image and its mirror
 * scores nudity >= 0.9 from the specialist (nsfw-rule.ts), which stands here whatever the detector says. The
 * detector never raises a score above the specialist's: what it misses (drawn nudity, partial views, nudity it
 * was not trained on) stays as the specialist scores it when that is sure, and is otherwise not flagged.
 */
import type {ScoredLabel} from '../../scoring/result.js'
import {SURE, type NsfwCategoryScores} from '../nsfw/rule.js'
import type {Detection} from './decode.js'
import type {NudenetLabel} from './labels.js'

/** A detection at this score counts as the detector agreeing (0.5 after stretch): the package's default. */
export const AGREE = 0.25

/** Exposed intimate parts: evidence of nudity. */
export const EXPOSED_PARTS: ReadonlySet<NudenetLabel> = new Set<NudenetLabel>([
  'FEMALE_BREAST_EXPOSED',
  'FEMALE_GENITALIA_EXPOSED',
  'MALE_GENITALIA_EXPOSED',
  'ANUS_EXPOSED',
  'BUTTOCKS_EXPOSED',
])

/** Evidence of suggestive content: exposed intimate parts, covered ones and a bare belly. */
export const SUGGESTIVE_PARTS: ReadonlySet<NudenetLabel> = new Set<NudenetLabel>([
  ...EXPOSED_PARTS,
  'FEMALE_BREAST_COVERED',
  'FEMALE_GENITALIA_COVERED',
  'BUTTOCKS_COVERED',
  'ANUS_COVERED',
  'BELLY_EXPOSED',
])

/** Piecewise linear: 0 → 0, AGREE → 0.5, 1 → 1. */
export function agreement(score: number): number {
  const s = Math.min(1, Math.max(0, score))
  return s < AGREE ? (0.5 * s) / AGREE : 0.5 + (0.5 * (s - AGREE)) / (1 - AGREE)
}

/** The best score of a detection with one of `labels`; 0 without one. */
export function evidence(detections: readonly Detection[], labels: ReadonlySet<NudenetLabel>): number {
  return detections.reduce((best, d) => (labels.has(d.label) && d.score > best ? d.score : best), 0)
}

/** Per category of the family, the highest score the detector's detections allow it below the sure bar. */
function caps(detections: readonly Detection[]): NsfwCategoryScores {
  const exposed = agreement(evidence(detections, EXPOSED_PARTS))
  return {nudity: exposed, sexual_activity: exposed, suggestive: agreement(evidence(detections, SUGGESTIVE_PARTS))}
}

/** The family's scores of a frame from the specialist's scores (nsfwCategoryScores) and the detector's detections of the same frame. */
export function combineNudenet(specialist: NsfwCategoryScores, detections: readonly Detection[]): NsfwCategoryScores {
  const cap = caps(detections)
  return {
    nudity: specialist.nudity >= SURE ? specialist.nudity : Math.min(specialist.nudity, cap.nudity),
    sexual_activity: specialist.sexual_activity >= SURE ? specialist.sexual_activity : Math.min(specialist.sexual_activity, cap.sexual_activity),
    suggestive: Math.min(specialist.suggestive, cap.suggestive),
  }
}

/**
 * The same rule on a frame's combined labels: each label of the family keeps its score where the specialist
 * scored it at SURE or more (nudity and sexual_activity), and is capped by the detector's agreement otherwise.
 */
export function confirmLabels(labels: readonly ScoredLabel[], specialist: NsfwCategoryScores | undefined, detections: readonly Detection[]): ScoredLabel[] {
  const cap = caps(detections)
  return labels.map((l) => {
    if (!(l.name in cap)) return l
    const name = l.name as keyof NsfwCategoryScores
    const sure = name !== 'suggestive' && (specialist?.[name] ?? 0) >= SURE
    return sure ? l : {...l, score: Math.min(l.score, cap[name])}
  })
}
