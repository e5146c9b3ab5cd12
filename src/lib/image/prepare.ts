/**
 * The CPU work on one image before inference, in one place: decode, trim borders, preprocess. Every pixel is
 * decoded: decoding at a reduced scale (libvips' shrink-on-load) is faster but low-pass filters the image,
 * which the unfiltered bicubic resize of CLIP preprocessing (transformers.js's) does not, and moved image
 * embeddings further than we accept (bench/shrink.ts).
 */
import type {Preprocessing} from '../model/manifest-types.js'
import type {RgbImage} from '../types.js'
import {decodeImage, type ImageLimits} from './decode.js'
import {preprocess} from './preprocess.js'
import {crop, findContentBox} from './trim.js'

export interface PrepareOptions {
  limits: ImageLimits
  /** The model's preprocessing (manifest `preprocess`); absent when no CLIP model is loaded (no tensors are made). */
  preprocess?: Preprocessing
  trimBorders: boolean
}

export interface PreparedFrames {
  /** The decoded frames (one for a still, up to MAX_FRAMES for an animation), trimmed when asked. */
  frames: RgbImage[]
  /** One preprocessed tensor per frame, 3 x crop x crop; none without `preprocess`. */
  tensors: Float32Array[]
  /** Per frame, where the kept part starts in the decoded frame: what maps a box found in it back (0, 0 untrimmed). */
  offsets: {left: number; top: number}[]
}

/** Decodes, trims and preprocesses encoded image bytes: the path from a file or upload to the model's tensors. */
export async function prepareImage(data: Buffer, opts: PrepareOptions): Promise<PreparedFrames> {
  return prepareFrames(await decodeImage(data, opts.limits), opts)
}

/** Trims (when asked) and preprocesses frames already decoded (video frames, or prepareImage's). */
export async function prepareFrames(decoded: RgbImage[], opts: Omit<PrepareOptions, 'limits'>): Promise<PreparedFrames> {
  const boxes = decoded.map((f) => (opts.trimBorders ? findContentBox(f) : {left: 0, top: 0, width: f.width, height: f.height}))
  const frames = decoded.map((f, i) => crop(f, boxes[i]))
  const config = opts.preprocess
  const tensors = config ? await Promise.all(frames.map((f) => preprocess(f, config))) : []
  return {frames, tensors, offsets: boxes.map((b) => ({left: b.left, top: b.top}))}
}
