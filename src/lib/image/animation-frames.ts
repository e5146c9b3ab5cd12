/** Which frames of an animation, or pages of a multi-page TIFF, are scored. */

/** Frames scored from an animation chosen by display time (scoredFrames); each label keeps its maximum over them. */
export const MAX_FRAMES = 8

/**
 * Frames of an animation scored beyond those chosen by display time, at most: the frames that show other pictures
 * than every frame scored (decode.ts otherFrames). With 8 of them, a slideshow of more than 16 pictures passed with one
 * flagged picture among them, and 8 decoy pictures used them up; 64 in all scores every picture of a slideshow of
 * that many, while frames of one shot in motion add about none.
 */
export const MAX_OTHER_FRAMES = 56

/** Frames of an animation scored at most, in all: an animation showing more pictures is `animation_truncated`. */
export const MAX_ANIMATION_FRAMES = MAX_FRAMES + MAX_OTHER_FRAMES

/**
 * Pages of a multi-page TIFF scored: all of them, up to this many; a file of more is refused rather than scored on
 * some, since a page left out would pass unseen (pages have no display time, and each is decoded on its own).
 */
export const MAX_PAGES = 64

/**
 * A frame whose delay is this many milliseconds or less (0 included) is shown for DEFAULT_DELAY_MS, as browsers
 * show it: Chromium (DeferredImageDecoder::FrameDurationAtIndex, "We follow Firefox's behavior"), Firefox
 * (FrameTimeout::FromRawMilliseconds) and WebKit (ImageDecoderCG::frameDurationAtIndex) all do. libvips reports a GIF
 * frame's delay of 0 as 0 and a WebP's durations as stored, so the rule is applied here.
 */
const SHORTEST_DELAY_MS = 10
const DEFAULT_DELAY_MS = 100

/** How long each frame is on screen, in milliseconds, from the delays the file gives (libvips' `delay`). */
export function displayDurations(delays: readonly number[]): number[] {
  return delays.map((d) => (d > SHORTEST_DELAY_MS ? d : DEFAULT_DELAY_MS))
}

/** `max` frames (pages) evenly spaced by index from first to last; all when there are `max` or fewer. */
export function frameIndices(frames: number, max = MAX_FRAMES): number[] {
  if (frames <= max) return Array.from({length: frames}, (_, i) => i)
  return Array.from({length: max}, (_, k) => Math.round((k * (frames - 1)) / (max - 1)))
}

/**
 * The frames of an animation scored, in display order, chosen by the time each is on screen (displayDurations of
 * `delays`, one per frame): all of them when there are at most MAX_FRAMES; else
 * - the frames on screen at MAX_FRAMES instants evenly spaced from the middle of the first frame to the middle of
 *   the last, so that the first (what a still preview shows) and the last (what stays on screen once an animation
 *   that does not loop ends) are scored, and so is every frame on screen for more than 1/(MAX_FRAMES - 1) of the
 *   animation; with equal delays these are frameIndices' frames;
 * - the frame on screen longest (the first of them on a tie), in place of the sampled frame on screen shortest
 *   (other than the first and last; on a tie, the one nearest the longest) when it was not sampled;
 * - when a long frame took several instants, as many of the other frames, evenly spaced by index among them (the
 *   middle of each of as many equal parts of them).
 */
export function scoredFrames(delays: readonly number[]): number[] {
  const frames = delays.length
  if (frames <= MAX_FRAMES) return frameIndices(frames)
  const durations = displayDurations(delays)
  const chosen = new Set(framesAtInstants(durations))
  const longest = longestOf(durations)
  if (!chosen.has(longest)) {
    if (chosen.size === MAX_FRAMES) chosen.delete(shortestSampled(chosen, durations, longest))
    chosen.add(longest)
  }
  // The middle of each of as many equal parts of the others as there are slots left.
  const rest = durations.map((_, i) => i).filter((i) => !chosen.has(i))
  const slots = MAX_FRAMES - chosen.size
  for (let k = 0; k < slots; k++) chosen.add(rest[Math.floor(((k + 0.5) * rest.length) / slots)])
  return [...chosen].sort((a, b) => a - b)
}

/**
 * The frame on screen at each of MAX_FRAMES instants evenly spaced from the middle of the first frame to the middle
 * of the last. Times are counted in units of 1 / (2 x (MAX_FRAMES - 1)) ms, in which every instant is a whole
 * number: exact, so that equal delays give frameIndices' frames (its rounding of halves up included).
 */
function framesAtInstants(durations: readonly number[]): number[] {
  const span = MAX_FRAMES - 1
  const last = durations.length - 1
  const lastStart = durations.slice(0, last).reduce((sum, d) => sum + d, 0)
  const first = span * durations[0]
  const step = 2 * lastStart + durations[last] - durations[0]
  const picks: number[] = []
  let frame = 0
  let end = 2 * span * durations[0]
  for (let k = 0; k <= span; k++) {
    const instant = first + k * step
    while (instant >= end) end += 2 * span * durations[++frame]
    picks.push(frame)
  }
  return picks
}

/** The sampled frame that makes way for the longest: the one on screen shortest, on a tie the one nearest the longest. */
function shortestSampled(chosen: ReadonlySet<number>, durations: readonly number[], longest: number): number {
  const last = durations.length - 1
  const candidates = [...chosen].filter((i) => i !== 0 && i !== last)
  return candidates.reduce((a, b) => {
    if (durations[a] !== durations[b]) return durations[b] < durations[a] ? b : a
    return Math.abs(b - longest) < Math.abs(a - longest) ? b : a
  })
}

/** The index of the longest duration, the first on a tie. */
export function longestOf(durations: readonly number[]): number {
  return durations.reduce((best, d, i) => (d > durations[best] ? i : best), 0)
}

/** Of an animation's frames decoded (RgbImage.shown), the index of the one on screen longest (the first on a tie); undefined for a still. */
export function longestShown(frames: readonly {shown?: number}[]): number | undefined {
  return frames.length > 1 && frames.every((f) => f.shown !== undefined) ? longestOf(frames.map((f) => f.shown as number)) : undefined
}
