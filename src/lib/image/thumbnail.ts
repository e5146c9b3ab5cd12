import sharp from 'sharp'

import {displayDurations, longestOf} from './animation-frames.js'
import {reorient, shownOrientation, type ImageLimits} from './decode.js'
import {shownSize} from './orientation.js'

/** Longest side of a thumbnail: enough to see what was flagged and where its boxes are, at a few KB of JPEG. */
export const THUMBNAIL_SIDE = 240
const THUMBNAIL_QUALITY = 70

/**
 * What an image with transparency is drawn on: between the light and the dark page it is scored on (docs: Accepted
 * images), so that a picture drawn in white, or in black, in its alpha channel still shows to a reviewer.
 */
const TRANSPARENT_BACKGROUND = '#808080'

export interface Thumbnail {
  /** A small JPEG of the image upright (EXIF orientation applied; of an animation, the frame on screen longest). */
  jpeg: Buffer
  /** The whole image's size upright: the space that result boxes are given in. */
  width: number
  height: number
}

/**
 * A thumbnail of an image file's bytes, or undefined when they cannot be decoded within the limits. sharp
 * shrinks JPEG and WebP while decoding, so a large photo costs little more than its thumbnail.
 */
export async function thumbnail(bytes: Buffer, limits: ImageLimits): Promise<Thumbnail | undefined> {
  try {
    const options = {limitInputPixels: limits.maxPixels, failOn: 'error' as const, autoOrient: false}
    const meta = await sharp(bytes, options).metadata()
    // The frame on screen longest (the first on a tie): an animation may open on a blank frame.
    const page = (meta.pages ?? 1) > 1 && meta.delay ? longestOf(displayDurations(meta.delay)) : 0
    // Turned as the image is scored (a malformed tag as browsers read it), not as libvips reads it.
    const orientation = shownOrientation(bytes, meta)
    const jpeg = await reorient(sharp(bytes, {...options, page}), orientation)
      .resize({width: THUMBNAIL_SIDE, height: THUMBNAIL_SIDE, fit: 'inside', withoutEnlargement: true})
      .flatten({background: meta.hasAlpha ? TRANSPARENT_BACKGROUND : '#ffffff'})
      .jpeg({quality: THUMBNAIL_QUALITY})
      .toBuffer()
    return {jpeg, ...shownSize(orientation, meta.width, meta.height)}
  } catch {
    return undefined
  }
}
