import type {Preprocessing} from '../model/manifest-types.js'
import {enlarge} from './enlarge.js'
import {libvipsOf, type RgbImage} from './rgb.js'
import type {Box} from './trim.js'

/**
 * Size after resizing the shortest side to `shortest`, keeping the aspect ratio, rounded as transformers.js
 * (ImageProcessor.get_resize_output_image_size) does: scale, round to 2 decimals, floor. That is the
 * `int(shortest * long / short)` of torchvision's Resize (OpenAI CLIP's) and of the Python CLIPImageProcessor,
 * minus its float error on exact sizes.
 */
export function resizedSize(width: number, height: number, shortest: number): {width: number; height: number} {
  const scale = Math.max(shortest / width, shortest / height)
  return {
    width: Math.floor(Number((width * scale).toFixed(2))),
    height: Math.floor(Number((height * scale).toFixed(2))),
  }
}

/**
 * Offset of a centred crop, as HF center_crop places it: floored, and when the image is smaller, padded with the
 * extra pixel after. (torchvision's CenterCrop, in OpenAI CLIP's pipeline, rounds the half up: one pixel further
 * when the excess is odd.)
 */
export function cropOffset(size: number, crop: number): number {
  return size >= crop ? Math.floor((size - crop) / 2) : -Math.floor((crop - size) / 2)
}

/** Floats one preprocessed image takes: 3 x crop x crop. */
export function tensorSize(p: Preprocessing): number {
  return 3 * p.crop * p.crop
}

/**
 * CLIP preprocessing: resize the shortest side to `p.resize`, centre-crop `p.crop`, rescale by 1/255,
 * normalise with the mean and std, and write CHW float32 into `out` at `offset` (so a batch tensor is filled
 * in place). It follows how OpenAI trained and evaluates CLIP: `_transform` in openai/CLIP `clip/clip.py` is
 * torchvision's Resize(n_px, BICUBIC) and CenterCrop(n_px) on a PIL image, so the resize is Pillow's
 * `Image.resize` with BICUBIC (Hugging Face's Python CLIPImageProcessor resizes with Pillow too). Pillow resamples
 * with a separable convolution whose kernel (Catmull-Rom, a = -0.5) widens with the reduction
 * (`precompute_coeffs` in Pillow `src/libImaging/Resample.c`): it filters before it samples, so fine detail
 * averages out instead of aliasing. libvips does the same (see `resized`). Pixels a crop larger than the resized
 * image would need are 0 before normalisation, like Hugging Face's padding.
 */
export async function preprocess(
  img: RgbImage,
  p: Preprocessing,
  out: Float32Array = new Float32Array(tensorSize(p)),
  offset = 0,
): Promise<Float32Array> {
  if (offset < 0 || offset + tensorSize(p) > out.length) {
    throw new RangeError(`preprocess: ${tensorSize(p)} floats at offset ${offset} do not fit in ${out.length}`)
  }
  const target = resizedSize(img.width, img.height, p.resize)
  const {crop} = p
  const box = {left: cropOffset(target.width, crop), top: cropOffset(target.height, crop), width: crop, height: crop}
  const lut = normalisationTable(p)
  if (box.left >= 0 && box.top >= 0) {
    writeCrop(await resized(img, target, p.resample, box), crop, lut, out, offset)
  } else {
    writePadded(await resized(img, target, p.resample), target, box, lut, out, offset)
  }
  return out
}

/** RGB pixels in rows of `stride` pixels, the part read starting at pixel `start`. */
interface Window {
  data: Buffer
  stride: number
  start: number
}

/** The normalised CHW planes of a crop x crop window lying inside its image: one pass, no bounds to check. */
function writeCrop({data, stride, start}: Window, crop: number, lut: Float32Array, out: Float32Array, offset: number): void {
  const plane = crop * crop
  for (let y = 0; y < crop; y++) {
    let s = 3 * (start + y * stride)
    const end = offset + (y + 1) * crop
    for (let o = offset + y * crop; o < end; o++, s += 3) {
      out[o] = lut[data[s]]
      out[o + plane] = lut[256 + data[s + 1]]
      out[o + 2 * plane] = lut[512 + data[s + 2]]
    }
  }
}

/** The crop of an image smaller than it on a side: the pixels outside it are 0 before normalisation. */
function writePadded({data, stride}: Window, size: {width: number; height: number}, box: Box, lut: Float32Array, out: Float32Array, offset: number): void {
  const crop = box.width
  const plane = crop * crop
  for (let y = 0; y < crop; y++) {
    const sy = box.top + y
    for (let x = 0; x < crop; x++) {
      const sx = box.left + x
      const inside = sy >= 0 && sy < size.height && sx >= 0 && sx < size.width
      const s = 3 * (sy * stride + sx)
      const o = offset + y * crop + x
      out[o] = lut[inside ? data[s] : 0]
      out[o + plane] = lut[256 + (inside ? data[s + 1] : 0)]
      out[o + 2 * plane] = lut[512 + (inside ? data[s + 2] : 0)]
    }
  }
}

/**
 * The largest bicubic reduction one libvips resize is asked for. From a factor of 4, libvips' resize
 * (`vips_resize`, whose `gap` of 2 sharp does not expose) first shrinks by an integer factor with a box filter and
 * convolves only the rest of the way; Pillow convolves the whole way. Two or more Catmull-Rom convolutions of a
 * smaller factor each stay closer to Pillow's one: 0.21 levels off on average in two steps against 0.61 in one on
 * the 3072x1536 mosaic of test/lib/image/clip-pillow.test.ts (a factor of 6.9), 0.25 against 1.3 on a 3584x2240
 * zone plate with noise (a factor of 10). For the triangle kernel (bilinear) steps were no better (the test's zone
 * plate 1.29 levels off against 0.83, its mosaic 0.51 against 0.71): it is resized in one step.
 */
const STEP = 3.9

/** Copies of the edge pixels around an image libvips enlarges (bilinear), beyond the pixels its interpolator reads. */
const PAD = 2

/**
 * The image at `target` size, as Pillow's resize makes it, by libvips, and within it the window `box` (inside
 * it) that is read: `start` is the box's first pixel in rows of `stride` pixels. A reduction is libvips' resize
 * with the Catmull-Rom (`cubic`) or triangle (`linear`) kernel, a convolution whose support scales with the
 * factor, as Pillow's BICUBIC and BILINEAR (bicubic in steps of less than STEP); its last step extracts the box
 * in the same libvips pipeline, which then computes the box's pixels only (each output pixel depends on its
 * position alone, so they are those of the whole resized image). An enlargement is the bicubic or bilinear
 * interpolator at pixel centres (output x at input (x + 0.5) / scale - 0.5, what Pillow's kernel computes when
 * it enlarges), the edge pixels repeated beyond the image; libvips' own resize would place the samples half an
 * output pixel off. An image already at `target` is read where it is.
 */
async function resized(img: RgbImage, target: {width: number; height: number}, resample: Preprocessing['resample'], box?: Box): Promise<Window> {
  const {data, width, height} = img
  const at = (stride: number) => (box ? box.top * stride + box.left : 0)
  if (target.width === width && target.height === height) return {data, stride: width, start: at(width)}
  if (target.width >= width && target.height >= height) return enlarged(img, target, resample, at)
  const kernel = resample === 'bicubic' ? 'cubic' : 'linear'
  const factor = Math.max(width / target.width, height / target.height)
  const steps = kernel === 'cubic' ? Math.max(1, Math.ceil(Math.log(factor) / Math.log(STEP))) : 1
  let current = {data, width, height}
  for (let i = 1; i < steps; i++) {
    const size = {width: Math.round(width / factor ** (i / steps)), height: Math.round(height / factor ** (i / steps))}
    const next = await libvipsOf(current).resize(size.width, size.height, {kernel, fit: 'fill'}).raw().toBuffer()
    current = {data: next, ...size}
  }
  const last = libvipsOf(current).resize(target.width, target.height, {kernel, fit: 'fill'})
  return {data: await (box ? last.extract(box) : last).raw().toBuffer(), stride: box ? box.width : target.width, start: 0}
}

/**
 * resized's enlargement: the interpolator at pixel centres, the edge pixels repeated. Bicubic is computed by
 * enlarge.ts, libvips' bicubic interpolator's arithmetic bit for bit at a fifth of the time of its affine
 * transform (about 2.5 ms for a 128-pixel thumbnail); bilinear, and the rare sizes enlarge.ts leaves to libvips,
 * are libvips' affine transform, on the image padded with copies of its edges.
 */
async function enlarged(img: RgbImage, target: {width: number; height: number}, resample: Preprocessing['resample'], at: (stride: number) => number): Promise<Window> {
  const computed = resample === 'bicubic' ? enlarge(img, target.width, target.height, {sampling: 'centres'}) : undefined
  if (computed) return {data: computed.data, stride: target.width, start: at(target.width)}
  const {data, width, height} = img
  const padded = await libvipsOf(img).extend({top: PAD, bottom: PAD, left: PAD, right: PAD, extendWith: 'copy'}).raw().toBuffer()
  const out = await libvipsOf({data: padded, width: width + 2 * PAD, height: height + 2 * PAD})
    .affine([target.width / width, 0, 0, target.height / height], {interpolator: resample, idx: 0.5 - PAD, idy: 0.5 - PAD, odx: -0.5, ody: -0.5})
    .raw()
    .toBuffer({resolveWithObject: true})
  return {data: out.data, stride: out.info.width, start: at(out.info.width)}
}

/** Normalised value of each 8-bit level per channel, rounded to float32 after each step (as transformers.js does it). */
function normalisationTable(p: Preprocessing): Float32Array {
  const lut = new Float32Array(3 * 256)
  for (let c = 0; c < 3; c++) {
    for (let v = 0; v < 256; v++) lut[256 * c + v] = (Math.fround(v * (1 / 255)) - p.mean[c]) / p.std[c]
  }
  return lut
}
