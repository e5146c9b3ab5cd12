/**
 * What is scored of one sampled picture of a stream: the frame on screen at the instant, as a light page and, with
 * transparency, as a dark page show it; and the frame most like the interval that follows (decoder.ts
 * intervalFrames) unless it is the instant's frame again, so that an uploader who puts an ordinary frame on every
 * instant of the grid does not hide what is on screen the rest of the time. Any difference beyond the two scalings'
 * counts: a test of "another picture" by coarse blocks of brightness was passed by an ordinary photo brightness-matched
 * to the flagged ones, or a mosaic of them. In a steady shot the two are the same frame and one is scored.
 */
import type {RgbImage} from '../image/rgb.js'

/** One image to score, and whether it stands for the interval rather than the instant. */
export interface FrameView {
  image: RgbImage
  interval?: true
}

/**
 * Mean difference per sample (0-255) within which two frames of one size are the same frame: the instant's frame and
 * the interval's are scaled by two filters (bicubic, and a fast bilinear one), which move a sample by a level or two.
 */
const SAME_FRAME = 4

/**
 * Whether two frames of one size are the same frame (SAME_FRAME), from every sample: a subset would weigh a regular
 * pattern (a GIF's dithering) by where it falls.
 */
export function sameFrame(a: RgbImage, b: RgbImage): boolean {
  if (a.width !== b.width || a.height !== b.height) return false
  let difference = 0
  for (let i = 0; i < a.data.length; i++) difference += Math.abs(a.data[i] - b.data[i])
  return difference / a.data.length <= SAME_FRAME
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
  // The same on both pages: a picture in the alpha of white pixels is the same on a light page whatever it is.
  if (sameFrame(parts[0], light) && (dark === undefined || sameFrame(parts[1], dark))) return instant
  return [...instant, ...pages(light, dark).map((image): FrameView => ({image, interval: true}))]
}
