/**
 * What is scored of one sampled picture of a stream: the frame on screen at the instant, as a light page and, with
 * transparency, as a dark page show it; and the frame most like the interval that follows (decoder.ts
 * intervalFrames) when it is another picture than the instant's, so that an uploader who puts an ordinary frame on
 * every instant of the grid does not hide what is on screen the rest of the time. In a steady shot the two are alike
 * and the instant's frame alone is scored.
 */
import type {RgbImage} from '../image/rgb.js'

/** One image to score, and whether it stands for the interval rather than the instant. */
export interface FrameView {
  image: RgbImage
  interval?: true
}

/** A coarse picture of the frame: the mean brightness of each of GRID x GRID blocks. */
const GRID = 8

/**
 * Mean difference of the blocks' brightness (0-255) above which two frames are other pictures: a cut to another
 * shot moves it far past this, motion within a shot far less (measured in bench/video.ts).
 */
const OTHER_PICTURE = 24

function blockMeans(image: RgbImage): Float64Array {
  const sums = new Float64Array(GRID * GRID)
  const counts = new Float64Array(GRID * GRID)
  const {data, width, height} = image
  // Every other pixel each way: the means of 64 blocks need no more.
  for (let y = 0; y < height; y += 2) {
    const row = Math.min(GRID - 1, Math.floor((y * GRID) / height)) * GRID
    for (let x = 0; x < width; x += 2) {
      const i = 3 * (y * width + x)
      const block = row + Math.min(GRID - 1, Math.floor((x * GRID) / width))
      sums[block] += 0.299 * data[i] + 0.587 * data[i + 1] + 0.114 * data[i + 2]
      counts[block]++
    }
  }
  return sums.map((sum, k) => (counts[k] > 0 ? sum / counts[k] : 0))
}

/** Whether two frames of one size are other pictures (OTHER_PICTURE). */
export function otherPicture(a: RgbImage, b: RgbImage): boolean {
  const [ma, mb] = [blockMeans(a), blockMeans(b)]
  let difference = 0
  for (let k = 0; k < ma.length; k++) difference += Math.abs(ma[k] - mb[k])
  return difference / ma.length > OTHER_PICTURE
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
