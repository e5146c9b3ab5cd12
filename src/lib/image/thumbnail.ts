import sharp from 'sharp'

import type {ImageLimits} from './decode.js'

/** Longest side of a thumbnail: enough to see what was flagged and where its boxes are, at a few KB of JPEG. */
export const THUMBNAIL_SIDE = 240
const THUMBNAIL_QUALITY = 70

export interface Thumbnail {
  /** A small JPEG of the image upright (EXIF orientation applied; an animation's first frame). */
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
    const image = sharp(bytes, {limitInputPixels: limits.maxPixels, failOn: 'error', autoOrient: true})
    const meta = await image.metadata()
    const jpeg = await image
      .resize({width: THUMBNAIL_SIDE, height: THUMBNAIL_SIDE, fit: 'inside', withoutEnlargement: true})
      .flatten({background: '#ffffff'})
      .jpeg({quality: THUMBNAIL_QUALITY})
      .toBuffer()
    return {jpeg, width: meta.autoOrient.width, height: meta.autoOrient.height}
  } catch {
    return undefined
  }
}
