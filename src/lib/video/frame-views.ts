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

/**
 * One image to score, and whether it stands for the interval rather than the instant, or is one field of the
 * instant's interlaced frame.
 */
export interface FrameView {
  image: RgbImage
  interval?: true
  field?: true
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
 * The fields of an interlaced frame that are other pictures than the frame: none for a frame whose two fields show
 * one picture (progressive content stored interlaced, or a still shot), one when both fields show the same other
 * picture.
 */
function otherFields(frame: RgbImage, top: RgbImage, bottom: RgbImage): FrameView[] {
  const kept = [top, bottom].filter((field) => !sameFrame(frame, field))
  const fields = kept.length === 2 && sameFrame(kept[0], kept[1]) ? [kept[0]] : kept
  return fields.map((image) => ({image, field: true}))
}

/**
 * The views to score of one decoded picture's parts, as the decoder stacks them (decoder.ts stackedParts): the
 * instant's frame (light, then dark when `views` is 2), its fields that are other pictures when `fields`, then the
 * interval's frame alike when `interval`.
 */
export function frameViews(parts: readonly RgbImage[], layout: StackLayout): FrameView[] {
  const {views} = layout
  const instant: FrameView[] = pages(parts[0], views === 2 ? parts[1] : undefined).map((image) => ({image}))
  if (layout.fields) instant.push(...otherFields(parts[0], parts[views], parts[views + 1]))
  if (!layout.interval) return instant
  const first = views + (layout.fields ? 2 : 0)
  const [light, dark] = [parts[first], views === 2 ? parts[first + 1] : undefined]
  // The same on both pages: a picture in the alpha of white pixels is the same on a light page whatever it is.
  if (sameFrame(parts[0], light) && (dark === undefined || sameFrame(parts[1], dark))) return instant
  return [...instant, ...pages(light, dark).map((image): FrameView => ({image, interval: true}))]
}
