/**
 * What is scored of one sampled picture of a stream: the frame on screen at the instant, as a light page and, with
 * transparency, as a dark page show it; and the frame most like the interval that follows (decoder.ts
 * intervalFrames) when it is another picture than the instant's, so that an uploader who puts an ordinary frame on
 * every instant of the grid does not hide what is on screen the rest of the time. In a steady shot the two are alike
 * and the instant's frame alone is scored.
 */
import {coarseOf, otherPictures} from '../image/coarse.js'
import type {RgbImage} from '../image/rgb.js'

/** One image to score, and whether it stands for the interval rather than the instant. */
export interface FrameView {
  image: RgbImage
  interval?: true
}

/** Whether two frames of one size are other pictures (coarse.ts). */
export function otherPicture(a: RgbImage, b: RgbImage): boolean {
  return otherPictures(coarseOf(a), coarseOf(b))
}

/** A frame's views: as a light page shows it, and as a dark one when that differs (an opaque frame is one view). */
function pages(light: RgbImage, dark: RgbImage | undefined): RgbImage[] {
  return dark === undefined || light.data.equals(dark.data) ? [light] : [light, {...dark, onBlack: true}]
}

/**
 * The views to score of one decoded picture's parts, as the decoder stacks them (decoder.ts stackedParts): the
 * instant's frame (light, then dark when `views` is 2), then the interval's frame alike when `interval`.
 */
export function frameViews(parts: readonly RgbImage[], layout: {views: 1 | 2; interval: boolean}): FrameView[] {
  const {views} = layout
  const instant = pages(parts[0], views === 2 ? parts[1] : undefined).map((image) => ({image}))
  if (!layout.interval) return instant
  const [light, dark] = [parts[views], views === 2 ? parts[views + 1] : undefined]
  // Alike on both pages: a picture in the alpha of white pixels is the same on a light page whatever it is.
  if (!otherPicture(parts[0], light) && (dark === undefined || !otherPicture(parts[1], dark))) return instant
  return [...instant, ...pages(light, dark).map((image): FrameView => ({image, interval: true}))]
}
