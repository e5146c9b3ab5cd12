/** Decoded pixels: interleaved RGB (3 channels, no alpha), row-major. */
export interface RgbImage {
  data: Buffer
  width: number
  height: number
  /** The file's pixels per pixel here, for an image decoded scaled down (see planDecode); absent: 1. */
  scale?: number
  /** The EXIF orientation (2-8) decoding applied to the stored pixels; absent when it applied none. */
  orientation?: number
}
