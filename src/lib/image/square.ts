/**
 * A frame, or a window of it, resampled by libvips to a square of a fixed side with an antialiasing filter: the
 * canonical image a classifier's own resize then starts from, so that what the classifier sees depends on the
 * picture and not on the size it was uploaded at.
 */
import sharp from 'sharp'

import type {RgbImage} from './rgb.js'
import type {Box} from './trim.js'

export interface SquareOptions {
  /** The part of the frame to resample (whole pixels inside it); default: the whole frame. */
  window?: Box
  /** Keep the aspect ratio: the window fits inside the square, centred on black (a letterbox); default: squeezed. */
  letterbox?: boolean
}

/**
 * `side` x `side` RGB pixels of the frame (or its window), squeezed to the square or letterboxed in it. Lanczos-3
 * averages over the source pixels each output pixel covers when it shrinks, so a frame and a resized copy of it
 * come out alike; libvips runs it on its own threads, off the event loop.
 */
export async function resampleSquare(frame: RgbImage, side: number, options: SquareOptions = {}): Promise<RgbImage> {
  let image = sharp(frame.data, {raw: {width: frame.width, height: frame.height, channels: 3}})
  if (options.window) image = image.extract(options.window)
  image = options.letterbox
    ? image.resize(side, side, {fit: 'contain', background: {r: 0, g: 0, b: 0}, kernel: 'lanczos3'})
    : image.resize(side, side, {fit: 'fill', kernel: 'lanczos3'})
  const {data, info} = await image.raw().toBuffer({resolveWithObject: true})
  return {data, width: info.width, height: info.height}
}
