import sharp, {type Sharp} from 'sharp'

/** Decoded pixels: interleaved RGB (3 channels, no alpha), row-major. */
export interface RgbImage {
  data: Buffer
  width: number
  height: number
  /** The file's pixels per pixel here, for an image decoded scaled down (see planDecode); absent: 1. */
  scale?: number
  /** The EXIF orientation (2-8) decoding applied to the stored pixels; absent when it applied none. */
  orientation?: number
  /**
   * A further view of a still whose malformed EXIF orientation tag viewers read differently (exif-orientation.ts),
   * turned as another reading says: the orientation (1-8) of the image's own view, in which its boxes are given.
   */
  primaryOrientation?: number
  /** For a frame of an animation: how long it is on screen, in milliseconds (displayDurations). */
  shown?: number
  /** Flattened onto black: the view a dark page gives of an image with transparency (its light view comes before). */
  onBlack?: true
  /**
   * For the frames of an animation that shows more other pictures than are scored (decode.ts otherFrames): some of
   * its pictures were left out, and a verdict on these frames does not cover them.
   */
  picturesLeftOut?: true
}

/** libvips on 8-bit RGB pixels: a sharp pipeline to resize, extend or transform them. */
export function libvipsOf(img: Pick<RgbImage, 'data' | 'width' | 'height'>): Sharp {
  return sharp(img.data, {raw: {width: img.width, height: img.height, channels: 3}})
}
