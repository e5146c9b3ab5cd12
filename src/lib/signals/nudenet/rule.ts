/**
 * How NudeNet's detections combine with the embedded specialist's scores of the nudity family: the detector
 * is a second opinion that confirms or vetoes, never a category of its own.
 *
 * Evidence of a frame: `exposed` is the best score of a detection of an exposed intimate part (EXPOSED_PARTS);
 * `revealing` the best of those and of the parts swimwear and lingerie show (SUGGESTIVE_PARTS: covered genitalia
 * or buttocks, a bare belly); 0 without such a detection. Each maps to agreement = stretch(evidence), a piecewise
 * linear map with stretch(0) = 0, stretch(AGREE) = 0.5 and stretch(1) = 1, AGREE being the package's own
 * default threshold (0.25).
 *
 *   nudity          = specialist's nudity,          if it stands as sure (below)
 *                     min(specialist's nudity, stretch(exposed))           otherwise
 *   sexual_activity = specialist's sexual_activity, if it is at least SURE and stands
 *                     min(specialist's sexual_activity, stretch(exposed))  otherwise
 *   suggestive      = min(specialist's suggestive, stretch(revealing))
 *
 * Where a CLIP model also scores the family, the same caps apply to the combined score (confirmLabels): the
 * detector is a second opinion on the family whichever signals scored it.
 *
 * So below the specialist's sure bar, a category scores 0.5 or more only when both say so: the specialist, and
 * the detector with a detection at its own default threshold or above. The two models err on different images,
 * so requiring both removes most false alarms of either (docs/models.md, "Rules").
 *
 * Measured choices (docs/models.md, "Rules"):
 * - A covered breast is not evidence of anything: the detector finds one on over a third of street-fashion photos
 *   of clothed women, so counting it made "the detector agrees" true of almost any photo of a woman. Covered
 *   genitalia or buttocks and a bare belly stay: a swimsuit shows them, everyday clothes rarely do.
 * - A sure score stands over the detector only where the detector found some part of a person (a face and feet
 *   count) or the specialist judged the picture drawn. A photo in which the detector finds no person at all (a
 *   close-up of skin) is not nudity on the specialist's word alone; drawn nudity keeps its guarantee, because the
 *   detector was trained on photos and misses drawings.
 */
import type {ScoredLabel} from '../../scoring/result.js'
import {SURE, type NsfwCategoryScores, type NsfwJudgement} from '../nsfw/rule.js'
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

/** Evidence of suggestive content: exposed intimate parts, what a swimsuit covers, and a bare belly. */
export const SUGGESTIVE_PARTS: ReadonlySet<NudenetLabel> = new Set<NudenetLabel>([
  ...EXPOSED_PARTS,
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

/**
 * Which of nudity and sexual_activity keep the specialist's score whatever the detector says: a score at SURE or
 * more, unless the detector found no part of a person at all in a picture the specialist did not judge drawn.
 */
function standing(specialist: NsfwJudgement | undefined, detections: readonly Detection[]): Set<keyof NsfwCategoryScores> {
  const out = new Set<keyof NsfwCategoryScores>()
  if (!specialist || (detections.length === 0 && !specialist.drawn)) return out
  if (specialist.scores.nudity >= SURE) out.add('nudity')
  if (specialist.scores.sexual_activity >= SURE) out.add('sexual_activity')
  return out
}

/** The family's scores of a frame from the specialist's judgement (nsfwJudgement) and the detector's detections of the same frame. */
export function combineNudenet(specialist: NsfwJudgement, detections: readonly Detection[]): NsfwCategoryScores {
  const cap = caps(detections)
  const stands = standing(specialist, detections)
  const s = specialist.scores
  return {
    nudity: stands.has('nudity') ? s.nudity : Math.min(s.nudity, cap.nudity),
    sexual_activity: stands.has('sexual_activity') ? s.sexual_activity : Math.min(s.sexual_activity, cap.sexual_activity),
    suggestive: Math.min(s.suggestive, cap.suggestive),
  }
}

/**
 * The same rule on a frame's combined labels: each label of the family keeps its score where the specialist's
 * stands (nudity and sexual_activity), and is capped by the detector's agreement otherwise.
 */
export function confirmLabels(labels: readonly ScoredLabel[], specialist: NsfwJudgement | undefined, detections: readonly Detection[]): ScoredLabel[] {
  const cap = caps(detections)
  const stands = standing(specialist, detections)
  return labels.map((l) => {
    if (!(l.name in cap)) return l
    const name = l.name as keyof NsfwCategoryScores
    return stands.has(name) ? l : {...l, score: Math.min(l.score, cap[name])}
  })
}
