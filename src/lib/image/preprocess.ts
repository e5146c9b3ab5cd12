import sharp from 'sharp'

import type {Preprocessing} from '../model/manifest-types.js'
import type {RgbImage} from './rgb.js'

/**
 * Size after resizing the shortest side to `shortest`, keeping the aspect ratio, rounded as transformers.js
 * (ImageProcessor.get_resize_output_image_size) does: scale, round to 2 decimals, floor. That is the
 * `int(shortest * long / short)` of the Python CLIPImageProcessor, minus its float error on exact sizes.
 */
export function resizedSize(width: number, height: number, shortest: number): {width: number; height: number} {
  const scale = Math.max(shortest / width, shortest / height)
  return {
    width: Math.floor(Number((width * scale).toFixed(2))),
    height: Math.floor(Number((height * scale).toFixed(2))),
  }
}

/** Offset of a centred crop, as HF center_crop places it: floored, and when the image is smaller, padded with the extra pixel after. */
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
 * in place). It mirrors transformers.js v3 in Node step by step, including its float32 rounding: the resize
 * is sharp's affine transform with the bicubic or bilinear interpolator, the call transformers.js makes for
 * PIL's resample codes 3 and 2. Pixels a crop larger than the resized image would need are 0 before
 * normalisation, like HF's padding.
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
  let {data, width, height} = img
  if (target.width !== width || target.height !== height) {
    const resized = await sharp(data, {raw: {width, height, channels: 3}})
      .affine([target.width / width, 0, 0, target.height / height], {interpolator: p.resample})
      .raw()
      .toBuffer({resolveWithObject: true})
    data = resized.data
    width = resized.info.width
    height = resized.info.height
  }

  const lut = normalisationTable(p)
  const {crop} = p
  const plane = crop * crop
  const left = cropOffset(width, crop)
  const top = cropOffset(height, crop)
  for (let y = 0; y < crop; y++) {
    const sy = top + y
    for (let x = 0; x < crop; x++) {
      const sx = left + x
      const inside = sy >= 0 && sy < height && sx >= 0 && sx < width
      const s = 3 * (sy * width + sx)
      const o = offset + y * crop + x
      out[o] = lut[inside ? data[s] : 0]
      out[o + plane] = lut[256 + (inside ? data[s + 1] : 0)]
      out[o + 2 * plane] = lut[512 + (inside ? data[s + 2] : 0)]
    }
  }
  return out
}

/** Normalised value of each 8-bit level per channel, rounded to float32 after each step as transformers.js does. */
function normalisationTable(p: Preprocessing): Float32Array {
  const lut = new Float32Array(3 * 256)
  for (let c = 0; c < 3; c++) {
    for (let v = 0; v < 256; v++) lut[256 * c + v] = (Math.fround(v * (1 / 255)) - p.mean[c]) / p.std[c]
  }
  return lut
}
