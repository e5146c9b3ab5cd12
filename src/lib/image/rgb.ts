/** Decoded pixels: interleaved RGB (3 channels, no alpha), row-major. */
export interface RgbImage {
  data: Buffer
  width: number
  height: number
  /** The file's pixels per pixel here, for an image decoded scaled down (see planDecode); absent: 1. */
  scale?: number
}
