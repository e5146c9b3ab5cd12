/**
 * From the NSFW specialist's class probabilities to the scores of the policy's sexual-content categories.
 *
 * The specialist is a cascade of two classifiers of the same five classes (nsfwjs's MobileNetV2 and InceptionV3,
 * runner.ts). The small one looks at every frame once; only a frame it rates at least GATE Porn + Hentai or Sexy is
 * looked at again, by the large one, in three views. The large one is the judge: on photos of people it tells
 * clothes and skin from nudity far better (docs/models.md, "The specialist"), and the gate keeps its cost to the
 * frames that need it (about 7% of ordinary photos, half of photos of people).
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
 * (swimwear and lingerie are its training examples). The models have no class for sexual acts: only a dominant
 * Porn probability (>= 0.75 for a score of 0.5) counts as evidence of one, a stronger bar than nudity's.
 * Suggestive needs Sexy 0.7 for a score of 0.5, not 0.5: Sexy is the classes' weakest.
 *
 * Then the judge's views of a frame (the image squeezed to a square, its centre enlarged, the whole image
 * undistorted: see runner.ts): each category scores the LOWEST of its views' scores. A confident mistake rarely
 * survives a second framing of the same pixels, while a picture that really shows nudity shows it in every
 * framing. Agreement, not averaging: an average still flags an image one view rates 0.9 and another 0.3.
 * Suggestive leaves the centre view out (SUGGESTIVE_VIEWS): enlarged from a small upload, the centre is the view
 * that changes most with the upload's size, and on swimwear photos it turned a fifth of the verdicts around
 * between a photo and its 800-pixel copy; nudity keeps it, where it is what clears most close-ups of skin
 * (docs/models.md, "Rules").
 * A frame the gate stops scores the small model's one view, which is below GATE in every class it scores.
 *
 * Quarter turns: both models were trained on pictures the right way up, and read a photo turned on its side (a
 * phone's photo whose orientation tag was stripped, or one turned to slip past a filter) as far less suggestive: of
 * 84 swimwear photos 90.5% were flagged, turned a quarter either way 50% and 37%, upside down 49%. The gate also
 * looks at the three other quarter turns of a frame it lets through (the small model on turned copies of its view;
 * not where no turn could rate enough higher: turnsWorthLooking), and where one rates Porn + Hentai or Sexy more than
 * TURN_MARGIN above the frame as given, the judge also looks at that turn (its three views, turned; the image view
 * first, the other two only if it scores some category above the frame: turnCouldRaise). Each category scores the
 * HIGHER of the two judgements: the frame as given keeps every score it had, and a turn adds its judgement only when
 * the gate finds it clearly more telling. On photos of people the right way up is the gate's most telling turn nine
 * times in ten (docs/models.md, "Rules").
 *
 * Recall guarantee: a frame whose image AND letterbox views both rate explicit >= SURE (0.9) scores at least the
 * lower of the two for nudity, whatever the centre view says (it confirms uncertain looks; it never overrules two
 * sure ones). So with the specialist alone such a frame is always flagged for nudity.
 */
import {NSFW_CLASSES} from './manifest.js'

/** How strongly the safe classes pull a score down when they outweigh it. */
export const NSFW_PULL = 0.5

/** The suggestive evidence (Sexy after the pull-down) that scores 0.5. */
export const SUGGESTIVE_BAR = 0.7

/** The judge's image and letterbox views both at least this explicit: nudity stands, whatever the centre says. */
export const SURE = 0.9

/**
 * The small model's Porn + Hentai or Sexy from which the judge looks: below the 0.25 at which no photo the judge flags
 * on the photo sets is stopped (docs/models.md, "Rules"), a margin for photos unlike them, and high enough that most
 * ordinary photos (88%) stop there.
 */
export const GATE = 0.15

/**
 * How much higher than the frame as given the gate must rate a quarter turn (the larger of Porn + Hentai and Sexy)
 * for the judge to look at that turn. The turns of a picture with no right way up (a close-up of skin, a texture)
 * rate within a few hundredths of each other or scatter: 0.1 sent the judge to a turn of one in seven skin
 * close-ups, 0.2 to one in fifteen, for a few turned photos of people fewer found (docs/models.md, "Rules").
 */
export const TURN_MARGIN = 0.2

/** The judge's views, in the order their probabilities follow the gate's. */
export const JUDGE_VIEWS = ['image', 'centre', 'letterbox'] as const

/** The views suggestive takes the lowest of: all but the centre. */
export const SUGGESTIVE_VIEWS: readonly (typeof JUDGE_VIEWS)[number][] = ['image', 'letterbox']

/** Probabilities per view: one per class. */
const N = NSFW_CLASSES.length

export interface NsfwCategoryScores {
  nudity: number
  sexual_activity: number
  suggestive: number
}

/** A frame's scores, and what a second opinion (NudeNet) needs to know of how they were reached. */
export interface NsfwJudgement {
  scores: NsfwCategoryScores
  /** The explicit probability is mostly Hentai (drawn), not Porn, on the judge's image and letterbox (or the gate's one view): what a photo detector cannot see. */
  drawn: boolean
}

const clamp01 = (x: number): number => Math.min(1, Math.max(0, x))

/** Piecewise linear: 0 → 0, bar → 0.5, 1 → 1. */
function stretch(x: number, bar: number): number {
  return x < bar ? (0.5 * x) / bar : 0.5 + (0.5 * (x - bar)) / (1 - bar)
}

/** The category scores of one view's five probabilities. */
export function viewScores(p: ArrayLike<number>): NsfwCategoryScores {
  if (p.length !== N) throw new RangeError(`viewScores: ${p.length} probabilities, expected ${N}`)
  const [drawing, hentai, neutral, porn, sexy] = Array.from(p)
  const explicit = porn + hentai
  const safe = drawing + neutral
  return {
    nudity: clamp01(explicit - NSFW_PULL * Math.max(0, safe - explicit)),
    sexual_activity: clamp01(2 * porn - 1),
    suggestive: stretch(clamp01(sexy - NSFW_PULL * Math.max(0, safe - sexy)), SUGGESTIVE_BAR),
  }
}

/** How telling the gate finds a view: the larger of Porn + Hentai and Sexy. */
const telling = (p: ArrayLike<number>): number => Math.max(p[1] + p[3], p[4])

/** Whether the small model's look at a frame is worth the judge's: Porn + Hentai or Sexy at GATE or more. */
export function passesGate(first: ArrayLike<number>): boolean {
  if (first.length !== N) throw new RangeError(`passesGate: ${first.length} probabilities, expected ${N}`)
  return telling(first) >= GATE
}

/**
 * Which quarter turn of a frame the gate let through the judge also looks at, from the gate's probabilities for
 * the frame as given (`first`) and for its turns by 90, 180 and 270 degrees clockwise (`turns`): the most telling
 * turn, 1, 2 or 3 (quarters), if it is more than TURN_MARGIN more telling than the frame; otherwise 0, none.
 */
export function turnToJudge(first: ArrayLike<number>, turns: readonly ArrayLike<number>[]): 0 | 1 | 2 | 3 {
  if (turns.length !== 3 || [first, ...turns].some((p) => p.length !== N)) throw new RangeError(`turnToJudge: expected ${N} probabilities for the frame and each of its three turns`)
  let best: 0 | 1 | 2 | 3 = 0
  let bar = telling(first) + TURN_MARGIN
  turns.forEach((p, i) => {
    if (telling(p) > bar) {
      best = (i + 1) as 1 | 2 | 3
      bar = telling(p)
    }
  })
  return best
}

/**
 * Whether the judgement of a quarter turn could raise any score of the frame as given (`given`: the gate's and the
 * judge's probabilities, as nsfwJudgement reads them) when the judge rates the turn's image view `image`: each of a
 * judgement's scores is at most its image view's (the lowest of the views, or for nudity's recall guarantee the lower
 * of image and letterbox), so where the image view scores no category above the frame's, the turn's other views
 * need not be looked at.
 */
export function turnCouldRaise(given: ArrayLike<number>, image: ArrayLike<number>): boolean {
  if (given.length !== JUDGED) throw new RangeError(`turnCouldRaise: ${given.length} probabilities for the frame, expected ${JUDGED}`)
  const frame = nsfwJudgement(given).scores
  const turned = viewScores(image)
  return turned.nudity > frame.nudity || turned.sexual_activity > frame.sexual_activity || turned.suggestive > frame.suggestive
}

/**
 * Whether a quarter turn of a frame the gate rates `first` could be more than TURN_MARGIN more telling: not once the
 * frame is within TURN_MARGIN of the most a view can be (1), as most swimwear photos and close-ups of skin are.
 */
export function turnsWorthLooking(first: ArrayLike<number>): boolean {
  return telling(first) + TURN_MARGIN < 1
}

/** Probabilities of a frame the judge looked at: the gate's view and the judge's JUDGE_VIEWS. */
const JUDGED = N * (1 + JUDGE_VIEWS.length)

/**
 * A frame's judgement from its probabilities laid end to end (five per view): the gate's view alone; the gate's
 * view followed by the judge's JUDGE_VIEWS; or those followed by the same for the quarter turn the judge also
 * looked at (turnToJudge), when each category scores the higher of the two judgements.
 */
export function nsfwJudgement(outputs: ArrayLike<number>): NsfwJudgement {
  const p = Array.from(outputs)
  if (p.length !== N && p.length !== JUDGED && p.length !== 2 * JUDGED) {
    throw new RangeError(`nsfwJudgement: ${p.length} probabilities, expected ${N} (the gate's view), ${JUDGED} (and the judge's) or ${2 * JUDGED} (and a quarter turn's)`)
  }
  if (p.length === N) return {scores: viewScores(p), drawn: p[1] > p[3]}
  if (p.length === 2 * JUDGED) {
    const [given, turned] = [judged(p.slice(0, JUDGED)), judged(p.slice(JUDGED))]
    const higher = (k: keyof NsfwCategoryScores) => Math.max(given.scores[k], turned.scores[k])
    return {
      scores: {nudity: higher('nudity'), sexual_activity: higher('sexual_activity'), suggestive: higher('suggestive')},
      // Drawn or photographed, as the judgement that gives the nudity score sees it.
      drawn: (turned.scores.nudity > given.scores.nudity ? turned : given).drawn,
    }
  }
  return judged(p)
}

/** The judgement of a frame the judge looked at: the gate's five probabilities, then the judge's JUDGE_VIEWS. */
function judged(p: number[]): NsfwJudgement {
  const views = JUDGE_VIEWS.map((_, i) => p.slice(N * (i + 1), N * (i + 2)))
  const all = views.map(viewScores)
  const lowest = (k: keyof NsfwCategoryScores, some = all) => Math.min(...some.map((s) => s[k]))
  const suggestiveViews = all.filter((_, i) => SUGGESTIVE_VIEWS.includes(JUDGE_VIEWS[i]))
  const [image, , letterbox] = all
  const sureNudity = Math.min(image.nudity, letterbox.nudity)
  // Drawn or photographed, as the two views of the recall guarantee see it.
  const [imageP, , letterboxP] = views
  return {
    scores: {nudity: sureNudity >= SURE ? sureNudity : lowest('nudity'), sexual_activity: lowest('sexual_activity'), suggestive: lowest('suggestive', suggestiveViews)},
    drawn: imageP[1] + letterboxP[1] > imageP[3] + letterboxP[3],
  }
}

/** The category scores of a frame (nsfwJudgement's). */
export function nsfwCategoryScores(outputs: ArrayLike<number>): NsfwCategoryScores {
  return nsfwJudgement(outputs).scores
}
