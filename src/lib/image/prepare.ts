/**
 * The CPU work on one image before inference, in one place: decode, trim borders, bound the aspect ratio,
 * preprocess. Every signal's input is made from the frames given here (CLIP's tensor here, the specialist's
 * views from `frames`), so the aspect bound covers every preprocessing, whatever the path. prepareImage decodes
 * every pixel (of an image within half the pixel limit; planDecode scales a larger one down to it); the engine
 * passes its signals' frame side to decodeImage, which decodes a large JPEG or WebP reduced.
 */
import type {Preprocessing} from '../model/manifest-types.js'
import type {RgbImage} from './rgb.js'
import {aspectBox} from './aspect.js'
import {decodeImage, type ImageLimits} from './decode.js'
import {preprocess} from './preprocess.js'
import {crop, findBars, findContentBox, type Box} from './trim.js'

export interface PrepareOptions {
  limits: ImageLimits
  /** The model's preprocessing (manifest `preprocess`); absent when no CLIP model is loaded (no tensors are made). */
  preprocess?: Preprocessing
  trimBorders: boolean
}

export interface PreparedFrames {
  /**
   * The decoded frames (one for a still, up to MAX_FRAMES for an animation), trimmed when asked, and cut to
   * their centre MAX_ASPECT_RATIO : 1 part when longer: what every signal's preprocessing starts from.
   */
  frames: RgbImage[]
  /** One preprocessed tensor per frame, 3 x crop x crop; none without `preprocess`. */
  tensors: Float32Array[]
}

/**
 * What every signal's preprocessing starts from, for one decoded frame: its borders trimmed (when asked), then a
 * sliver cut to its centre MAX_ASPECT_RATIO : 1 part. The aspect bound comes after trimming, which can leave a
 * sliver of a wide image.
 */
export function frameToScore(frame: RgbImage, trim: boolean): RgbImage {
  return crop(frame, scoredBox(frame, trim))
}

/** Where frameToScore's frame lies in the decoded one: what maps a box found in it back to the image's pixels. */
export function scoredBox(frame: RgbImage, trim: boolean): Box {
  return bounded(trim ? findContentBox(frame) : {left: 0, top: 0, width: frame.width, height: frame.height})
}

/**
 * frameToScore's frame with only the bars that end at a sharp edge cut (a picture on a canvas, letterboxing:
 * findBars), for a model that must see a plain background around a person as it was trained to.
 */
export function frameInBars(frame: RgbImage): RgbImage {
  return crop(frame, bounded(findBars(frame)))
}

/** The MAX_ASPECT_RATIO : 1 centre of `kept`. */
function bounded(kept: Box): Box {
  const centre = aspectBox(kept.width, kept.height)
  return {left: kept.left + centre.left, top: kept.top + centre.top, width: centre.width, height: centre.height}
}

/** Decodes, trims and preprocesses encoded image bytes: the path from a file or upload to the model's tensors. */
export async function prepareImage(data: Buffer, opts: PrepareOptions): Promise<PreparedFrames> {
  return prepareFrames(await decodeImage(data, opts.limits), opts)
}

/** frameToScore, then CLIP preprocessing, for frames already decoded (video frames, or prepareImage's). */
export async function prepareFrames(decoded: RgbImage[], opts: Omit<PrepareOptions, 'limits'>): Promise<PreparedFrames> {
  const frames = decoded.map((f) => frameToScore(f, opts.trimBorders))
  const config = opts.preprocess
  const tensors = config ? await Promise.all(frames.map((f) => preprocess(f, config))) : []
  return {frames, tensors}
}
