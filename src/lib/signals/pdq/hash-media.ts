import {decodeImage, type ImageLimits} from '../../image/decode.js'
import type {RgbImage} from '../../image/rgb.js'
import {decodeFrames, type DecodeOptions} from '../../video/frames.js'
import {hashToHex} from './hash256.js'
import {pdqHash} from './pdq.js'

/** One PDQ hash of an input: a still, a frame of an animation (`frame`), or a sampled video frame (`time`). */
export interface MediaHash {
  hash: string
  quality: number
  /** Index among the frames hashed of an animated GIF or WebP, or the pages hashed of a TIFF. */
  frame?: number
  /** Seconds from the start of a video. */
  time?: number
}

/** The hash of an image file's pixels as every image path decodes them; one per frame (page) kept of an animation (a TIFF). */
export async function hashImage(bytes: Buffer, limits: ImageLimits): Promise<MediaHash[]> {
  return hashFrames(await decodeImage(bytes, limits))
}

/**
 * The hashes of an image's decoded frames (decodeImage's answer): decoding and hashing can then overlap. An image with
 * transparency is hashed as a light page shows it, as lists are made: its dark view is left out (scans match both), as
 * are the views of other readings of a malformed orientation tag (a scan matches their eight turns and mirrors anyway).
 */
export function hashFrames(decoded: RgbImage[]): MediaHash[] {
  const frames = decoded.filter((image) => !image.onBlack && image.primaryOrientation === undefined)
  return frames.map((image, frame) => {
    const {hash, quality} = pdqHash(image)
    return {hash: hashToHex(hash), quality, ...(frames.length > 1 ? {frame} : {})}
  })
}

/**
 * The hash of each frame sampled from a video at `fps` (vPDQ's frame hashes), as the video path samples
 * them (their shorter side at most 448 px, the longer at most 1 024), streamed; ffmpeg stops when the caller does.
 * A frame with transparency is hashed as a light page shows it, as images are.
 */
export async function* hashVideo(path: string, options: DecodeOptions): AsyncGenerator<MediaHash> {
  for await (const {time, image, interval, field} of decodeFrames(path, options)) {
    // vPDQ hashes the frame at each instant.
    if (image.onBlack || interval || field) continue
    const {hash, quality} = pdqHash(image)
    yield {hash: hashToHex(hash), quality, time}
  }
}
