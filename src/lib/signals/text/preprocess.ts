/**
 * The two inputs of the OCR models, as PaddleOCR prepares them. Both models were trained on OpenCV's BGR
 * channel order, so the tensors hold B, G, R planes.
 */
import {enlarge} from '../../image/enlarge.js'
import {libvipsOf, type RgbImage} from '../../image/rgb.js'
import type {RotatedBox} from './boxes.js'

/** The detector's normalisation (ImageNet's mean and deviation, applied in BGR order as PaddleOCR does). */
const DET_MEAN = [0.485, 0.456, 0.406]
const DET_STD = [0.229, 0.224, 0.225]

/** The recogniser's input height. */
export const REC_HEIGHT = 48

export interface DetectorInput {
  tensor: Float32Array
  width: number
  height: number
  /** Original pixels per map pixel, along x and y. */
  scaleX: number
  scaleY: number
}

/** A small image is enlarged at most this much for the detector, which misses text only a few pixels high. */
const MAX_UPSCALE = 2

/**
 * Both sides a multiple of 32 (the detector's stride), the longest `maxSide` (a small image enlarged at most
 * MAX_UPSCALE times), aspect kept roughly.
 */
export function detectorSize(width: number, height: number, maxSide: number): {width: number; height: number} {
  const ratio = Math.min(MAX_UPSCALE, maxSide / Math.max(width, height))
  const round = (v: number) => Math.max(32, Math.round((v * ratio) / 32) * 32)
  return {width: round(width), height: round(height)}
}

/**
 * The detector's pixels: the image resized by libvips (Lanczos-3). An image the detector enlarges (most photos
 * under its 736 pixels) is enlarged by enlarge.ts instead, libvips' own pixels in a fraction of the time (about 2
 * against 10 ms for 500x375 to 736x544), unless enlarge.ts leaves its size to libvips.
 */
async function detectorPixels(img: RgbImage, size: {width: number; height: number}): Promise<Buffer> {
  const enlarged = size.width >= img.width && size.height >= img.height ? enlarge(img, size.width, size.height) : undefined
  if (enlarged) return enlarged.data
  return libvipsOf(img).resize(size.width, size.height, {fit: 'fill'}).raw().toBuffer()
}

export async function detectorInput(img: RgbImage, maxSide: number): Promise<DetectorInput> {
  const size = detectorSize(img.width, img.height, maxSide)
  const pixels = await detectorPixels(img, size)
  const plane = size.width * size.height
  const tensor = new Float32Array(3 * plane)
  for (let c = 0; c < 3; c++) {
    // The 256 normalised values looked up, one plane at a time: a fifth of the time of computing each pixel.
    const table = Float32Array.from({length: 256}, (_, v) => (v / 255 - DET_MEAN[c]) / DET_STD[c])
    const out = tensor.subarray(c * plane, (c + 1) * plane)
    // Plane c holds BGR channel c, i.e. RGB channel 2 - c.
    for (let i = 0, j = 2 - c; i < plane; i++, j += 3) out[i] = table[pixels[j]]
  }
  return {tensor, ...size, scaleX: img.width / size.width, scaleY: img.height / size.height}
}

/** The width a line is read at: its box scaled to height REC_HEIGHT, at most `maxWidth`. */
export function lineWidth(box: RotatedBox, maxWidth: number): number {
  return Math.min(maxWidth, Math.max(REC_HEIGHT / 4, Math.ceil((REC_HEIGHT * box.halfW) / Math.max(1e-6, box.halfH))))
}

/**
 * Fills one line of a recogniser batch ([n, 3, 48, batchWidth], BGR, (x/255 - 0.5)/0.5) by sampling the
 * rotated box from the original image bilinearly: cropping, straightening and resizing in one pass. Columns
 * past `width` stay 0, PaddleOCR's padding. When the box shrinks a lot, each sample averages a few source
 * pixels along each axis so that thin strokes are not skipped.
 */
export function sampleLine(img: RgbImage, box: RotatedBox, out: Float32Array, index: number, width: number, batchWidth: number): void {
  const plane = REC_HEIGHT * batchWidth
  const base = index * 3 * plane
  const vx = -box.uy
  const vy = box.ux
  const stepU = (2 * box.halfW) / width
  const stepV = (2 * box.halfH) / REC_HEIGHT
  const taps = Math.min(4, Math.max(1, Math.round(Math.max(stepU, stepV))))
  const {data, width: W, height: H} = img
  const px = [0, 0, 0]
  for (let y = 0; y < REC_HEIGHT; y++) {
    for (let x = 0; x < width; x++) {
      px[0] = px[1] = px[2] = 0
      for (let ty = 0; ty < taps; ty++) {
        for (let tx = 0; tx < taps; tx++) {
          const u = -box.halfW + (x + (tx + 0.5) / taps) * stepU
          const v = -box.halfH + (y + (ty + 0.5) / taps) * stepV
          const sx = Math.min(W - 1, Math.max(0, box.cx + u * box.ux + v * vx - 0.5))
          const sy = Math.min(H - 1, Math.max(0, box.cy + u * box.uy + v * vy - 0.5))
          const x0 = Math.floor(sx)
          const y0 = Math.floor(sy)
          const x1 = Math.min(W - 1, x0 + 1)
          const y1 = Math.min(H - 1, y0 + 1)
          const fx = sx - x0
          const fy = sy - y0
          for (let c = 0; c < 3; c++) {
            const a = data[(y0 * W + x0) * 3 + c] * (1 - fx) + data[(y0 * W + x1) * 3 + c] * fx
            const b = data[(y1 * W + x0) * 3 + c] * (1 - fx) + data[(y1 * W + x1) * 3 + c] * fx
            px[c] += a * (1 - fy) + b * fy
          }
        }
      }
      const n = taps * taps
      for (let c = 0; c < 3; c++) out[base + c * plane + y * batchWidth + x] = (px[2 - c] / n / 255 - 0.5) / 0.5
    }
  }
}
