/**
 * What is scored of one sampled picture of a stream: the frame on screen at the instant, as a light page and, with
 * transparency, as a dark page show it; and the frame most like the interval that follows (decoder.ts
 * intervalFrames) unless it is the instant's frame again, so that an uploader who puts an ordinary frame on every
 * instant of the grid does not hide what is on screen the rest of the time. Any difference beyond the two scalings'
 * (blocks of 4 x 4 pixels) counts: a test of "another picture" by coarse blocks of brightness was passed by an ordinary photo brightness-matched
 * to the flagged ones, or a mosaic of them. In a steady shot the two are the same frame and one is scored.
 */
import type {RgbImage} from '../image/rgb.js'
import type {StackLayout} from './decoder.js'

/** One image to score, and whether it stands for the interval rather than the instant. */
export interface FrameView {
  image: RgbImage
  interval?: true
}

/**
 * Mean difference (0-255) of the blocks' colours within which two frames of one size are the same frame: the
 * instant's frame and the interval's are scaled by two filters (bicubic, and a fast bilinear one), which move the
 * samples of fine detail (text, a code's modules) by many levels and a block's mean by a level or two.
 */
const SAME_FRAME = 4

/** Blocks of BLOCK x BLOCK pixels are compared: fine enough that a picture that passes is the picture. */
const BLOCK = 4

/** Each channel's mean over each block of BLOCK x BLOCK pixels. */
function blockMeans(image: RgbImage): Float64Array {
  const columns = Math.ceil(image.width / BLOCK)
  const rows = Math.ceil(image.height / BLOCK)
  const sums = new Float64Array(columns * rows * 3)
  const counts = new Float64Array(columns * rows)
  for (let y = 0; y < image.height; y++) {
    for (let x = 0; x < image.width; x++) {
      const block = Math.floor(y / BLOCK) * columns + Math.floor(x / BLOCK)
      const i = 3 * (y * image.width + x)
      sums[3 * block] += image.data[i]
      sums[3 * block + 1] += image.data[i + 1]
      sums[3 * block + 2] += image.data[i + 2]
      counts[block]++
    }
  }
  return sums.map((sum, k) => sum / counts[Math.floor(k / 3)])
}

/** Whether two frames of one size are the same frame (SAME_FRAME). */
export function sameFrame(a: RgbImage, b: RgbImage): boolean {
  if (a.width !== b.width || a.height !== b.height) return false
  const [ma, mb] = [blockMeans(a), blockMeans(b)]
  let difference = 0
  for (let k = 0; k < ma.length; k++) difference += Math.abs(ma[k] - mb[k])
  return difference / ma.length <= SAME_FRAME
}

/** A frame's views: as a light page shows it, and as a dark one when that differs (an opaque frame is one view). */
function pages(light: RgbImage, dark: RgbImage | undefined): RgbImage[] {
  return dark === undefined || light.data.equals(dark.data) ? [light] : [light, {...dark, onBlack: true}]
}

/**
 * The views to score of one decoded picture's parts, as the decoder stacks them (decoder.ts stackedParts): the
 * instant's frame (light, then dark when `views` is 2), then the interval's frame alike when `interval`.
 */
export function frameViews(parts: readonly RgbImage[], layout: StackLayout): FrameView[] {
  const {views} = layout
  const instant = pages(parts[0], views === 2 ? parts[1] : undefined).map((image) => ({image}))
  if (!layout.interval) return instant
  const [light, dark] = [parts[views], views === 2 ? parts[views + 1] : undefined]
  // The same on both pages: a picture in the alpha of white pixels is the same on a light page whatever it is.
  if (sameFrame(parts[0], light) && (dark === undefined || sameFrame(parts[1], dark))) return instant
  return [...instant, ...pages(light, dark).map((image): FrameView => ({image, interval: true}))]
}
