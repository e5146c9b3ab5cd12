/**
 * The shape every signal's preprocessing starts from. Preprocessing scales an image by its shortest side (CLIP
 * brings it to 224 px, keeping the aspect ratio), so the size of what it makes grows with the aspect ratio, not
 * with the decoded size: a 177-byte 100000x1 PNG would become a 22 400 000 x 224 image. Bounding the aspect
 * ratio of the frame bounds every image made from it, whatever the signal.
 */
import type {RgbImage} from './rgb.js'
import {crop, type Box} from './trim.js'

/**
 * Longest side over shortest side of what is scored. Wider than any common format (panoramas, 970x90 banners
 * are under 11:1); at it, CLIP's resized image is at most 224 x 4480 (3 MiB), and its centre crop, the only
 * part it reads, is the same.
 */
export const MAX_ASPECT_RATIO = 20

/** The centred box of at most MAX_ASPECT_RATIO : 1 inside a `width` x `height` image (the whole image when it fits). */
export function aspectBox(width: number, height: number, max = MAX_ASPECT_RATIO): Box {
  if (width > max * height) {
    const kept = Math.floor(max * height)
    return {left: Math.floor((width - kept) / 2), top: 0, width: kept, height}
  }
  if (height > max * width) {
    const kept = Math.floor(max * width)
    return {left: 0, top: Math.floor((height - kept) / 2), width, height: kept}
  }
  return {left: 0, top: 0, width, height}
}

/** A sliver (longer than MAX_ASPECT_RATIO : 1) cut to its centre part of that shape; any other image as it is. */
export function limitAspect(img: RgbImage, max = MAX_ASPECT_RATIO): RgbImage {
  return crop(img, aspectBox(img.width, img.height, max))
}
